package mqtt

import (
	"container/heap"
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

type eventHeap []event

func (h eventHeap) Len() int           { return len(h) }
func (h eventHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h eventHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)        { *h = append(*h, x.(event)) }
func (h *eventHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
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
	heap.Push(&s.h, e)
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
			e := heap.Pop(&s.h).(event)
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
