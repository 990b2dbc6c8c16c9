package mqtt

import (
	"math/rand/v2"
	"testing"
)

// The scheduler hands out events in time order whatever mix of add and
// addNext scheduled them, including an addNext earlier than the ring's
// last event (it must fall back to the heap), and across ring growth.
func TestSchedulerPopsInTimeOrder(t *testing.T) {
	s := newScheduler(func() int64 { return 0 }, 4)
	rng := rand.New(rand.NewPCG(1, 2))
	var ringAt int64
	want := 0
	for i := 0; i < 5000; i++ {
		switch rng.IntN(3) {
		case 0:
			s.add(event{at: rng.Int64N(1 << 20)})
		case 1:
			ringAt += rng.Int64N(100)
			s.addNext(event{at: ringAt})
		default:
			s.addNext(event{at: rng.Int64N(1 << 20)}) // often out of order
		}
		want++
	}
	last, got := int64(-1), 0
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		at, ok := s.peek()
		if !ok {
			break
		}
		e := s.popFirst()
		if e.at != at || e.at < last {
			t.Fatalf("event %d: at %d after %d (peek said %d)", got, e.at, last, at)
		}
		last = e.at
		got++
		if got%7 == 0 { // interleave: a publisher's next publish as this one fires
			s.ring.push(event{at: e.at + 1<<21})
			want++
		}
	}
	if got != want {
		t.Fatalf("popped %d events, scheduled %d", got, want)
	}
}
