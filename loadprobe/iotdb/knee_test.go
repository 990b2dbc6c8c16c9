package iotdb

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/hostprep/hostprep/profiles"
)

// steps builds synthetic steps from (workers, TPS, p95 ms) triples.
func steps(v ...[3]float64) []Step {
	var out []Step
	for _, x := range v {
		out = append(out, Step{Workers: int(x[0]), TPS: x[1], OK: int64(x[1]), Ops: int64(x[1]), Latency: latency.Summary{P95: x[2]}})
	}
	return out
}

func TestFindKnee(t *testing.T) {
	cases := []struct {
		name        string
		steps       []Step
		peak, knee  int
		readingHint string
	}{
		{
			// The reference test: throughput peaks at 150 users and falls after.
			name:  "reference shape",
			steps: steps([3]float64{50, 1000, 20}, [3]float64{100, 1800, 25}, [3]float64{150, 2100, 40}, [3]float64{200, 2050, 90}, [3]float64{250, 1900, 200}),
			peak:  150, knee: 200, readingHint: "throughput peaks at 150 workers",
		},
		{
			name:  "still growing",
			steps: steps([3]float64{10, 100, 5}, [3]float64{20, 190, 6}, [3]float64{30, 270, 8}),
			peak:  30, knee: 0, readingHint: "still grows at the last step",
		},
		{
			// TPS flat but p95 only +40%: not a knee by the rule.
			name:  "flat without latency jump",
			steps: steps([3]float64{10, 100, 10}, [3]float64{20, 102, 14}),
			peak:  20, knee: 0, readingHint: "still grows",
		},
		{
			// TPS +4.9% and p95 +51%: a knee (both thresholds strict).
			name:  "just over the rule",
			steps: steps([3]float64{10, 1000, 10}, [3]float64{20, 1049, 15.1}),
			peak:  20, knee: 20, readingHint: "the knee is at 20 workers",
		},
		{
			// TPS +5% exactly is growth enough.
			name:  "exactly five percent",
			steps: steps([3]float64{10, 1000, 10}, [3]float64{20, 1050, 30}),
			peak:  20, knee: 0,
		},
		{
			// The first step matching the rule is the knee, not a later one.
			name:  "first match wins",
			steps: steps([3]float64{1, 100, 1}, [3]float64{2, 101, 2}, [3]float64{4, 99, 8}),
			peak:  2, knee: 2,
		},
		{
			name:  "falls without jump",
			steps: steps([3]float64{10, 500, 10}, [3]float64{20, 400, 11}),
			peak:  10, knee: 0, readingHint: "falls beyond it",
		},
		{
			name:  "knee before a later peak",
			steps: steps([3]float64{5, 2200, 5}, [3]float64{10, 2350, 11}, [3]float64{20, 1880, 30}, [3]float64{40, 2530, 48}),
			peak:  40, knee: 20, readingHint: "yet throughput peaks later at 40 workers",
		},
		{
			// The knee step is also the highest (by a hair).
			name:  "knee at the peak",
			steps: steps([3]float64{50, 615, 174}, [3]float64{100, 801, 206}, [3]float64{200, 837, 447}),
			peak:  200, knee: 200, readingHint: "tops out at 200 workers",
		},
		{name: "one step", steps: steps([3]float64{5, 50, 3}), peak: 5, readingHint: "add steps"},
		{name: "no success", steps: steps([3]float64{5, 0, 0}, [3]float64{10, 0, 0}), peak: 5, readingHint: "no operation succeeded"},
		{name: "none", steps: nil, readingHint: "no steps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k := FindKnee(c.steps, 1)
			if k.PeakWorkers != c.peak || k.Workers != c.knee {
				t.Errorf("peak %d knee %d, want peak %d knee %d (%s)", k.PeakWorkers, k.Workers, c.peak, c.knee, k.Reading)
			}
			if !strings.Contains(k.Reading, c.readingHint) {
				t.Errorf("reading %q lacks %q", k.Reading, c.readingHint)
			}
		})
	}
}

