package iotdb

import (
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
)

// A closed loop hides a hung DataNode: its workers wait, so a 6 s outage
// costs a few slow operations and p95 hardly moves (a 7 s pause passed
// with p95 0.87 ms). iotdb.stall fails on 2 s or more in a row without a
// successful operation; an open loop (--rate) skips it, where the stall
// is latency.
func TestStallCheck(t *testing.T) {
	sec := func(ops ...int64) []SecondStats {
		out := make([]SecondStats, len(ops))
		for i, n := range ops {
			out[i] = SecondStats{Second: i, Ops: n}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		seconds []SecondStats
		rate    float64
		status  verdict.Status
	}{
		{"healthy", sec(900, 950, 940, 960), 0, verdict.Pass},
		{"one quiet second", sec(900, 0, 940, 960), 0, verdict.Pass},
		{"six seconds without an answer", sec(900, 0, 0, 0, 0, 0, 0, 3, 950), 0, verdict.Fail},
		{"only timeouts for two seconds", []SecondStats{{Second: 0, Ops: 900}, {Second: 1, Ops: 2, Errors: 2}, {Second: 2, Ops: 2, Errors: 2}, {Second: 3, Ops: 900}}, 0, verdict.Fail},
		{"open loop", sec(5, 0, 0, 0, 5), 1, verdict.Skip},
	} {
		cfg := Config{Rate: tc.rate}
		c := stallCheck(&cfg, []Step{{Workers: 2, Seconds: tc.seconds}})
		if c.Status != tc.status {
			t.Errorf("%s: %s %q, want %s", tc.name, c.Status, c.Summary, tc.status)
		}
	}
}
