package iotdb

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
)

// A run cancelled in its last (here: only) step must not read as a pass:
// exit-3 error, Interrupted, the step marked partial, verdict fail.
func TestInterruptInLastStepIsNotAPass(t *testing.T) {
	cfg := realConfig(t, ScenarioWrite)
	cfg.Steps, cfg.StepDuration = []int{1}, 20*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2500*time.Millisecond, cancel)
	t0 := time.Now()
	res, err := Run(ctx, cfg)
	if took := time.Since(t0); took > 12*time.Second {
		t.Errorf("Run took %v after cancel at 2.5s", took)
	}
	if exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Run: %v (code %d), want exit 3 'interrupted'", err, exitcode.Code(err))
	}
	if res == nil {
		t.Fatal("no partial result")
	}
	if !res.Interrupted || res.Verdict == verdict.Pass || len(res.Steps) != 1 || !res.Steps[0].Partial {
		t.Fatalf("interrupted=%v verdict=%s steps=%+v, want interrupted, not pass, one partial step", res.Interrupted, res.Verdict, res.Steps)
	}
	if got := csvColumn(t, res, "partial"); got != "true" {
		t.Errorf("CSV of the cut-short step: partial %q, want true", got)
	}
	var txt bytes.Buffer
	if err := res.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	if !strings.Contains(res.Knee.Reading, "no step ran to the end") {
		t.Errorf("knee reading %q, want it to say no step ran to the end", res.Knee.Reading)
	}
	for _, want := range []string{"interrupted", "partial", CheckComplete} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "verdict: PASS") {
		t.Errorf("text report of an interrupted run says PASS:\n%s", out)
	}
}

// A run interrupted 2.5 s into a hang (the proxy passes nothing from
// 1 s into the step) records each call in flight as a latency censored
// at what it had waited, on the event loop (write) and with a goroutine
// per worker (mixed): the partial step's max is the 2.5 s wait. The cut
// calls were dropped: max 8.9 ms, censored 0, next to no_answer 2.51 s.
func TestInterruptRecordsCallsInFlightOnRealIoTDB(t *testing.T) {
	for _, scenario := range []string{ScenarioWrite, ScenarioMixed} {
		t.Run(scenario, func(t *testing.T) {
			base := realConfig(t, scenario)
			addr, pause := pauseProxy(t, base.addr())
			cfg := openLoopConfig(t, addr, 0, 20*time.Second)
			cfg.Scenario, cfg.Steps, cfg.PoolSize, cfg.Warmup = scenario, []int{2}, 4, 200*time.Millisecond
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			cfg.onWarmup = func() {
				time.AfterFunc(1200*time.Millisecond, func() { pause(4 * time.Second) })
				time.AfterFunc(3700*time.Millisecond, cancel)
			}
			res, _ := Run(ctx, cfg)
			if res == nil || len(res.Steps) != 1 || !res.Steps[0].Partial {
				t.Fatalf("want one partial step: %+v", res)
			}
			st := res.Steps[0]
			t.Logf("event loop %v, ops %d, latency %+v, no answer %+v", st.Client.EventLoop, st.Ops, st.Latency, st.NoAnswer)
			if st.Client.EventLoop != (scenario == ScenarioWrite) {
				t.Errorf("event loop %v for %s", st.Client.EventLoop, scenario)
			}
			if st.Latency.Censored < 2 || st.Latency.Max < 2300 {
				t.Errorf("censored %d, max %.1f ms: want the 2 calls in flight, censored at the ~2.5 s they had waited", st.Latency.Censored, st.Latency.Max)
			}
		})
	}
}