func TestChecks(t *testing.T) {
	low, tight := 0.05, 0.001
	st := steps([3]float64{10, 1000, 20}, [3]float64{20, 1500, 40})
	st[1].Errors, st[1].Ops, st[1].ErrorRate, st[1].ErrorsByClass = 10, 1510, 10.0/1510, map[string]int64{ClassWaitTimeout: 10}

	byID := func(cs []verdict.Check) map[string]verdict.Check {
		m := map[string]verdict.Check{}
		for _, c := range cs {
			m[c.ID] = c
		}
		return m
	}
	// Within every threshold at the last step.
	cfg := &Config{Steps: []int{10, 20}, PoolSize: 16, Thresholds: Thresholds{MaxErrorRate: &low, P95: 50 * time.Millisecond, MinTPS: 1400},
		SettingNames: probeFlags(&Config{})}
	got := byID(Checks(cfg, st))
	for _, id := range []string{CheckErrorRate, CheckP95, CheckMinTPS} {
		if got[id].Status != verdict.Pass {
			t.Errorf("%s: %+v, want pass", id, got[id])
		}
	}
	// Target step 10 misses the TPS floor; error rate above 0.1%.
	cfg.Thresholds = Thresholds{MaxErrorRate: &tight, P95: 10 * time.Millisecond, MinTPS: 1400, TargetStep: 10}
	got = byID(Checks(cfg, st))
	if got[CheckErrorRate].Status != verdict.Fail || !strings.Contains(got[CheckErrorRate].Remedy, "--pool-size") {
		t.Errorf("error rate: %+v, want fail with a --pool-size remedy", got[CheckErrorRate])
	}
	if got[CheckP95].Status != verdict.Fail || !strings.Contains(got[CheckP95].Observed, "20.0 ms at 10 workers") {
		t.Errorf("p95: %+v, want fail at 10 workers", got[CheckP95])
	}
	if got[CheckMinTPS].Status != verdict.Fail {
		t.Errorf("min tps: %+v, want fail", got[CheckMinTPS])
	}
	// No thresholds: p95 and TPS are skipped; the error rate is judged at
	// DefaultMaxErrorRate (step 20 failed 0.66% of its operations).
	cfg.Thresholds = Thresholds{}
	got = byID(Checks(cfg, st))
	if got[CheckErrorRate].Status != verdict.Pass || got[CheckErrorRate].Expected != "<= 1.00% in every step" || got[CheckP95].Status != verdict.Skip || got[CheckMinTPS].Status != verdict.Skip {
		t.Errorf("no thresholds: %+v", got)
	}
	st[1].Errors, st[1].ErrorRate = 30, 30.0/1510
	if got = byID(Checks(cfg, st)); got[CheckErrorRate].Status != verdict.Fail {
		t.Errorf("2%% errors and no threshold: %+v, want fail at the default 1%%", got[CheckErrorRate])
	}
}

func TestConfigFromProfile(t *testing.T) {
	if c := ConfigFromProfile(nil); c.Host != "" || len(c.Steps) != 0 {
		t.Errorf("nil profile: %+v, want the zero Config", c)
	}
	rate := 0.02
	p := &profiles.IoTDBProbe{Host: "10.0.0.5", Port: 6668, User: "probe", Scenario: "batch", Steps: []int{50, 100},
		StepDuration: 10 * time.Second, PoolSize: 120, WaitTimeout: 3 * time.Second, FetchSize: 500,
		Thresholds: profiles.IoTDBThresholds{MaxErrorRate: &rate, P95: 80 * time.Millisecond, TargetStep: 100, MinTPS: 900}}
	c := ConfigFromProfile(p)
	rate = 0.5 // the Config must not alias the profile
	if c.Host != "10.0.0.5" || c.Port != 6668 || c.User != "probe" || c.Scenario != ScenarioBatch || len(c.Steps) != 2 ||
		c.StepDuration != 10*time.Second || c.PoolSize != 120 || c.WaitTimeout != 3*time.Second || c.FetchSize != 500 ||
		c.Thresholds.MaxErrorRate == nil || *c.Thresholds.MaxErrorRate != 0.02 || c.Thresholds.P95 != 80*time.Millisecond ||
		c.Thresholds.TargetStep != 100 || c.Thresholds.MinTPS != 900 || c.Password != "" {
		t.Errorf("ConfigFromProfile = %+v", c)
	}
	d := c.withDefaults()
	if err := d.validate(); err != nil {
		t.Errorf("profile config does not validate: %v", err)
	}
}

