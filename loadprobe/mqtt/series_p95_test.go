package mqtt

import (
	"testing"
	"time"
)

// A row's per-second p95s are of the deliveries its counts count, however
// late the sampler looks. Here it wakes 50 ms after second 1 ended, when
// second 2's deliveries are already in, and the run ends 0.25 s into
// second 2 with no more: second 1 must keep its own latencies (100-109
// ms), and second 2, counted with 10 deliveries, theirs (10-19 ms),
// not none (once seen as "second 2: received 10, e2e p95 0" under load).
func TestSeriesP95FollowsTheCounts(t *testing.T) {
	cfg := small("", 10)
	r := newRun(&cfg, 10, brokerAddr{}, nil)
	r.perSec.Store(newSecCounts(0, 5))
	r.base = time.Now().Add(-50 * time.Millisecond) // the sampler's first look, 1 s on, is 1.05 s into the schedule
	ms := int64(time.Millisecond)
	for i := range 10 {
		r.recordE2E(i, 400*ms, 500*ms+int64(i)*ms, 0)   // second 1: 100..109 ms
		r.recordE2E(i, 1000*ms, 1010*ms+int64(i)*ms, 0) // second 2: 10..19 ms
	}
	done := make(chan struct{})
	stop := time.AfterFunc(1200*time.Millisecond, func() { close(done) })
	defer stop.Stop()
	res := &Result{}
	r.sampleEverySecond(res, done, nil)
	if len(res.Series) != 2 {
		t.Fatalf("series %+v, want seconds 1 and 2", res.Series)
	}
	for _, tc := range []struct {
		row      Second
		min, max float64 // ms
	}{{res.Series[0], 100, 110}, {res.Series[1], 10, 20}} {
		if tc.row.Received != 10 || tc.row.E2EP95 < tc.min || tc.row.E2EP95 > tc.max {
			t.Errorf("second %d: received %d, e2e p95 %.3f ms; want 10 received, p95 %g..%g ms", tc.row.T, tc.row.Received, tc.row.E2EP95, tc.min, tc.max)
		}
	}
}
