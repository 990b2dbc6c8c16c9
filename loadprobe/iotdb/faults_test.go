package iotdb

import (
	"context"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/iotdbfault"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// faultRun runs a short probe against a fault server; the fault server
// gives error paths only, never a performance number.
func faultRun(t *testing.T, f iotdbfault.Fault, scenario string, tune func(*iotdbfault.Server, *Config)) *Result {
	t.Helper()
	srv, err := iotdbfault.Start(iotdbfault.None)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	host, port := srv.HostPort()
	zero := 0.0
	cfg := Config{Host: host, Port: port, Scenario: scenario, Steps: []int{2}, StepDuration: 700 * time.Millisecond,
		Warmup: -1, PoolSize: 16, CallTimeout: 2 * time.Second, Thresholds: Thresholds{MaxErrorRate: &zero},
		SettingNames: probeFlags(&Config{})} // messages as `hostprep probe iotdb` prints them
	if tune != nil {
		tune(srv, &cfg)
	}
	srv.SetFault(f)
	if scenario == ScenarioMixed {
		srv.SetSkip(int64(slices.Max(cfg.Steps))) // the seeding writes, one per device
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run against the %v fault server: %v", f, err)
	}
	if len(res.Steps) != 1 {
		t.Fatalf("%d steps, want 1", len(res.Steps))
	}
	s := res.Steps[0]
	t.Logf("%v: ops %d ok %d errors %v codes %v samples %v pool %+v notes %v", f, s.Ops, s.OK, s.ErrorsByClass, s.StatusCodes, s.ErrorSamples, s.Pool, res.Notes)
	if srv.DataCalls.Load() == 0 {
		t.Fatalf("the fault server saw no data call")
	}
	if s.Errors == 0 || s.Errors != s.Ops-s.OK || s.OK > 0 && scenario != ScenarioMixed {
		t.Errorf("%v: %d errors of %d ops, want every op to fail", f, s.Errors, s.Ops)
	}
	if res.Verdict != verdict.Fail || res.Checks[0].Status != verdict.Fail {
		t.Errorf("%v: verdict %s, error-rate check %+v, want fail", f, res.Verdict, res.Checks[0])
	}
	return res
}

// onlyClass asserts that every error of the step is of class.
func onlyClass(t *testing.T, s Step, class string) {
	t.Helper()
	if s.ErrorsByClass[class] != s.Errors || len(s.ErrorsByClass) != 1 {
		t.Errorf("errors by class %v, want all %d in %s", s.ErrorsByClass, s.Errors, class)
	}
}

func TestFaultSlowAnswerIsClientDeadline(t *testing.T) {
	res := faultRun(t, iotdbfault.Slow, ScenarioWrite, func(srv *iotdbfault.Server, c *Config) {
		srv.SetDelay(3 * time.Second)
		c.CallTimeout = 200 * time.Millisecond
	})
	s := res.Steps[0]
	onlyClass(t, s, ClassDeadline)
	// The deadline is the connection's: a call ends at it and its session
	// is closed, so no call outlives it and no session stays out.
	if s.Pool.MaxUsed > int64(s.Workers) {
		t.Errorf("pool max in use %d with %d workers: a session stayed out after its call's deadline", s.Pool.MaxUsed, s.Workers)
	}
	if s.DurationS > 0.7+1 {
		t.Errorf("step took %.1fs: the 3s answers were waited for instead of the 200ms deadline", s.DurationS)
	}
	// One call per worker per 200 ms at most: each call waited for its
	// deadline (700 ms step, 2 workers: 2 x ceil(700/200) = 8).
	if s.Ops > 2*4 {
		t.Errorf("%d ops in 700 ms with 2 workers and a 200 ms deadline: calls returned before their deadline", s.Ops)
	}
}

func TestFaultStatusCodeIsCounted(t *testing.T) {
	for _, sc := range []string{ScenarioWrite, ScenarioBatch, ScenarioMixed} {
		t.Run(sc, func(t *testing.T) {
			res := faultRun(t, iotdbfault.Status, sc, func(srv *iotdbfault.Server, c *Config) { srv.SetCode(305) })
			s := res.Steps[0]
			onlyClass(t, s, ClassStatus)
			if s.StatusCodes["305"] != s.Errors {
				t.Errorf("status codes %v, want all %d as 305", s.StatusCodes, s.Errors)
			}
			if !strings.Contains(res.Checks[0].Remedy, "status_codes") {
				t.Errorf("remedy %q should point at status_codes", res.Checks[0].Remedy)
			}
		})
	}
}

// A MULTIPLE_ERROR whose failing sub-status has no message made the
// v1.3.7 client's VerifySuccess panic (nil dereference); the probe's own
// status check reads it as the sub-status's code.
func TestFaultMultipleErrorWithoutMessageIsSubStatus(t *testing.T) {
	res := faultRun(t, iotdbfault.MultipleNoMessage, ScenarioWrite, nil)
	s := res.Steps[0]
	onlyClass(t, s, ClassStatus)
	if len(s.StatusCodes) != 1 || s.StatusCodes["507"] != s.Errors {
		t.Errorf("status codes %v, want all %d as the sub-status 507", s.StatusCodes, s.Errors)
	}
	if s.Ops < 2 {
		t.Errorf("only %d ops: workers did not go on after the failed status", s.Ops)
	}
	if s.Pool.MaxUsed > int64(s.Workers) {
		t.Errorf("pool max in use %d > %d workers: a session was not put back", s.Pool.MaxUsed, s.Workers)
	}
}

func TestFaultDroppedConnectionIsConnectError(t *testing.T) {
	for _, sc := range []string{ScenarioWrite, ScenarioMixed} {
		t.Run(sc, func(t *testing.T) {
			res := faultRun(t, iotdbfault.Drop, sc, nil)
			s := res.Steps[0]
			// A dropped write is a lost connection; a dropped query can make
			// the v1.3.7 client panic (nil response after reconnect) — both
			// are counted, nothing else.
			for class := range s.ErrorsByClass {
				if class != ClassConnect && class != ClassPanic {
					t.Errorf("errors by class %v: want connect (or panic) only", s.ErrorsByClass)
				}
			}
			if s.ErrorsByClass[ClassConnect] == 0 {
				t.Errorf("no connect errors for dropped connections: %v", s.ErrorsByClass)
			}
		})
	}
}

func TestNoServerIsEnvironmentError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there now
	_, err = Run(context.Background(), Config{Host: "127.0.0.1", Port: port, Steps: []int{1}, StepDuration: time.Second, ConnectTimeout: time.Second})
	if exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "cannot open a session") {
		t.Fatalf("Run against a closed port: %v (code %d), want exit 3 'cannot open a session'", err, exitcode.Code(err))
	}
}

