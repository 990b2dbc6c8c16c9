package iotdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iotdb-client-go/client"
)

// sessionPool is the probe's SessionPool: at most size sessions, borrowed
// by a worker for one operation and returned after it, a wait of at most
// waitTimeout for a free one, new sessions opened on demand (to the first
// node of nodes that answers), and a session whose connection failed
// dropped so that the next borrower opens a new one (the reconnect).
//
// It replaces client.SessionPool (v1.3.7) for the per-operation cost: no
// goroutine, channel or timer per call (a timer only when a worker has to
// wait), the call deadline set on the connection (see session), and a
// count of sessions in use and of workers waiting, which the v1.3.7 pool
// does not keep. Every session taken is put back exactly once, by the
// goroutine that used it.
type sessionPool struct {
	nodes       []string
	user        string
	password    string
	fetch       int32
	size        int
	waitTimeout time.Duration
	openTimeout time.Duration // TCP connect of a new session
	callTimeout time.Duration // every call, OpenSession included

	sem  chan struct{} // one token per session out (size slots)
	idle chan *session // open sessions not in use

	inUse   atomic.Int64 // sessions handed out and not yet put back
	waiting atomic.Int64 // workers waiting for a free slot
	prefer  atomic.Int32 // index in nodes of the last node that opened a session

	mu       sync.Mutex
	closed   bool
	live     map[*session]struct{} // every open session, for interrupt and close
	nodeErrs map[string]string     // node -> the last error opening a session there
}

func newSessionPool(cfg *Config) *sessionPool {
	nodes := cfg.NodeURLs
	if len(nodes) == 0 {
		nodes = []string{cfg.addr()}
	}
	return &sessionPool{
		nodes:       nodes,
		user:        cfg.User,
		password:    cfg.Password,
		fetch:       int32(cfg.FetchSize),
		size:        cfg.PoolSize,
		waitTimeout: cfg.WaitTimeout,
		openTimeout: cfg.ConnectTimeout,
		callTimeout: cfg.CallTimeout,
		sem:         make(chan struct{}, cfg.PoolSize),
		idle:        make(chan *session, cfg.PoolSize),
		live:        map[*session]struct{}{},
		nodeErrs:    map[string]string{},
	}
}

// opFunc is one probe operation on a session; it returns the number of
// points written or read. It must close any result set it opens.
type opFunc func(s *session) (points int64, err error)

// do borrows a session (waiting at most waitTimeout), runs op on it under
// the call deadline and returns it. The error, if any, is classified by
// classify: *waitTimeoutError, *connectError (no session could be opened),
// *deadlineError, *panicError, ctx's error when ctx ended mid-call, or the
// call's own error.
func (p *sessionPool) do(ctx context.Context, op opFunc) (int64, error) {
	s, err := p.get(ctx)
	if err != nil {
		return 0, err
	}
	return p.call(ctx, s, op)
}

// get takes a slot (at once if one is free, else waiting up to
// waitTimeout) and an idle session, or opens a new one.
func (p *sessionPool) get(ctx context.Context) (*session, error) {
	select {
	case p.sem <- struct{}{}:
	default:
		p.waiting.Add(1)
		t := time.NewTimer(p.waitTimeout)
		select {
		case p.sem <- struct{}{}:
			t.Stop()
			p.waiting.Add(-1)
		case <-t.C:
			p.waiting.Add(-1)
			return nil, &waitTimeoutError{err: fmt.Errorf("all %d sessions in use for %v", p.size, p.waitTimeout)}
		case <-ctx.Done():
			t.Stop()
			p.waiting.Add(-1)
			return nil, ctx.Err()
		}
	}
	p.inUse.Add(1)
	select {
	case s := <-p.idle:
		return s, nil
	default:
	}
	s, err := p.open(ctx)
	if err != nil {
		p.release()
		if ctx.Err() != nil {
			return nil, ctx.Err() // cancelled mid-dial: no connect failure
		}
		return nil, err
	}
	return s, nil
}

