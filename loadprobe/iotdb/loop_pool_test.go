package iotdb

import (
	"context"
	mrand "math/rand/v2"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
)

// The slot of a session that failed to open off the loop goes to the
// first worker waiting for one, as any freed slot does. The open's
// goroutine freed the slot itself before the loop collected the failure,
// so a worker beginning in between (its answer read in the same wake-up)
// took it ahead of the worker that had waited longest.
//
// The loop's steps are driven here one by one: worker a opens a session
// (the pool's only slot) to a node that takes the connection; b queues
// for the slot; the node drops the connection (a's open fails); c begins
// before the loop collects the failure; then the loop collects it.
func TestLoopFailedOpenHandsItsSlotToTheFirstWaiter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	defer func() {
		for {
			select {
			case c := <-accepted:
				c.Close()
			default:
				return
			}
		}
	}()
	cfg := Config{NodeURLs: []string{ln.Addr().String()}, Scenario: ScenarioWrite, PoolSize: 1,
		StepDuration: time.Minute, WaitTimeout: time.Minute, CallTimeout: time.Minute}.withDefaults()
	p := newSessionPool(&cfg)
	defer p.close(time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	now := time.Now()
	w := newWorkload(&cfg, "root.hostprep_fifo")
	l := &eventLoop{ctx: ctx, cancel: cancel, cfg: &cfg, p: p, lv: newLiveness(cfg.UnreachableAfter), secs: &seconds{},
		start: now, end: now.Add(cfg.StepDuration), byFd: map[int]*lworker{}, watched: map[*session]bool{},
		opens: make(chan opened, 3), closed: true} // closed: no eventfd to wake
	for i := range 3 {
		rng := mrand.New(mrand.NewPCG(uint64(i), 1))
		l.workers = append(l.workers, &lworker{ops: w.newWorkerOps(i, rng), st: newWorkerStats(), rng: rng})
	}
	l.live = len(l.workers)
	a, b, c := l.workers[0], l.workers[1], l.workers[2]
	defer func() {
		cancel() // ends the opens still running
		l.abort()
	}()

	l.begin(a, time.Now())
	if a.state != lOpening {
		t.Fatalf("a: state %d, want opening", a.state)
	}
	var conn net.Conn
	select {
	case conn = <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("a's open never connected")
	}
	l.begin(b, time.Now())
	if b.state != lWaiting {
		t.Fatalf("b: state %d, want waiting (the only slot is a's)", b.state)
	}
	conn.Close() // a's open fails
	testenv.WaitFor(t, 5*time.Second, "a's open to fail", func() bool { return len(l.opens) > 0 })
	l.begin(c, time.Now())
	l.collect(time.Now())
	if b.state != lOpening || c.state != lWaiting || !slices.Equal(l.waiters, []*lworker{c}) {
		t.Errorf("after a's failed open: b state %d, c state %d, %d waiting; want b opening on the freed slot and c waiting",
			b.state, c.state, len(l.waiters))
	}
	if a.st.byClass[ClassConnect] != 1 {
		t.Errorf("a's failed open counted as %v, want one connect error", a.st.byClass)
	}
}
