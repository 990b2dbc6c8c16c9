package iotdb

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iotdb-client-go/client"
	"github.com/hostprep/hostprep/internal/verdict"
)

// A closed loop hides a hung DataNode: its workers wait, so a 6 s outage
// costs a few slow operations and p95 hardly moves (a 7 s pause passed
// with p95 0.87 ms). iotdb.stall fails on 2 s or more without an answer
// from the server, measured as a time (Step.NoAnswer), and its text
// never claims an answer "in every second". An open loop is judged where
// its schedule owes an operation every second.
func TestStallCheck(t *testing.T) {
	quiet := func(s, from float64) *Silence { return &Silence{S: s, FromS: from} }
	for _, tc := range []struct {
		name    string
		silence *Silence
		rate    float64
		status  verdict.Status
		text    string
	}{
		{"healthy", quiet(0.004, 1.2), 0, verdict.Pass, "0.00 s"},
		{"one quiet second", quiet(1.3, 0.6), 0, verdict.Pass, "1.30 s (step 1 at 2 workers, from 0.60 s)"},
		{"2.52 s straddling three seconds", quiet(2.521, 3.41), 0, verdict.Fail, "longest time without an answer: 2.52 s (step 1 at 2 workers, from 3.41 s)"},
		{"exactly 2 s", quiet(2, 1), 0, verdict.Fail, "2.00 s"},
		{"open loop owing an operation a second", quiet(3, 1), 1, verdict.Fail, "3.00 s"},
		{"open loop owing one every 5 s", quiet(5, 0), 0.1, verdict.Skip, ""},
	} {
		cfg := Config{Rate: tc.rate}
		c := stallCheck(&cfg, []Step{{Workers: 2, NoAnswer: tc.silence}}, nil)
		if c.Status != tc.status || !strings.Contains(c.Summary, tc.text) || strings.Contains(c.Summary, "every second") {
			t.Errorf("%s: %s %q, want %s with %q", tc.name, c.Status, c.Summary, tc.status, tc.text)
		}
	}
	cfg := Config{}
	if c := stallCheck(&cfg, nil, nil); c.Status != verdict.Skip {
		t.Errorf("no step: %s %q", c.Status, c.Summary)
	}
	var ss seconds
	if got := ss.stats(5900 * time.Millisecond); len(got) != 6 || got[5].Second != 5 {
		t.Errorf("seconds of a 5.9 s step with no operation recorded: %+v, want 6 (0-5)", got)
	}
}

// answerAt records on st an operation that ended at start+at with err
// (nil: a success).
func answerAt(st *workerStats, secs *seconds, start time.Time, at time.Duration, err error) {
	now := start.Add(at)
	st.record(secs, start, now.Add(-time.Millisecond), now, &workerOps{}, opWrite, 2, err)
}

// The time without an answer is an interval, not a count of empty
// seconds. The tester's case: answers until 3.41 s, none until 5.93 s
// (the proxy passed nothing for 2.52 s). Counted in whole seconds from
// the step's start only second 4 was empty, and iotdb.stall passed,
// saying the server "answered in every second".
func TestSilenceIsMeasuredBetweenAnswers(t *testing.T) {
	clock := &answerClock{}
	start := time.Unix(1000, 0)
	clock.beginStep(0, start)
	st, secs := newWorkerStats(), &seconds{clock: clock}
	for at := time.Duration(0); at < 8*time.Second; at += 10 * time.Millisecond {
		if at <= 3410*time.Millisecond || at >= 5930*time.Millisecond {
			answerAt(st, secs, start, at, nil)
		}
	}
	secs.flush(st, 0)
	empty := 0
	for _, s := range secs.stats(8 * time.Second) {
		if s.Answered == 0 {
			empty++
		}
	}
	step := Step{Workers: 4, NoAnswer: clock.endStep(start.Add(8*time.Second), []*workerStats{st})}
	if na := step.NoAnswer; empty != 1 || na.FromStep != 0 || !near(na.S, 2.52) || !near(na.FromS, 3.41) {
		t.Fatalf("%d empty seconds, silence %+v: want 1 empty second and 2.52 s from 3.41 s", empty, na)
	}
	cfg := Config{}
	if c := stallCheck(&cfg, []Step{step}, nil); c.Status != verdict.Fail || !strings.Contains(c.Observed, "2.52 s (step 1 at 4 workers, from 3.41 s)") {
		t.Errorf("%s %q (%s)", c.Status, c.Summary, c.Observed)
	}
}

// near tells a and b apart by less than 5 ms.
func near(a, b float64) bool { return a-b < 0.005 && b-a < 0.005 }

