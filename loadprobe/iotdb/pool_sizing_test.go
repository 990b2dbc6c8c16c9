package iotdb

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/profiles"
	"gopkg.in/yaml.v3"
)

// poolCase is shared/cases/probe/iotdb-pool-smaller-than-workers.yaml
// (copied to testdata/cases): a probe section and what must be reported.
type poolCase struct {
	Probe struct {
		IoTDB profiles.IoTDBProbe `yaml:"iotdb"`
	} `yaml:"probe"`
	Expect map[string]string `yaml:"expect"`
}

// The field case: a SessionPool of 8 sessions driven by up to 40 writers.
// Throughput flattens because writers queue for a session; the report must
// say so (pool use near 100%, the pool as the limit, the pool-size fix),
// validation must warn, and no step beyond the pool may be put on the
// server.
func TestPoolSmallerThanWorkersIsAttributedToThePool(t *testing.T) {
	raw, err := os.ReadFile("testdata/cases/iotdb-pool-smaller-than-workers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c poolCase
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("case file: %v", err)
	}
	real := realConfig(t, ScenarioWrite)
	cfg := ConfigFromProfile(&c.Probe.IoTDB)
	cfg.Host, cfg.Port, cfg.Password = real.Host, real.Port, real.Password
	cfg.StepDuration, cfg.Warmup = 1500*time.Millisecond, 500*time.Millisecond
	if cfg.PoolSize != 8 || len(cfg.Steps) != 3 || cfg.Steps[2] != 40 {
		t.Fatalf("case config %+v: want pool 8, steps 8,16,40", cfg)
	}

	warn := strings.Join(cfg.Warnings(), " ")
	if !strings.Contains(warn, "smaller than the steps at 16, 40 workers") || !strings.Contains(warn, "wait for a session") {
		t.Errorf("warnings %q: want the steps above the pool size named (%s)", warn, c.Expect["validate"])
	}

	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	// On a test host that starves the probe of CPU (other builds and tests
	// running), the client is the honest answer for a step; the server
	// never is. TestStepBoundRules checks the pool rule on recorded steps.
	starved := func(s Step) bool {
		return s.Client.SchedLagMeanMs >= BoundClientLagMs || s.Client.CPUCores >= BoundClientCPU*float64(s.Client.Cores)
	}
	for _, s := range res.Steps {
		if s.Workers > cfg.PoolSize {
			if s.Bound == BoundClient && starved(s) {
				t.Logf("%d workers: the test host starved the probe (%s): bound client", s.Workers, s.BoundReason)
				continue
			}
			if s.Bound != BoundPool {
				t.Errorf("%d workers on 8 sessions: bound %q (%s), want pool", s.Workers, s.Bound, s.BoundReason)
			}
			// The pool was full (its mean use can read lower on a busy
			// client host: a session handed to a waiting worker counts as
			// in use only once that worker runs).
			if s.Pool.MaxUtil != 1 || s.Pool.WaitingShare < BoundPoolQueued {
				t.Errorf("%d workers on 8 sessions: pool use max %.0f%%, waiters in %.0f%% of samples; want a full pool and a queue", s.Workers, 100*s.Pool.MaxUtil, 100*s.Pool.WaitingShare)
			}
		}
		if s.Bound == BoundServer {
			t.Errorf("%d workers: bound server (%s): %s", s.Workers, s.BoundReason, c.Expect["never"])
		}
	}
	switch {
	case res.Knee.Bound == BoundClient && strings.Contains(res.Knee.Reading, "limited by the client"):
		t.Logf("knee attributed to the starved client: %s", res.Knee.Reading)
	case res.Knee.Bound != BoundPool || !strings.Contains(res.Knee.Reading, "limited by the pool") ||
		!strings.Contains(res.Knee.Reading, "probe.iotdb.pool_size 40 or more") || !strings.Contains(res.Knee.Reading, "1.5 x the writers: 60"):
		t.Errorf("knee %+v: want it attributed to the pool with the fix (%s)", res.Knee, c.Expect["report"])
	}
	found := false
	for _, g := range res.Suggestions {
		found = found || g.Setting == "probe.iotdb.pool_size" && strings.Contains(g.Fix, "probe.iotdb.pool_size 40")
	}
	if !found {
		t.Errorf("suggestions %+v: want one for probe.iotdb.pool_size (the case is a profile: its settings are named by their keys)", res.Suggestions)
	}
	if !strings.Contains(strings.Join(res.Notes, " "), "smaller than the steps") {
		t.Errorf("notes %v: want the pool-size warning in the result", res.Notes)
	}
}
