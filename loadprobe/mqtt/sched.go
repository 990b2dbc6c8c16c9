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

// scheduler is one goroutine and one timer for every client: a min-heap
// of due times (no goroutine or ticker per client). Due events go to
// fire, which must not block for long.
type scheduler struct {
	mu   sync.Mutex
	h    eventHeap
	wake chan struct{}
	now  func() int64
}

func newScheduler(now func() int64, capacity int) *scheduler {
	return &scheduler{h: make(eventHeap, 0, capacity), wake: make(chan struct{}, 1), now: now}
}

// add schedules e; safe from any goroutine.
func (s *scheduler) add(e event) {
	s.mu.Lock()
	s.h.push(e)
	first := s.h[0].at == e.at
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// loop fires events as they fall due until stop is closed. fire gets the
// event and the time it was dispatched.
func (s *scheduler) loop(stop <-chan struct{}, fire func(e event, now int64)) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		s.mu.Lock()
		var wait time.Duration = time.Hour
		for len(s.h) > 0 {
			now := s.now()
			if s.h[0].at > now {
				wait = time.Duration(s.h[0].at - now)
				break
			}
			e := s.h.pop()
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
