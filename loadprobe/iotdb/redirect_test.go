package iotdb

import (
	"context"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/iotdbfault"
)

// A DataNode that does not lead a device's region answers writes with
// REDIRECTION_RECOMMEND (400) naming the node that does. With
// --redirection the workers' next writes go to that node (as the Java
// SessionPool's enableRedirection); without, they stay where they are and
// the recommendations are only counted.
func TestRedirectionOnAndOff(t *testing.T) {
	for _, on := range []bool{true, false} {
		a, err := iotdbfault.Start(iotdbfault.None)
		if err != nil {
			t.Fatal(err)
		}
		b, err := iotdbfault.Start(iotdbfault.None)
		if err != nil {
			t.Fatal(err)
		}
		a.SetRedirect(b.Addr)
		cfg := Config{NodeURLs: []string{a.Addr}, Redirection: on, Scenario: ScenarioWrite, Steps: []int{2},
			StepDuration: 500 * time.Millisecond, Warmup: -1, PoolSize: 2}
		res, err := Run(context.Background(), cfg)
		a.Close()
		b.Close()
		if err != nil {
			t.Fatalf("redirection %v: %v", on, err)
		}
		s := res.Steps[0]
		onA, onB := a.DataCalls.Load(), b.DataCalls.Load()
		t.Logf("redirection %v: %d ops, %d redirects, %d data calls on A, %d on B, pool %+v", on, s.Ops, s.Redirects, onA, onB, s.Pool)
		if s.Errors != 0 || s.OK < 10 {
			t.Fatalf("redirection %v: %d ok, %d errors %v", on, s.OK, s.Errors, s.ErrorSamples)
		}
		if on {
			if onB < s.Ops-int64(s.Workers) || onA > int64(s.Workers) || s.Redirects != onA {
				t.Errorf("redirection on: %d calls on A, %d on B, %d redirects: want one call per worker on A, the rest on B", onA, onB, s.Redirects)
			}
		} else if onB != 0 || s.Redirects != s.Ops {
			t.Errorf("redirection off: %d calls on B, %d redirects of %d ops: want every write on A, each recommendation counted", onB, s.Redirects, s.Ops)
		}
		if s.Pool.MaxUsed > 2 {
			t.Errorf("redirection %v: %d sessions in use on a pool of 2", on, s.Pool.MaxUsed)
		}
	}
}