// The timeline spans the steps: a silence from 3.0 s into a 4 s step
// until 1.2 s into the next is 2.2 s (the 50 ms between the steps, with
// no operation in flight, left out), though each step alone has less
// than 2 s. A step with no answer from its start counts from its start,
// and one with none until its end to its end. A timeout or a dropped
// connection is no answer; an error status is one.
func TestSilenceAcrossStepsAndEnds(t *testing.T) {
	clock := &answerClock{}
	t0 := time.Unix(1000, 0)
	clock.beginStep(0, t0)
	a, secs := newWorkerStats(), &seconds{clock: clock}
	answerAt(a, secs, t0, 1900*time.Millisecond, nil) // 1.9 s from the step's start
	answerAt(a, secs, t0, 2*time.Second, &client.ExecutionError{Code: 803})
	answerAt(a, secs, t0, 3*time.Second, nil)
	answerAt(a, secs, t0, 3500*time.Millisecond, &deadlineError{d: time.Second})
	s0 := clock.endStep(t0.Add(4*time.Second), []*workerStats{a})
	t1 := t0.Add(4050 * time.Millisecond)
	clock.beginStep(1, t1)
	b, secs := newWorkerStats(), &seconds{clock: clock}
	answerAt(b, secs, t1, 1200*time.Millisecond, nil)
	answerAt(b, secs, t1, 1300*time.Millisecond, nil)
	s1 := clock.endStep(t1.Add(3*time.Second), []*workerStats{b})
	if !near(s0.S, 1.9) || s0.FromStep != 0 || !near(s0.FromS, 0) {
		t.Errorf("step 0: %+v, want 1.9 s from its start", s0)
	}
	if !near(s1.S, 2.2) || s1.FromStep != 0 || !near(s1.FromS, 3) {
		t.Errorf("step 1: %+v, want 2.2 s from 3.0 s into step 0", s1)
	}
	steps := []Step{{Workers: 2, NoAnswer: s0}, {Workers: 4, NoAnswer: s1}}
	cfg := Config{}
	if c := stallCheck(&cfg, steps, nil); c.Status != verdict.Fail || !strings.Contains(c.Observed, "2.20 s (step 1 at 2 workers, from 3.00 s)") {
		t.Errorf("%s %q", c.Status, c.Observed)
	}
	t2 := t1.Add(3 * time.Second)
	clock.beginStep(2, t2)
	if s2 := clock.endStep(t2.Add(2500*time.Millisecond), nil); !near(s2.S, 4.2) || s2.FromStep != 1 || !near(s2.FromS, 1.3) {
		t.Errorf("step 2 without an answer: %+v, want 4.2 s from 1.3 s into step 1", s2)
	}
}

// On a real IoTDB behind a proxy that passes nothing either way for
// 2.5 s from 1.2 s into the second step: iotdb.stall fails, naming the
// time and where it began. Counted in whole seconds only second 2 of the
// step was empty, and the run passed ("answered in every second").
func TestStallStraddlingSecondsFailsOnRealIoTDB(t *testing.T) {
	base := realConfig(t, ScenarioWrite)
	addr, pause := pauseProxy(t, base.addr())
	cfg := openLoopConfig(t, addr, 0, 4*time.Second)
	cfg.Steps, cfg.PoolSize = []int{2, 4}, 4
	cfg.OnStep = func(s Step) {
		if s.Workers == 2 {
			time.AfterFunc(1200*time.Millisecond, func() { pause(2500 * time.Millisecond) })
		}
	}
	res, err := Run(context.Background(), cfg)
	if err != nil || len(res.Steps) != 2 {
		t.Fatalf("%v", err)
	}
	for _, s := range res.Steps[1].Seconds {
		t.Logf("second %d: answered %d", s.Second, s.Answered)
	}
	c := res.Checks[3]
	na := res.Steps[1].NoAnswer
	if c.ID != CheckStall || c.Status != verdict.Fail || na == nil || na.S < 2.4 || na.S > 3 || na.FromStep != 1 ||
		!strings.Contains(c.Observed, "(step 2 at 4 workers, from 1.") {
		t.Errorf("%s %s %q, silence %+v: want a fail for ~2.5 s from ~1.2 s into step 2", c.ID, c.Status, c.Summary, na)
	}
}

// On a real IoTDB behind a proxy that passes nothing for 3 s from 0.6 s
// into the 1 s warm-up: the warm-up waits for its hung calls, and the
// silence is on the run's timeline, so iotdb.stall fails naming the
// warm-up, and a note says how long the warm-up ran. The warm-up was off
// the timeline: PASS with iotdb.stall 0.01 s and no note.
func TestStallDuringWarmupFailsOnRealIoTDB(t *testing.T) {
	base := realConfig(t, ScenarioWrite)
	addr, pause := pauseProxy(t, base.addr())
	cfg := openLoopConfig(t, addr, 0, time.Second)
	cfg.Steps, cfg.PoolSize, cfg.Warmup = []int{2}, 4, time.Second
	cfg.onWarmup = func() { time.AfterFunc(600*time.Millisecond, func() { pause(3 * time.Second) }) }
	res, err := Run(context.Background(), cfg)
	if err != nil || len(res.Steps) != 1 {
		t.Fatalf("%v", err)
	}
	c := res.Checks[3]
	t.Logf("%s %s %q; warm-up %.2f s, silence %+v; notes %q", c.ID, c.Status, c.Summary, res.WarmupS, res.WarmupNoAnswer, res.Notes)
	if c.ID != CheckStall || c.Status != verdict.Fail || !strings.Contains(c.Observed, "(the warm-up, from 0.") {
		t.Errorf("%s %s %q: want a fail for ~3 s from ~0.6 s into the warm-up", c.ID, c.Status, c.Summary)
	}
	if res.WarmupS < 3.4 || !slices.ContainsFunc(res.Notes, func(n string) bool {
		return strings.Contains(n, fmt.Sprintf("the warm-up ran %.2f s", res.WarmupS)) && strings.Contains(n, "past its 1s")
	}) {
		t.Errorf("warm-up %.2f s, notes %q: want it to run ~3.6 s and a note saying so", res.WarmupS, res.Notes)
	}
}
