package mqtt

import (
	"sync"
	"time"
)

// Event kinds of the central scheduler.
const (
	evConnect uint8 = iota
	evPublish
	evPing
	evRetry
)

// event is one scheduled action; at is ns since the run base.
type event struct {
	at     int64
	client int32 // publisher number, or -1-i for subscriber i
	kind   uint8
}

// eventHeap is a binary min-heap on at. It is typed (not
// container/heap) so that pushing and popping an event does not box it in
// an interface: two allocations per publish otherwise.
type eventHeap []event

func (h *eventHeap) push(e event) {
	*h = append(*h, e)
	q := *h
	i := len(q) - 1
	for i > 0 {
		p := (i - 1) / 2
		if q[p].at <= q[i].at {
			break
		}
		q[p], q[i] = q[i], q[p]
		i = p
	}
}

func (h *eventHeap) pop() event {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q = q[:last]
	*h = q
	i := 0
	for {
		l := 2*i + 1
		if l >= len(q) {
			break
		}
		m := l
		if r := l + 1; r < len(q) && q[r].at < q[l].at {
			m = r
		}
		if q[i].at <= q[m].at {
			break
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
	return top
}

// eventRing is a FIFO of events added in nondecreasing time order, which
// makes it a priority queue with O(1) push and pop.
type eventRing struct {
	q          []event
	head, size int
}

func (r *eventRing) push(e event) {
	if r.size == len(r.q) {
		q := make([]event, 2*len(r.q)+16)
		for i := 0; i < r.size; i++ {
			q[i] = r.q[(r.head+i)%len(r.q)]
		}
		r.q, r.head = q, 0
	}
	r.q[(r.head+r.size)%len(r.q)] = e
	r.size++
}

func (r *eventRing) last() event { return r.q[(r.head+r.size-1)%len(r.q)] }

func (r *eventRing) pop() event {
	e := r.q[r.head]
	r.head = (r.head + 1) % len(r.q)
	r.size--
	return e
}

// scheduler is one goroutine and one timer for every client (no
// goroutine or ticker per client): a min-heap of due times, and a ring
// for each publisher's next publish. Every publisher publishes at the
// same interval and the next publish is added as the current one fires,
// in the order the events fall due, so those additions come in time
// order and a FIFO keeps them sorted: no heap push and pop (log2 of the
// number of clients levels each) per publish. Due events go to fire,
// which must not block for long.
type scheduler struct {
	mu   sync.Mutex
	h    eventHeap
	ring eventRing
	wake chan struct{}
	now  func() int64
}

func newScheduler(now func() int64, capacity int) *scheduler {
	return &scheduler{h: make(eventHeap, 0, capacity), ring: eventRing{q: make([]event, capacity)}, wake: make(chan struct{}, 1), now: now}
}

// add schedules e; safe from any goroutine.
func (s *scheduler) add(e event) {
	s.mu.Lock()
	s.h.push(e)
	s.signal(e.at)
}

// addNext schedules e, which is no earlier than any event addNext added
// before (a publisher's next publish, added as its current one fires); an
// earlier one goes to the heap, so the order is right either way. Safe
// from any goroutine.
func (s *scheduler) addNext(e event) {
	s.mu.Lock()
	if s.ring.size > 0 && e.at < s.ring.last().at {
		s.h.push(e)
	} else {
		s.ring.push(e)
	}
	s.signal(e.at)
}

// signal wakes the loop when an event due at at is now the first; it
// unlocks s.mu.
func (s *scheduler) signal(at int64) {
	first, _ := s.peek()
	s.mu.Unlock()
	if first == at {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// peek is the time of the first event; ok is false when there is none.
// s.mu must be held.
func (s *scheduler) peek() (at int64, ok bool) {
	switch {
	case len(s.h) > 0 && (s.ring.size == 0 || s.h[0].at <= s.ring.q[s.ring.head].at):
		return s.h[0].at, true
	case s.ring.size > 0:
		return s.ring.q[s.ring.head].at, true
	}
	return 0, false
}

// popFirst removes the first event; s.mu must be held and peek true.
func (s *scheduler) popFirst() event {
	if len(s.h) > 0 && (s.ring.size == 0 || s.h[0].at <= s.ring.q[s.ring.head].at) {
		return s.h.pop()
	}
	return s.ring.pop()
}

// loop fires events as they fall due until stop is closed. fire gets the
// event and the time it was dispatched; before runs at each wake-up,
// before anything due is fired.
func (s *scheduler) loop(stop <-chan struct{}, fire func(e event, now int64), before func()) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		before()
		s.mu.Lock()
		var wait time.Duration = time.Hour
		for {
			at, ok := s.peek()
			if !ok {
				break
			}
			now := s.now()
			if at > now {
				wait = time.Duration(at - now)
				break
			}
			e := s.popFirst()
			s.mu.Unlock()
			fire(e, now)
			select {
			case <-stop:
				return
			default:
			}
			s.mu.Lock()
		}
		s.mu.Unlock()
		t.Reset(wait)
		select {
		case <-stop:
			return
		case <-s.wake:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		case <-t.C:
		}
	}
}