func TestBadConfigIsBadInput(t *testing.T) {
	neg := -0.5
	for name, cfg := range map[string]Config{
		"scenario":    {Scenario: "delete-all"},
		"steps":       {Steps: []int{10, 0}},
		"pool":        {PoolSize: -1},
		"target step": {Steps: []int{1, 2}, Thresholds: Thresholds{TargetStep: 3}},
		"error rate":  {Thresholds: Thresholds{MaxErrorRate: &neg}},
		"run id":      {RunID: "A;drop"},
	} {
		_, err := Run(context.Background(), cfg)
		if exitcode.Code(err) != exitcode.BadInput {
			t.Errorf("%s: %v (code %d), want exit 2", name, err, exitcode.Code(err))
		}
	}
}

// An open loop whose sessions lose their connection on every call
// offered the server none of its due operations: iotdb.schedule fails,
// naming them as not carried, whatever the workers kept of their
// schedule (the offered rate counts what the server carried, not what
// the probe started).
func TestFaultDroppedConnectionsFailOpenLoopSchedule(t *testing.T) {
	res := faultRun(t, iotdbfault.Drop, ScenarioWrite, func(_ *iotdbfault.Server, c *Config) { c.Rate = 50 })
	s := res.Steps[0]
	if s.Partial {
		t.Skipf("the step was cut short (%s): nothing to judge", res.StopReason)
	}
	if s.NotConnected() == 0 || s.NotOfferedShare() <= OfferFailShare {
		t.Fatalf("not connected %d of %d due (%.1f%%): want the dropped calls counted as not offered", s.NotConnected(), s.Due(), 100*s.NotOfferedShare())
	}
	ch := testenv.CheckByID(t, res.Checks, CheckSchedule)
	if ch.Status != verdict.Fail || !strings.Contains(ch.Summary, "lost its connection") || !strings.Contains(ch.Summary, "operations/s asked") {
		t.Errorf("%s = %s %q, want a failure naming the offered against the asked rate and the lost connections", ch.ID, ch.Status, ch.Summary)
	}
}
