package mqtt

import (
	"time"

	"github.com/hostprep/hostprep/loadprobe/latency"
)

// secRing is how many seconds of the schedule a shard keeps per-second
// latencies for (secLat). An ack or delivery is recorded in the second
// its own clock reading falls in, the index secCounts counts it by, so a
// row's p95s are of exactly the acks and deliveries its counts count:
// none without them, whenever the sampler looks (a sampler that wakes
// late used to give a second's deliveries to the row before it, and the
// next row a count with no p95). The sampler reads each second while a
// slot holds it; an event recorded more than secRing seconds after its
// clock reading (the whole process stopped that long) is counted but
// not in its second's p95.
const secRing = 8

// secLat is one second's ack and end-to-end latencies in one shard.
type secLat struct {
	t        int // 0-based second of the schedule it holds; -1: none
	ack, e2e *latency.Recorder
	// dirty: recorded since the sampler last read it.
	dirty bool
}

// sec is the shard's slot for second i (s.mu held), taking over the
// slot of a second secRing older; nil before the schedule (i < 0) and for
// a second older than its slot already holds.
func (s *shard) sec(i int) *secLat {
	if i < 0 {
		return nil
	}
	l := &s.secs[i%secRing]
	switch {
	case l.t == i:
	case l.t > i:
		return nil
	case l.ack == nil:
		l.t, l.ack, l.e2e = i, latency.New(), latency.New()
	default:
		l.t = i
		l.ack.Reset()
		l.e2e.Reset()
	}
	l.dirty = true
	return l
}

// index is the 0-based second of the schedule now (ns since the run
// base) counts in (events past the last second count in it); -1 on a
// nil c (before the schedule).
func (c *secCounts) index(now int64) int {
	if c == nil {
		return -1
	}
	return min(max(0, int((now-c.start)/int64(time.Second))), len(c.pub)-1)
}

// secP95 sets the ack and end-to-end p95 (ms) of the rows whose second a
// shard recorded latencies in since the last look, from those latencies
// merged over the shards (ack and e2e are scratch). The last row, when
// final, also takes every later second's, as its counts do
// (secCounts.fill). A second with no row yet stays to be read when it
// has one.
func (r *run) secP95(rows []Second, final bool, ack, e2e *latency.Recorder) {
	if len(rows) == 0 {
		return
	}
	last := len(rows) - 1
	row := func(t int) int { // the row second t counts in, -1: none yet
		switch {
		case t < last:
			return t
		case t == last || final:
			return last
		}
		return -1
	}
	var want [secRing]bool // rows (mod secRing) to read
	for _, s := range r.shards {
		s.mu.Lock()
		for k := range s.secs {
			if l := &s.secs[k]; l.t >= 0 && l.dirty && row(l.t) >= 0 && row(l.t) > last-secRing {
				want[row(l.t)%secRing] = true
			}
		}
		s.mu.Unlock()
	}
	for i := max(0, last-secRing+1); i <= last; i++ {
		if !want[i%secRing] {
			continue
		}
		ack.Reset()
		e2e.Reset()
		for _, s := range r.shards {
			s.mu.Lock()
			for k := range s.secs {
				if l := &s.secs[k]; l.t >= 0 && row(l.t) == i {
					ack.Merge(l.ack)
					e2e.Merge(l.e2e)
					l.dirty = false
				}
			}
			s.mu.Unlock()
		}
		rows[i].AckP95, rows[i].E2EP95 = 0, 0
		if rows[i].Acked > 0 {
			rows[i].AckP95 = float64(ack.Quantile(95)) / 1e6
		}
		rows[i].E2EP95 = float64(e2e.Quantile(95)) / 1e6
	}
}
