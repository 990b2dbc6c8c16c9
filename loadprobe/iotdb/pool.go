package iotdb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iotdb-client-go/client"

	"github.com/hostprep/hostprep/internal/plural"
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
	openTimeout time.Duration // TCP connect of a new session, and again its OpenSession handshake
	// openSetting names openTimeout's setting in open errors
	// (Config.name("connect_timeout")).
	openSetting string
	callTimeout time.Duration // every call of the load (not the opening of a session)
	// adminTimeout bounds each setup and clean-up call and its wait for a
	// session (see admin): max(callTimeout, AdminCallTimeout).
	adminTimeout time.Duration
	// raw: sessions on rawConn, outside Go's netpoller (the run's steps
	// go on the event loop: loopable).
	raw bool

	sem  chan struct{}                // one token per session out (size slots)
	idle atomic.Pointer[idleSessions] // open sessions not in use, per node

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
	p := &sessionPool{
		nodes:        nodes,
		user:         cfg.User,
		password:     cfg.Password,
		fetch:        int32(cfg.FetchSize),
		size:         cfg.PoolSize,
		waitTimeout:  cfg.WaitTimeout,
		openTimeout:  cfg.ConnectTimeout,
		openSetting:  cfg.name("connect_timeout"),
		callTimeout:  cfg.CallTimeout,
		adminTimeout: max(cfg.CallTimeout, AdminCallTimeout),
		raw:          cfg.Rate == 0 && oneCall(cfg.Scenario),
		sem:          make(chan struct{}, cfg.PoolSize),
		live:         map[*session]struct{}{},
		nodeErrs:     map[string]string{},
	}
	in := &idleSessions{byNode: map[string]chan *session{}}
	for _, n := range nodes {
		in.add(n, cfg.PoolSize)
	}
	p.idle.Store(in)
	return p
}

// idleSessions are the idle sessions per node (host:port), copied on
// write: a node is added (a redirection target) under sessionPool.mu.
type idleSessions struct {
	order  []string
	byNode map[string]chan *session
}

func (in *idleSessions) add(node string, size int) {
	in.order = append(in.order, node)
	in.byNode[node] = make(chan *session, size) // never full: at most size sessions exist
}

// idleFor is node's idle channel, added if new.
func (p *sessionPool) idleFor(node string) chan *session {
	if ch, ok := p.idle.Load().byNode[node]; ok {
		return ch
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.idle.Load()
	if ch, ok := old.byNode[node]; ok {
		return ch
	}
	in := &idleSessions{order: slices.Clone(old.order), byNode: maps.Clone(old.byNode)}
	in.add(node, p.size)
	p.idle.Store(in)
	return in.byNode[node]
}

// takeIdle is an idle session of node ("": of any node, in node order), or
// nil.
func (p *sessionPool) takeIdle(node string) *session {
	in := p.idle.Load()
	if node != "" {
		select {
		case s := <-in.byNode[node]:
			return s
		default:
			return nil
		}
	}
	for _, n := range in.order {
		select {
		case s := <-in.byNode[n]:
			return s
		default:
		}
	}
	return nil
}

// opFunc is one probe operation on a session; it returns the number of
// points written or read. It must close any result set it opens.
type opFunc func(s *session) (points int64, err error)

// do borrows a session (waiting at most waitTimeout), runs op on it under
// the call deadline and returns it. The error, if any, is classified by
// classify: *waitTimeoutError, *connectError (no session could be opened),
// *deadlineError, *panicError, ctx's error when ctx ended mid-call, or the
// call's own error.
//
// prefer, when not "", is the node (host:port) the operation should go to
// (a redirection recommended by the server): an idle session there, else a
// new one there (closing an idle session elsewhere if the pool is full of
// sessions), else any session.
func (p *sessionPool) do(ctx context.Context, prefer string, op opFunc) (int64, error) {
	s, err := p.get(ctx, prefer)
	if err != nil {
		return 0, err
	}
	return p.call(ctx, s, op)
}

// get takes a slot (at once if one is free, else waiting up to
// waitTimeout) and an idle session (at prefer when set), or opens a new one.
func (p *sessionPool) get(ctx context.Context, prefer string) (*session, error) {
	return p.getWithin(ctx, prefer, p.waitTimeout)
}

// getWithin is get with a wait of at most wait for a slot.
func (p *sessionPool) getWithin(ctx context.Context, prefer string, wait time.Duration) (*session, error) {
	if !p.trySlot() {
		p.waiting.Add(1)
		t := time.NewTimer(wait)
		select {
		case p.sem <- struct{}{}:
			t.Stop()
			p.waiting.Add(-1)
		case <-t.C:
			p.waiting.Add(-1)
			return nil, p.waitTimedOut(wait)
		case <-ctx.Done():
			t.Stop()
			p.waiting.Add(-1)
			return nil, ctx.Err()
		}
	}
	p.inUse.Add(1)
	return p.session(ctx, prefer)
}

// trySlot takes a slot if one is free (without waiting).
func (p *sessionPool) trySlot() bool {
	select {
	case p.sem <- struct{}{}:
		return true
	default:
		return false
	}
}

// waitTimedOut is the error of a borrower that waited wait.
func (p *sessionPool) waitTimedOut(wait time.Duration) error {
	return &waitTimeoutError{err: fmt.Errorf("all %s in use for %v", plural.N(p.size, "session"), wait)}
}

// session is a session for the holder of a slot: an idle one (at prefer
// when set, else at any node) or a new one. When none can be had the slot
// is released and the error is *connectError, or ctx's error when ctx
// ended mid-dial.
func (p *sessionPool) session(ctx context.Context, prefer string) (*session, error) {
	s, err := p.sessionKeep(ctx, prefer)
	if err != nil {
		p.release()
	}
	return s, err
}

// sessionKeep is session, but when none can be had the slot stays held:
// the caller releases it. The event loop opens sessions in goroutines
// this way, so that it frees the slot of a failed open itself and hands
// it to the first worker waiting for one before any other can take it.
func (p *sessionPool) sessionKeep(ctx context.Context, prefer string) (*session, error) {
	if prefer != "" {
		if s := p.takeIdle(prefer); s != nil {
			return s, nil
		}
		if s := p.openAt(ctx, prefer); s != nil {
			return s, nil
		}
	}
	if s := p.takeIdle(""); s != nil {
		return s, nil
	}
	s, err := p.open(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // cancelled mid-dial: no connect failure
		}
		return nil, err
	}
	return s, nil
}

