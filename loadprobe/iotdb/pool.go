package iotdb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iotdb-client-go/client"
)

// countingPool wraps the client's SessionPool (tree model) with what the
// v1.3.7 pool does not give (see the package doc): a count of the sessions
// the probe has handed out and not yet put back, a deadline on taking a
// session and on every call, and recovery from panics inside the library.
//
// Every session taken is put back exactly once, by the goroutine that used
// it, after any result set it opened is closed; a call abandoned at its
// deadline keeps its session (counted as in use) until the call returns.
type countingPool struct {
	pool        client.SessionPool
	size        int
	user        string
	waitTimeout time.Duration
	openTimeout time.Duration // bound on constructing a new session (dial + OpenSession)
	callTimeout time.Duration

	mu     sync.RWMutex // putBack (read) against close (write)
	closed bool

	inUse     atomic.Int64 // sessions handed out and not yet put back
	abandoned atomic.Int64 // calls/opens still running past their deadline
	bg        sync.WaitGroup
}

func newCountingPool(cfg *Config) *countingPool {
	pc := &client.PoolConfig{
		Host:      cfg.Host,
		Port:      strconv.Itoa(cfg.Port),
		UserName:  cfg.User,
		Password:  cfg.Password,
		FetchSize: int32(cfg.FetchSize),
		TimeZone:  "UTC",
		// One reconnect attempt inside a failed call: the library retries
		// the call once after it, with no deadline of its own.
		ConnectRetryMax: 1,
	}
	return &countingPool{
		pool:        client.NewSessionPool(pc, cfg.PoolSize, int(cfg.ConnectTimeout/time.Millisecond), int(cfg.WaitTimeout/time.Millisecond), false),
		size:        cfg.PoolSize,
		user:        cfg.User,
		waitTimeout: cfg.WaitTimeout,
		openTimeout: cfg.ConnectTimeout + cfg.CallTimeout,
		callTimeout: cfg.CallTimeout,
	}
}

// opFunc is one probe operation on a session; it returns the number of
// points written or read. It must close any result set it opens.
type opFunc func(s *client.Session) (points int64, err error)

type getResult struct {
	s   client.Session
	err error
}

// do takes a session, runs op under the call deadline and puts the session
// back. The error, if any, is classified by classify.
func (p *countingPool) do(ctx context.Context, op opFunc) (int64, error) {
	// Take a session. GetSession bounds only the wait for a free slot;
	// opening a new session (dial + OpenSession RPC) is bounded here.
	got := make(chan getResult, 1)
	go func() {
		var r getResult
		defer func() {
			if v := recover(); v != nil {
				r = getResult{err: &panicError{where: "SessionPool.GetSession", value: v}}
			}
			got <- r
		}()
		r.s, r.err = p.pool.GetSession()
		if r.err == nil {
			p.inUse.Add(1)
		}
	}()
	t := time.NewTimer(p.waitTimeout + p.openTimeout)
	var s client.Session
	select {
	case r := <-got:
		t.Stop()
		if r.err != nil {
			return 0, wrapGetErr(r.err)
		}
		s = r.s
	case <-t.C:
		p.abandoned.Add(1)
		p.bg.Add(1)
		go func() { // put back whatever arrives late
			defer p.bg.Done()
			defer p.abandoned.Add(-1)
			if r := <-got; r.err == nil {
				p.putBack(r.s)
			}
		}()
		return 0, &connectError{err: fmt.Errorf("opening a session did not finish within %v", p.waitTimeout+p.openTimeout)}
	case <-ctx.Done():
		t.Stop()
		p.bg.Add(1)
		go func() {
			defer p.bg.Done()
			if r := <-got; r.err == nil {
				p.putBack(r.s)
			}
		}()
		return 0, ctx.Err()
	}

	// Run the call; the session goes back when the call returns, even if
	// that is after the deadline.
	type callResult struct {
		n   int64
		err error
	}
	done := make(chan callResult, 1)
	go func() {
		var r callResult
		defer func() {
			if v := recover(); v != nil {
				r = callResult{err: &panicError{where: "client call", value: v}}
			}
			p.putBack(s)
			done <- r
		}()
		r.n, r.err = op(&s)
	}()
	t = time.NewTimer(p.callTimeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.n, r.err
	case <-t.C:
	case <-ctx.Done():
	}
	p.abandoned.Add(1)
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		defer p.abandoned.Add(-1)
		<-done
	}()
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	return 0, &deadlineError{d: p.callTimeout}
}

// putBack returns s to the client's pool (which drops it if its socket is
// no longer open) and uncounts it. A panic in PutBack is swallowed: the
// library already recovers there and closes the session.
//
// A session coming back after close (a call abandoned at its deadline that
// returned late) is closed instead: PutBack on the closed pool would send
// on its closed channel.
func (p *countingPool) putBack(s client.Session) {
	defer func() { _ = recover() }()
	defer p.inUse.Add(-1)
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		_ = s.Close()
		return
	}
	defer p.mu.RUnlock()
	p.pool.PutBack(s)
}

// drain waits up to d for abandoned calls to return; it reports how many
// are still running.
func (p *countingPool) drain(d time.Duration) int64 {
	done := make(chan struct{})
	go func() { p.bg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
	}
	return p.abandoned.Load()
}

// close closes the client's pool (which sends CloseSession, with no
// deadline, for every idle session) bounded by d.
func (p *countingPool) close(d time.Duration) error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		p.pool.Close()
	}()
	select {
	case <-done:
		return nil
	case <-time.After(d):
		return fmt.Errorf("closing the session pool did not finish within %v", d)
	}
}

// Error classes of failed operations, as reported in Step.ErrorsByClass.
const (
	// ClassWaitTimeout: no session became free within --wait-timeout
	// (pool exhausted).
	ClassWaitTimeout = "wait_timeout"
	// ClassConnect: a session could not be opened, or its connection was
	// lost (refused, reset, EOF) and the library's reconnect failed.
	ClassConnect = "connect"
	// ClassStatus: the server answered with a non-success TSStatus code
	// (see Step.StatusCodes).
	ClassStatus = "status"
	// ClassDeadline: the call did not return within --call-timeout (the
	// probe's own deadline; the client sets no socket timeout).
	ClassDeadline = "deadline"
	// ClassPanic: the client library panicked; the worker recovered.
	ClassPanic = "panic"
	// ClassOther: anything else (protocol errors, bad responses).
	ClassOther = "other"
)

// Classes lists the error classes in report order.
var Classes = []string{ClassWaitTimeout, ClassConnect, ClassStatus, ClassDeadline, ClassPanic, ClassOther}

type panicError struct {
	where string
	value any
}

func (e *panicError) Error() string { return fmt.Sprintf("panic in %s: %v", e.where, e.value) }

type deadlineError struct{ d time.Duration }

func (e *deadlineError) Error() string { return fmt.Sprintf("call did not return within %v", e.d) }

type connectError struct{ err error }

func (e *connectError) Error() string { return "session: " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

type waitTimeoutError struct{ err error }

func (e *waitTimeoutError) Error() string { return "no free session: " + e.err.Error() }
func (e *waitTimeoutError) Unwrap() error { return e.err }

// wrapGetErr sorts GetSession's errors: the library's unexported
// "get session timeout" is a wait timeout, everything else a failure to
// open a session.
func wrapGetErr(err error) error {
	var pe *panicError
	if errors.As(err, &pe) {
		return err
	}
	if err.Error() == "get session timeout" {
		return &waitTimeoutError{err: err}
	}
	return &connectError{err: err}
}
