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
		got, why := stepBound(&c.step, &prev, 0.01)
		if got != c.want || !strings.Contains(why, c.reason) {
			t.Errorf("%s: bound %q (%s), want %q naming %q", c.name, got, why, c.want, c.reason)
		}
	}
}