// openAt opens a session to node (a redirection target), first closing an
// idle session elsewhere when the pool already holds size sessions; nil
// when node does not answer (the caller falls back to any node).
func (p *sessionPool) openAt(ctx context.Context, node string) *session {
	p.mu.Lock()
	full := len(p.live) >= p.size
	p.mu.Unlock()
	if full {
		if s := p.takeIdle(""); s != nil {
			p.forget(s)
			s.close(false, p.callTimeout)
		}
	}
	s, err := p.openNode(ctx, node)
	if err != nil && ctx.Err() != nil {
		return nil // cut by ctx: no verdict on the node
	}
	if err != nil {
		p.mu.Lock()
		p.nodeErrs[node] = err.Error()
		p.mu.Unlock()
		return nil
	}
	p.idleFor(node)
	if !p.remember(s) {
		return nil
	}
	return s
}

// remember adds s to the live sessions; false (s closed) when the pool
// was closed meanwhile.
func (p *sessionPool) remember(s *session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		s.close(false, p.callTimeout)
		return false
	}
	p.live[s] = struct{}{}
	return true
}

// forget removes s from the live sessions (before closing it).
func (p *sessionPool) forget(s *session) {
	p.mu.Lock()
	delete(p.live, s)
	p.mu.Unlock()
}

// openNode opens a session to node (openSession), an openError naming
// the connect timeout's setting (openSetting).
func (p *sessionPool) openNode(ctx context.Context, node string) (*session, error) {
	s, err := openSession(ctx, node, p.user, p.password, p.openTimeout, p.fetch, p.raw)
	var oe *openError
	if errors.As(err, &oe) {
		oe.setting = p.openSetting
	}
	return s, err
}

// open opens a session to the first node that answers, starting with the
// one that answered last; a node that fails is remembered (UnreachableNodes).
func (p *sessionPool) open(ctx context.Context) (*session, error) {
	first := int(p.prefer.Load())
	var errs []error
	for i := range p.nodes {
		k := (first + i) % len(p.nodes)
		node := p.nodes[k]
		s, err := p.openNode(ctx, node)
		if err == nil {
			p.prefer.Store(int32(k))
			if !p.remember(s) {
				return nil, &connectError{err: errors.New("the session pool is closed")}
			}
			return s, nil
		}
		var ee *client.ExecutionError
		if errors.As(err, &ee) {
			return nil, err // the server answered: a refused login is no connect failure
		}
		if ctx.Err() != nil {
			return nil, ctx.Err() // cut by ctx: no verdict on the node
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
	return p.callWithin(ctx, s, p.callTimeout, op)
}

// callWithin is call with a deadline of d from now.
func (p *sessionPool) callWithin(ctx context.Context, s *session, d time.Duration, op opFunc) (n int64, err error) {
	deadline := time.Now().Add(d)
	s.w.begin(deadline)
	broken := true
	defer func() {
		s.w.end()
		if v := recover(); v != nil {
			n, err, broken = 0, &panicError{where: "client call", value: v}, true
		}
		p.put(s, broken || s.stale)
	}()
	n, err = op(s)
	err, broken = p.settle(ctx, err, deadline, d)
	return n, err
}

// settle is the outcome of a call that ended with err and had to end by
// deadline, d after it began: the error do returns (ctx's error when ctx
// ended, a *deadlineError naming d when the deadline passed, else err)
// and whether the session is broken (its connection failed or is
// mid-frame: anything but an answer from the server).
func (p *sessionPool) settle(ctx context.Context, err error, deadline time.Time, d time.Duration) (error, bool) {
	var ee *client.ExecutionError
	switch {
	case err == nil, errors.As(err, &ee), errors.Is(err, errNoStatus):
		return err, false // the server answered: the session is fine
	case ctx.Err() != nil:
		return ctx.Err(), true
	case !time.Now().Before(deadline) || isTimeout(err):
		return &deadlineError{d: d}, true
	}
	return err, true
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
		p.idleFor(s.node) <- s // never blocks: at most size sessions exist
	}
	p.release()
}

func (p *sessionPool) release() {
	p.inUse.Add(-1)
	<-p.sem
}

// interrupt makes every call in flight return at once (its deadline moved
// to now; its session is then closed): for a cancelled run. Idle sessions
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

// dropIdle closes the idle sessions without a CloseSession (the server
// ends a session whose connection closes), so that the next calls run
// on new ones: after a call lost its answer with its connection, the
// idle sessions may be just as dead (a proxy or a restart that reset
// them all), and each would fail a call in turn.
func (p *sessionPool) dropIdle() {
	for s := p.takeIdle(""); s != nil; s = p.takeIdle("") {
		p.forget(s)
		s.close(true, 0)
	}
}

// close closes the idle sessions (CloseSession, each bounded by d); a
// session in use is closed when it comes back.
func (p *sessionPool) close(d time.Duration) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	for s := p.takeIdle(""); s != nil; s = p.takeIdle("") {
		p.forget(s)
		s.close(false, d)
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