// Pool-exhaustion advice names concrete larger values, never the ones
// given (the tester saw "or --wait-timeout 1ms" with --wait-timeout 1ms).
// A pool smaller than the workers is fixed by the pool size alone: the
// remedy does not offer a longer wait, which only hides the queue (the
// tester saw "let workers wait longer with --wait-timeout 1s" next to the
// --wait-timeout suggestion saying just that).
func TestWaitTimeoutRemedySuggestsLargerValues(t *testing.T) {
	zero := 0.0
	st := Step{Workers: 16, Ops: 100, OK: 10, Errors: 90, ErrorRate: 0.9, ErrorsByClass: map[string]int64{ClassWaitTimeout: 90}}
	for _, tc := range []struct {
		pool       int
		wait       time.Duration
		want, bans []string
	}{
		{1, time.Millisecond, []string{"--pool-size 16", "only hides the queue"}, []string{"--wait-timeout 1ms", "--wait-timeout 1s", "wait longer"}},
		{4, 5 * time.Second, []string{"--pool-size 16", "only hides the queue"}, []string{"--wait-timeout 5s", "--wait-timeout 50s", "wait longer"}},
		{32, 200 * time.Millisecond, []string{"--wait-timeout 2s", "covers the 16 workers"}, []string{"--pool-size", "--wait-timeout 200ms"}},
	} {
		cfg := Config{Steps: []int{16}, PoolSize: tc.pool, WaitTimeout: tc.wait, Thresholds: Thresholds{MaxErrorRate: &zero}, SettingNames: probeFlags(&Config{})}
		r := Checks(&cfg, []Step{st})[0].Remedy
		for _, w := range tc.want {
			if !strings.Contains(r, w) {
				t.Errorf("pool %d wait %v: remedy %q lacks %q", tc.pool, tc.wait, r, w)
			}
		}
		for _, b := range tc.bans {
			if strings.Contains(r, b+" ") || strings.HasSuffix(r, b) {
				t.Errorf("pool %d wait %v: remedy %q suggests the current %q", tc.pool, tc.wait, r, b)
			}
		}
	}
}

// The error-rate remedy and the --wait-timeout suggestion of one run give
// the same advice: with fewer sessions than workers both raise the pool
// (a longer wait only hides the queue); with a pool that covers the
// workers, neither calls a longer wait useless while the other proposes it.
func TestWaitTimeoutAdviceAgrees(t *testing.T) {
	zero := 0.0
	for _, tc := range []struct{ pool, workers int }{{1, 2}, {1, 16}, {4, 16}, {32, 16}} {
		st := Step{Workers: tc.workers, Ops: 100, OK: 10, Errors: 90, ErrorRate: 0.9, ErrorsByClass: map[string]int64{ClassWaitTimeout: 90}}
		cfg := Config{Steps: []int{tc.workers}, PoolSize: tc.pool, WaitTimeout: time.Millisecond, Thresholds: Thresholds{MaxErrorRate: &zero}, SettingNames: probeFlags(&Config{})}
		remedy := Checks(&cfg, []Step{st})[0].Remedy
		var fix string
		for _, s := range Suggest(&cfg, []Step{st}, "2.0.10") {
			if s.Setting == "--wait-timeout" {
				fix = s.Fix
			}
		}
		if fix == "" {
			t.Fatalf("pool %d, %d workers: no --wait-timeout suggestion", tc.pool, tc.workers)
		}
		hides := strings.Contains(fix, "only hides the queue")
		longer := strings.Contains(remedy, "wait longer") || strings.Contains(remedy, "--wait-timeout 1s")
		if hides && longer || (tc.pool < tc.workers) != hides {
			t.Errorf("pool %d, %d workers: the remedy %q and the --wait-timeout suggestion %q disagree", tc.pool, tc.workers, remedy, fix)
		}
		if tc.pool < tc.workers && !strings.Contains(remedy, fmt.Sprintf("--pool-size %d", tc.workers)) {
			t.Errorf("pool %d, %d workers: remedy %q does not raise the pool to the workers", tc.pool, tc.workers, remedy)
		}
	}
}
