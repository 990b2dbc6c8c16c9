package iotdb

import (
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/verdict"
)

// A closed loop hides a hung DataNode: its workers wait, so a 6 s outage
// costs a few slow operations and p95 hardly moves (a 7 s pause passed
// with p95 0.87 ms). iotdb.stall fails on 2 s or more in a row without an
// answer from the server. A second whose operations all failed with a
// status (a refused write: 803 with no WRITE_DATA) was answered: that is
// the error rate's to judge, not a stall. An open loop is judged where
// its schedule owes an operation every second.
func TestStallCheck(t *testing.T) {
	sec := func(ops ...int64) []SecondStats {
		out := make([]SecondStats, len(ops))
		for i, n := range ops {
			out[i] = SecondStats{Second: i, Ops: n, Answered: n}
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
		{"only timeouts for two seconds", []SecondStats{{Second: 0, Ops: 900, Answered: 900}, {Second: 1, Ops: 2, Errors: 2}, {Second: 2, Ops: 2, Errors: 2}, {Second: 3, Ops: 900, Answered: 900}}, 0, verdict.Fail},
		{"every write refused with a status", []SecondStats{{Second: 0, Ops: 90, Errors: 90, Answered: 90}, {Second: 1, Ops: 95, Errors: 95, Answered: 95}, {Second: 2, Ops: 91, Errors: 91, Answered: 91}}, 0, verdict.Pass},
		{"open loop owing an operation a second", sec(5, 0, 0, 0, 5), 1, verdict.Fail},
		{"open loop owing one every 5 s", sec(1, 0, 0, 0, 0, 1), 0.1, verdict.Pass},
	} {
		cfg := Config{Rate: tc.rate}
		c := stallCheck(&cfg, []Step{{Workers: 2, Seconds: tc.seconds}})
		if c.Status != tc.status {
			t.Errorf("%s: %s %q, want %s", tc.name, c.Status, c.Summary, tc.status)
		}
	}
}

// The seconds of all steps are one timeline: an outage from the last
// second of one step into the first of the next is one stall, and so is
// one that runs past a step's duration (its seconds are kept up to the
// step's end). No step measured (interrupted before the first) skips
// instead of passing on nothing.
func TestStallAcrossSteps(t *testing.T) {
	up := SecondStats{Ops: 100, Answered: 100}
	down := SecondStats{Ops: 3, Errors: 3}
	step := func(workers int, ss ...SecondStats) Step {
		for i := range ss {
			ss[i].Second = i
		}
		return Step{Workers: workers, Seconds: ss}
	}
	cfg := Config{}
	c := stallCheck(&cfg, []Step{step(2, up, up, up, down), step(4, down, up, up)})
	if c.Status != verdict.Fail || !strings.Contains(c.Observed, "2 s without an answer from second 3 of the 2 workers step") {
		t.Errorf("outage across steps: %s %q (%s)", c.Status, c.Summary, c.Observed)
	}
	if c := stallCheck(&cfg, nil); c.Status != verdict.Skip {
		t.Errorf("no step: %s %q", c.Status, c.Summary)
	}
	var ss seconds
	if got := ss.stats(5900 * time.Millisecond); len(got) != 6 || got[5].Second != 5 {
		t.Errorf("seconds of a 5.9 s step with no operation recorded: %+v, want 6 (0-5)", got)
	}
}
