package iotdb

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hostprep/hostprep/loadprobe/fleet"
)

// Two shards of one fleet run (same run id) against the test IoTDB: each
// runs its share of every step's workers on its own devices under the
// shared database, and the database is gone after both.
func TestShardsSplitWorkersAndDevices(t *testing.T) {
	base := realConfig(t, ScenarioWrite)
	base.Steps, base.StepDuration, base.Warmup = []int{2, 4}, time.Second, -1
	base.RunID = fmt.Sprintf("shardtest_%d", time.Now().UnixNano()%1_000_000_000)
	res := make([]*Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for k := 1; k <= 2; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := base
			cfg.Shard = fleet.Shard{K: k, N: 2}
			res[k-1], errs[k-1] = Run(context.Background(), cfg)
		}()
	}
	wg.Wait()
	for k, r := range res {
		if errs[k] != nil {
			t.Fatalf("shard %d/2: %v", k+1, errs[k])
		}
		if r.Shard != fmt.Sprintf("%d/2", k+1) || r.Series != 2*2 || r.Kept {
			t.Errorf("shard %d/2: shard %q, %d series, kept %v (%s): want its 2 of the 4 devices, deleted", k+1, r.Shard, r.Series, r.Kept, r.DeleteError)
		}
		for _, s := range r.Steps {
			if s.ShardWorkers != s.Workers/2 || s.OK == 0 || s.Errors != 0 {
				t.Errorf("shard %d/2 at %d workers: ran %d (want %d), %d ok, %d errors %v", k+1, s.Workers, s.ShardWorkers, s.Workers/2, s.OK, s.Errors, s.ErrorSamples)
			}
		}
	}
	w1 := newWorkload(&Config{Scenario: ScenarioWrite, Steps: base.Steps, Shard: fleet.Shard{K: 1, N: 2}}, "p")
	w2 := newWorkload(&Config{Scenario: ScenarioWrite, Steps: base.Steps, Shard: fleet.Shard{K: 2, N: 2}}, "p")
	if slices.ContainsFunc(w1.own, func(d int) bool { return slices.Contains(w2.own, d) }) || len(w1.own)+len(w2.own) != 4 {
		t.Errorf("shard devices %v and %v: want disjoint, 4 in all", w1.own, w2.own)
	}
	if slices.Contains(databases(t, base), "root.hostprep_"+base.RunID) {
		t.Errorf("root.hostprep_%s still exists after both shards", base.RunID)
	}
	if err := (Config{Shard: fleet.Shard{K: 1, N: 2}, Steps: []int{2}}).Validate(); err == nil {
		t.Errorf("a shard without a run id was accepted")
	}
}