// open opens a session to the first node that answers, starting with the
// one that answered last; a node that fails is remembered (UnreachableNodes).
func (p *sessionPool) open(ctx context.Context) (*session, error) {
	first := int(p.prefer.Load())
	var errs []error
	for i := range p.nodes {
		k := (first + i) % len(p.nodes)
		node := p.nodes[k]
		s, err := openSession(ctx, node, p.user, p.password, p.openTimeout, p.callTimeout, p.fetch)
		if err == nil {
			p.prefer.Store(int32(k))
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.closed {
				s.close(false, p.callTimeout)
				return nil, &connectError{err: errors.New("the session pool is closed")}
			}
			p.live[s] = struct{}{}
			return s, nil
		}
		var ee *client.ExecutionError
		if errors.As(err, &ee) {
			return nil, err // the server answered: a refused login is no connect failure
		}
		p.mu.Lock()
		p.nodeErrs[node] = err.Error()
		p.mu.Unlock()
		errs = append(errs, fmt.Errorf("%s: %w", node, err))
	}
	return nil, &connectError{err: errors.Join(errs...)}
}

// call runs op on s under the call deadline and puts s back (closing it
// when its connection failed or it is mid-frame).
func (p *sessionPool) call(ctx context.Context, s *session, op opFunc) (n int64, err error) {
	deadline := time.Now().Add(p.callTimeout)
	s.w.begin(deadline)
	broken := true
	defer func() {
		s.w.end()
		if v := recover(); v != nil {
			n, err = 0, &panicError{where: "client call", value: v}
		}
		p.put(s, broken)
	}()
	n, err = op(s)
	var ee *client.ExecutionError
	switch {
	case err == nil, errors.As(err, &ee), errors.Is(err, errNoStatus):
		broken = false // the server answered: the session is fine
	case ctx.Err() != nil:
		err = ctx.Err()
	case !time.Now().Before(deadline) || isTimeout(err):
		err = &deadlineError{d: p.callTimeout}
	}
	return n, err
}

// isTimeout tells a network timeout (the connection's deadline passed).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// put returns s to the idle sessions, or closes it when broken or when
// the pool was closed, and frees its slot.
func (p *sessionPool) put(s *session, broken bool) {
	p.mu.Lock()
	closed := p.closed
	if broken || closed {
		delete(p.live, s)
	}
	p.mu.Unlock()
	if broken || closed {
		s.close(broken, p.callTimeout)
	} else {
		p.idle <- s // never blocks: at most size sessions exist
	}
	p.release()
}

func (p *sessionPool) release() {
	p.inUse.Add(-1)
	<-p.sem
}

// interrupt makes every call in flight return at once (its socket shut
// down; its session is then closed): for a cancelled run. Idle sessions
// stay usable (for the clean-up).
func (p *sessionPool) interrupt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for s := range p.live {
		s.w.interrupt()
	}
}

// unreachable lists the nodes where opening a session failed, with the
// last error, "host:port: error" each, in the order of nodes.
func (p *sessionPool) unreachable() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, n := range p.nodes {
		if e, ok := p.nodeErrs[n]; ok {
			out = append(out, n+": "+e)
		}
	}
	return out
}

// close closes the idle sessions (CloseSession, each bounded by d); a
// session in use is closed when it comes back.
func (p *sessionPool) close(d time.Duration) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for {
		select {
		case s := <-p.idle:
			p.mu.Lock()
			delete(p.live, s)
			p.mu.Unlock()
			s.close(false, d)
		default:
			return
		}
	}
}

// Error classes of failed operations, as reported in Step.ErrorsByClass.
const (
	// ClassWaitTimeout: no session became free within --wait-timeout
	// (pool exhausted).
	ClassWaitTimeout = "wait_timeout"
	// ClassConnect: a session could not be opened, or its connection was
	// lost (refused, reset, EOF); the next operation opens a new session.
	ClassConnect = "connect"
	// ClassStatus: the server answered with a non-success TSStatus code
	// (see Step.StatusCodes).
	ClassStatus = "status"
	// ClassDeadline: the call did not return within --call-timeout (the
	// deadline set on the session's connection; the session is closed).
	ClassDeadline = "deadline"
	// ClassPanic: the client library (its Thrift stubs or result-set
	// decoding) panicked; the worker recovered.
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
