package iotdb

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/loadprobe/latency"
)

// The bound rules on recorded steps (no server needed).
func TestStepBoundRules(t *testing.T) {
	prev := Step{Workers: 8, Ops: 1000, TPS: 1000, Latency: latency.Summary{P95: 2},
		Pool: PoolUse{Size: 64, MeanUtil: 0.2}, Client: ClientUse{CPUCores: 0.3, Cores: 2}}
	for _, c := range []struct {
		name, want, reason string
		step               Step
	}{
		{"errors", BoundErrors, "error rate 20.00%", Step{Workers: 16, Ops: 1000, Errors: 200, ErrorRate: 0.2, ErrorsByClass: map[string]int64{ClassStatus: 200}}},
		{"pool full with waiters", BoundPool, "pool use 95%", Step{Workers: 16, Ops: 10, Pool: PoolUse{Size: 16, MeanUtil: 0.95, MeanUsed: 15.2, WaitingShare: 0.3}}},
		{"queue on a small pool", BoundPool, "the server never saw more than 8 calls at once", Step{Workers: 16, Ops: 10, Pool: PoolUse{Size: 8, MeanUtil: 0.7, MaxUsed: 8, WaitingShare: 0.9}}},
		{"client CPU", BoundClient, "1.90 of 2 CPUs", Step{Workers: 16, Ops: 10, Pool: PoolUse{Size: 64}, Client: ClientUse{CPUCores: 1.9, Cores: 2}}},
		{"client lag", BoundClient, "waited 7.0 ms", Step{Workers: 16, Ops: 10, Pool: PoolUse{Size: 64}, Client: ClientUse{CPUCores: 0.2, Cores: 2, SchedLagMeanMs: 7}}},
		{"server", BoundServer, "p95 +150%", Step{Workers: 16, Ops: 1000, TPS: 1010, Latency: latency.Summary{P95: 5}, Pool: PoolUse{Size: 64, MeanUtil: 0.3}, Client: ClientUse{CPUCores: 0.4, Cores: 2}}},
		{"still scaling", "", "", Step{Workers: 16, Ops: 1000, TPS: 1900, Latency: latency.Summary{P95: 2.2}, Pool: PoolUse{Size: 64, MeanUtil: 0.4}, Client: ClientUse{CPUCores: 0.5, Cores: 2}}},
	} {
		got, why := stepBound(&c.step, &prev, 0.01, 0)
		if got != c.want || !strings.Contains(why, c.reason) {
			t.Errorf("%s: bound %q (%s), want %q naming %q", c.name, got, why, c.want, c.reason)
		}
	}
}

// Messages that name the steps by their worker counts read right for one
// step of 1 worker ("the step at 1 worker", not "steps at 1 workers").
func TestStepListsReadRightForOneWorker(t *testing.T) {
	one := Step{Workers: 1, Ops: 100, OK: 40, Errors: 60, ErrorRate: 0.6, TPS: 40, Bound: BoundPool,
		StatusCodes: map[string]int64{"500": 60}, ErrorsByClass: map[string]int64{ClassStatus: 60}}
	two := Step{Workers: 2, Ops: 100, OK: 100, TPS: 100, Latency: latency.Summary{P95: 1}}
	knee := FindKnee([]Step{one, two}, 0.01)
	var text []string
	text = append(text, knee.Reading)
	for _, s := range Suggest(&Config{Steps: []int{1, 2}, PoolSize: 1}, []Step{one, two}, "2.0.10") {
		text = append(text, s.Observed)
	}
	text = append(text, Config{Steps: []int{2}, PoolSize: 1}.Warnings()...)
	all := strings.Join(text, "\n")
	for _, want := range []string{"the step at 1 worker ignored", "bounded the step at 1 worker", "x60 at 1 worker:", "smaller than the step at 2 workers"} {
		if !strings.Contains(all, want) {
			t.Errorf("messages lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "1 workers") {
		t.Errorf("messages say \"1 workers\":\n%s", all)
	}
}
