package iotdb

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iotdb-client-go/client"
)

// A failed operation is a latency: one that got no answer (a deadline, a
// reset) at the time it waited, censored; one the server answered with an
// error status as measured (a fast error is an answer).
func TestFailedOperationsAreLatencies(t *testing.T) {
	st, secs := newWorkerStats(), &seconds{}
	start := time.Unix(1000, 0)
	rec := func(took time.Duration, err error) {
		st.record(secs, start, start, start.Add(took), &workerOps{}, opWrite, 2, err)
	}
	rec(time.Millisecond, nil)
	rec(2*time.Millisecond, &client.ExecutionError{Code: 803})
	rec(time.Second, &deadlineError{d: time.Second})
	rec(700*time.Millisecond, syscall.ECONNRESET)
	secs.flush(st, 0)
	sum := st.lat.Summary()
	if sum.Count != 4 || sum.Censored != 2 || sum.Max < 999 {
		t.Errorf("latency %v: want 4 values, the deadline and the reset censored, max >= 1 s", sum)
	}
	if s := secs.stats(time.Second)[1]; s.MaxMs < 999 {
		t.Errorf("second 1: max %.1f ms, want the 1 s deadline that ended in it", s.MaxMs)
	}
}

// On a real IoTDB behind a proxy that passes nothing for 1.7 s from 1 s
// into the step, with a 1 s --call-timeout: the calls in flight wait the full 1 s and fail,
// and they are in the step's latency (censored, max >= 1 s) and said in
// the report. They were left out: PASS with p99 2.06 ms and max of the
// calls that outlived the stall.
func TestTimedOutOperationsAreCensoredOnRealIoTDB(t *testing.T) {
	base := realConfig(t, ScenarioWrite)
	addr, pause := pauseProxy(t, base.addr())
	cfg := openLoopConfig(t, addr, 0, 3*time.Second)
	cfg.Steps, cfg.PoolSize, cfg.CallTimeout = []int{4}, 8, time.Second
	cfg.onStepStart = func(int) { time.AfterFunc(time.Second, func() { pause(1700 * time.Millisecond) }) }
	res, err := Run(context.Background(), cfg)
	if err != nil || len(res.Steps) != 1 {
		t.Fatalf("%v", err)
	}
	s := res.Steps[0]
	var text bytes.Buffer
	_ = res.WriteText(&text)
	t.Logf("errors %v, latency %v\n%s", s.ErrorsByClass, s.Latency, text.String())
	if s.ErrorsByClass[ClassDeadline] == 0 {
		t.Fatalf("no call hit the 1 s deadline during the 1.7 s stall: errors %v", s.ErrorsByClass)
	}
	if s.Latency.Censored != unanswered(&s) || s.Latency.Max < 999 || s.Latency.Count != s.Ops {
		t.Errorf("%d failed without an answer; latency %v: want each censored (max >= the 1 s deadline) and every operation counted", unanswered(&s), s.Latency)
	}
	if !strings.Contains(text.String(), "censored at 4 workers: ") {
		t.Errorf("the text report does not say how many latencies were censored")
	}
}
