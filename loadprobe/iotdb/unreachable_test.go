package iotdb

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/iotdbfault"
	"github.com/hostprep/hostprep/internal/verdict"
)

// The server dies mid-run (here the fault server closes: connections
// dropped, port refused; the shared real IoTDB is not stopped): workers
// back off instead of hammering the port, the run stops as "could not
// run" naming the target once nothing has connected for UnreachableAfter,
// and the header says the database was NOT DELETED (not "KEPT").
func TestServerGoneMidRunBacksOffAndStops(t *testing.T) {
	srv := iotdbfault.StartT(t, iotdbfault.None)
	host, port := srv.HostPort()
	cfg := Config{Host: host, Port: port, Steps: []int{4}, StepDuration: 20 * time.Second, Warmup: -1,
		PoolSize: 4, ConnectTimeout: time.Second, CallTimeout: time.Second, UnreachableAfter: 2 * time.Second}
	time.AfterFunc(time.Second, srv.Close)
	t0 := time.Now()
	res, err := Run(context.Background(), cfg)
	took := time.Since(t0)
	if exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), res.Target) || !strings.Contains(err.Error(), "could not run") {
		t.Fatalf("Run: %v (code %d), want exit 3 'could not run' naming %s", err, exitcode.Code(err), res.Target)
	}
	if took > 10*time.Second {
		t.Errorf("Run took %v; the server was gone after 1s and UnreachableAfter is 2s", took)
	}
	s := res.Steps[0]
	t.Logf("took %v; step: ops %d ok %d errors %v; notes %v", took, s.Ops, s.OK, s.ErrorsByClass, res.Notes)
	// Without backoff 4 workers made ~47,000 connect attempts a second.
	if c := s.ErrorsByClass[ClassConnect]; c == 0 || c > 200 {
		t.Errorf("%d connect errors in ~2s at 4 workers, want 1..200 (backoff)", c)
	}
	if !res.Unreachable || !s.Partial || res.Verdict == verdict.Pass {
		t.Errorf("unreachable=%v partial=%v verdict=%s", res.Unreachable, s.Partial, res.Verdict)
	}
	var txt bytes.Buffer
	if err := res.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	if res.DeleteError == "" || !strings.Contains(out, "NOT DELETED (delete failed: ") || strings.Contains(out, "KEPT") {
		t.Errorf("delete error %q; header:\n%s\nwant NOT DELETED (delete failed: ...), not KEPT", res.DeleteError, out)
	}
	if !strings.Contains(out, "could not be reached") {
		t.Errorf("report does not say the server could not be reached:\n%s", out)
	}
}

// The knee and the peak are not put on a step where most operations
// failed (the tester saw the knee on a step of 100% connect errors).
func TestKneeIgnoresHighErrorSteps(t *testing.T) {
	steps := steps([3]float64{1, 100, 1}, [3]float64{2, 190, 1.1}, [3]float64{4, 195, 3}, [3]float64{8, 400, 0.5})
	steps[2].ErrorRate, steps[3].ErrorRate = 0.02, 0.9
	k := FindKnee(steps, 0.01)
	if k.PeakWorkers != 2 || k.Workers != 0 || len(k.Ignored) != 2 || !strings.Contains(k.Reading, "the steps at 4, 8 workers ignored") {
		t.Errorf("FindKnee = %+v, want peak at 2, no knee, steps 4 and 8 ignored and named", k)
	}
	k = FindKnee(steps, 0.5)
	if k.Workers != 4 || k.PeakWorkers != 4 || len(k.Ignored) != 1 || k.Ignored[0] != 8 {
		t.Errorf("FindKnee(limit 50%%) = %+v, want knee and peak at 4, step 8 (400 TPS at 90%% errors) ignored", k)
	}
}
