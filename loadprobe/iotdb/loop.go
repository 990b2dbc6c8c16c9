package iotdb

import (
	"context"
	"encoding/binary"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/rawsys"
)

// The event loop runs a closed-loop step of a one-call scenario (write,
// batch): one goroutine drives every worker of the step as a state
// machine over one epoll instance, with the same SessionPool semantics as
// the worker goroutines of runWorker (a slot and a session borrowed per
// operation and returned after it, --wait-timeout for a free slot, new
// sessions opened on demand and a broken one replaced, the call
// deadline, redirection, back-off after connect failures).
//
// Why: on a host whose CPUs the server shares, TPS is set by the CPU that
// client and server spend per operation together. With a goroutine per
// worker, every answer woke a thread of the Go scheduler (about 0.85
// context switches and 37-43 µs of client CPU per insertRecord at 8
// writers on 2 CPUs); the loop wakes once for the answers that arrived
// meanwhile (about 3 at 8 writers) and spends about 18-29 µs
// (bench/README.md). Latency is measured as before: from before the slot
// is taken to the answer's reading, each answer on the clock when the
// loop reads it (after the sends for the answers read before it in the
// same wake-up, as a busy client thread would see it).
//
// Sessions are opened off the loop (a goroutine each), so that a slow or
// dead node stalls only the worker waiting for it; an eventfd wakes the
// loop when one is done, and when the step's context ends. Nothing on the
// loop waits on a socket: a request the socket's send buffer cannot take
// at once is sent as it gets room (EPOLLOUT), an answer read as it
// arrives.

// lstate is where a worker of the loop stands.
type lstate int

const (
	lIdle    lstate = iota // about to begin its next operation
	lWaiting               // waiting for a free slot (until: the wait timeout)
	lOpening               // a session is being opened for it off the loop
	lCalling               // its call is in flight, its request maybe not all sent (until: the call deadline)
	lBackoff               // pausing after a connect failure (until: the pause's end)
	lDone                  // the step is over for it
)

// lworker is one worker of the loop.
type lworker struct {
	ops     *workerOps
	st      *workerStats
	rng     *mrand.Rand
	state   lstate
	began   time.Time
	kind    opKind
	s       *session
	until   time.Time
	backoff time.Duration
	// sending: its call's request is not all sent (the socket's send
	// buffer was full); ep watches its session for EPOLLOUT.
	sending bool
}

// opened is a session opened off the loop for worker w, or the error.
type opened struct {
	w   *lworker
	s   *session
	err error
}

// eventLoop is one step's loop.
type eventLoop struct {
	ctx     context.Context
	cancel  context.CancelFunc
	cfg     *Config
	p       *sessionPool
	lv      *liveness
	secs    *seconds
	start   time.Time
	end     time.Time
	workers []*lworker

	ep      int               // epoll instance
	efd     int               // eventfd: an open finished or ctx ended
	byFd    map[int]*lworker  // a session's descriptor -> the worker calling on it
	watched map[*session]bool // sessions whose descriptor is in ep
	opens   chan opened       // finished opens
	pending int               // opens not yet collected
	waiters []*lworker        // workers waiting for a slot, first come first served
	live    int               // workers not done
	due     time.Time         // the earliest until of any worker (zero: none)
	events  []unix.EpollEvent
	raw     bool // epollWait is a raw call (GOMAXPROCS > 1)
	// direct: PathDirect, the loop of one worker on a locked thread,
	// which waits for its answer in read(2) on the session's blocking
	// descriptor (directRead) rather than in epoll_wait.
	direct bool

	mu     sync.Mutex // guards closed against wake
	closed bool       // efd is closed or about to be
}

// loopable tells whether a step runs on the event loop: closed loop
// (no --rate) and an operation of one call, which is when the pool opens
// its sessions on rawConn.
func loopable(p *sessionPool) bool { return p.raw }

// runLoop runs n workers (global numbers first, first+1, ...) of a
// closed-loop step on an event loop, their tallies in stats. It returns
// when every worker is done: the step's duration is over and every call
// in flight answered (or failed), or ctx ended (calls in flight are then
// cut, each a censored latency and not an operation). direct runs one
// worker's loop for PathDirect (see directRead). Errors: setting up epoll
// or the eventfd failed (EMFILE: no descriptor left), before any
// operation; the caller then runs the step's workers as goroutines.
func runLoop(ctx context.Context, cancel context.CancelFunc, cfg *Config, p *sessionPool, w *workload, workers []int,
	start time.Time, stats []*workerStats, secs *seconds, lv *liveness, direct bool) error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return err
	}
	defer unix.Close(ep)
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return err
	}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}); err != nil {
		unix.Close(efd)
		return err
	}
	l := &eventLoop{ctx: ctx, cancel: cancel, cfg: cfg, p: p, lv: lv, secs: secs, start: start, end: start.Add(cfg.StepDuration),
		ep: ep, efd: efd, byFd: map[int]*lworker{}, watched: map[*session]bool{}, opens: make(chan opened, len(workers)),
		events: make([]unix.EpollEvent, max(16, len(workers)+1)), raw: runtime.GOMAXPROCS(0) > 1, direct: direct && len(workers) == 1}
	defer func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		unix.Close(efd)
	}()
	stopWake := context.AfterFunc(ctx, l.wake)
	defer stopWake()
	for i, g := range workers {
		rng := mrand.New(mrand.NewPCG(uint64(g), uint64(start.UnixNano())))
		l.workers = append(l.workers, &lworker{ops: w.newWorkerOps(g, rng), st: stats[i], rng: rng})
	}
	l.live = len(l.workers)
	for _, lw := range l.workers {
		l.begin(lw, time.Now())
	}
	for l.live > 0 {
		if ctx.Err() != nil {
			l.abort()
			break
		}
		if l.directRead() {
			l.tick(time.Now())
			continue
		}
		n, err := l.epollWait(l.timeout(time.Now()))
		if err != nil && err != unix.EINTR {
			// Not seen: epoll_wait fails only on a bad descriptor or
			// buffer. The step is cut as if interrupted, and said.
			slog.Error("iotdb probe: epoll_wait failed, step cut", "err", err)
			l.cancel()
			l.abort()
			break
		}
		for _, ev := range l.events[:max(n, 0)] {
			if int(ev.Fd) == efd {
				var b [8]byte
				_, _ = unix.Read(efd, b[:])
				continue
			}
			// Each answer is timed when it is read: after the sends
			// of the answers before it in this wake-up, as a client
			// thread would see it.
			l.ready(int(ev.Fd), ev.Events, time.Now())
		}
		l.tick(time.Now())
	}
	for _, lw := range l.workers {
		secs.flush(lw.st, 0)
	}
	return nil
}

// tick takes the sessions opened meanwhile and acts on the due times
// passed at now.
func (l *eventLoop) tick(now time.Time) {
	l.collect(now)
	if !l.due.IsZero() && !now.Before(l.due) {
		l.expire(now)
	}
}

// directRead is PathDirect's wait: when the loop's one worker has its
// request sent whole and no open is pending, it reads the answer from the
// session's blocking descriptor (a raw read(2) that holds the P, as the
// raw epoll_wait does, for at most directWait) and acts on it; true when
// it did. One system call per answer where the loop's wait takes two
// (epoll_wait, then read), and the thread is woken by the answer itself.
// Anything else (an open, a request not sent whole, a back-off) waits in
// epoll_wait as on PathLoop.
func (l *eventLoop) directRead() bool {
	if !l.direct || l.pending > 0 {
		return false
	}
	lw := l.workers[0]
	if lw.state != lCalling || lw.sending {
		return false
	}
	l.ready(lw.s.w.fd, unix.EPOLLIN, time.Now())
	return true
}

// wake wakes the loop from epoll_wait (an open finished, ctx ended);
// after close it does nothing (the eventfd's number may be reused).
func (l *eventLoop) wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(l.efd, one[:])
}

// maxWait bounds one epoll_wait (ms), so that the loop looks at the
// clock and the context at least this often whatever happens; rawMaxWait
// bounds one raw wait (see epollWait), which holds the loop's P.
const (
	maxWait    = 100
	rawMaxWait = 5
)

// epollWait waits up to ms for events on the loop's epoll set. With more
// than one P it is a raw call (rawsys.EpollWait, at most rawMaxWait): the
// loop keeps its P while it sleeps, which spares the hand-off of the P
// and sysmon's wake-ups around every wait (about a third of the CPU per
// operation at 1 writer, bench/README.md); other goroutines (opens, the
// sampler) run on the other Ps. With one P, where they would wait for
// the loop, it is a plain blocking call.
func (l *eventLoop) epollWait(ms int) (int, error) {
	if l.raw {
		return rawsys.EpollWait(l.ep, l.events, min(ms, rawMaxWait))
	}
	return unix.EpollWait(l.ep, l.events, ms)
}

// timeout is epoll_wait's timeout (ms) at now: until the earliest due
// time (rounded up), at most maxWait.
func (l *eventLoop) timeout(now time.Time) int {
	if l.due.IsZero() {
		return maxWait
	}
	d := l.due.Sub(now)
	if d <= 0 {
		return 0
	}
	return int(min((d+time.Millisecond-1)/time.Millisecond, maxWait))
}

// wait sets lw's state and due time.
func (l *eventLoop) wait(lw *lworker, state lstate, until time.Time) {
	lw.state, lw.until = state, until
	if l.due.IsZero() || until.Before(l.due) {
		l.due = until
	}
}

// begin starts lw's next operation at now, or ends lw when the step's
// time is over.
func (l *eventLoop) begin(lw *lworker, now time.Time) {
	if !now.Before(l.end) || l.ctx.Err() != nil {
		lw.state = lDone
		l.live--
		return
	}
	lw.began, lw.kind = now, lw.ops.next()
	if !l.p.trySlot() {
		l.p.waiting.Add(1)
		l.waiters = append(l.waiters, lw)
		l.wait(lw, lWaiting, now.Add(l.p.waitTimeout))
		return
	}
	l.slotted(lw, now)
}

// slotted gives lw, which holds a slot, a session: an idle one at once,
// or one opened off the loop.
func (l *eventLoop) slotted(lw *lworker, now time.Time) {
	l.p.inUse.Add(1)
	prefer := lw.ops.prefer
	if s := l.p.takeIdle(prefer); s != nil {
		l.call(lw, s, now)
		return
	}
	lw.state = lOpening
	l.pending++
	go func() {
		// The slot stays held when the open fails: collect frees it on
		// the loop and hands it on (a slot freed here could be taken by
		// a worker beginning meanwhile, ahead of the first waiter).
		s, err := l.p.sessionKeep(l.ctx, prefer)
		l.opens <- opened{w: lw, s: s, err: err}
		l.wake()
	}()
}

// collect takes the sessions opened meanwhile.
func (l *eventLoop) collect(now time.Time) {
	for l.pending > 0 {
		select {
		case o := <-l.opens:
			l.pending--
			if o.err != nil {
				l.p.release() // the failed open's slot, to the first waiter
				l.handOn(now)
				l.finish(o.w, 0, o.err, now)
				continue
			}
			l.call(o.w, o.s, now)
		default:
			return
		}
	}
}

// Events ep watches on a session's descriptor: answers (and the peer's
// end) always, room to send while a request is not all sent.
const (
	evRead  = unix.EPOLLIN | unix.EPOLLRDHUP
	evWrite = evRead | unix.EPOLLOUT
)

// call sends lw's operation on s. A request the socket does not take at
// once is sent as the socket gets room (ready), within the same call
// deadline.
func (l *eventLoop) call(lw *lworker, s *session, now time.Time) {
	lw.s = s
	deadline := now.Add(l.p.callTimeout)
	s.w.begin(deadline)
	// A session's descriptor blocks on PathDirect only (a blocking read
	// on the shared loop would hold every other worker).
	if err := s.w.setBlocking(l.direct); err != nil {
		l.settle(lw, 0, err, deadline, now)
		return
	}
	if !l.watched[s] {
		if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_ADD, s.w.fd, &unix.EpollEvent{Events: evRead, Fd: int32(s.w.fd)}); err != nil {
			l.settle(lw, 0, err, deadline, now)
			return
		}
		l.watched[s] = true
	}
	l.byFd[s.w.fd] = lw
	if _, err := guarded(func() (int64, error) { return 0, lw.ops.send(s) }); err != nil {
		l.settle(lw, 0, err, deadline, now)
		return
	}
	if s.w.unsent() > 0 {
		if err := l.watchOut(lw, true); err != nil {
			l.settle(lw, 0, err, deadline, now)
			return
		}
	}
	l.wait(lw, lCalling, deadline)
}

// watchOut starts (on) or stops watching lw's session for room to send.
// Errors: epoll_ctl's.
func (l *eventLoop) watchOut(lw *lworker, on bool) error {
	ev := uint32(evRead)
	if on {
		ev = evWrite
	}
	fd := lw.s.w.fd
	if err := unix.EpollCtl(l.ep, unix.EPOLL_CTL_MOD, fd, &unix.EpollEvent{Events: ev, Fd: int32(fd)}); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	lw.sending = on
	return nil
}

// errAnswerBeforeRequest is an answer that came whole before its
// request was all sent (the server broke the protocol); the call fails.
var errAnswerBeforeRequest = errors.New("the server answered before the request was sent whole")

// guarded runs f (a send or a decoding of the client's), a panic in it
// being a *panicError.
func guarded(f func() (int64, error)) (pts int64, err error) {
	defer func() {
		if v := recover(); v != nil {
			pts, err = 0, &panicError{where: "client call", value: v}
		}
	}()
	return f()
}

// ready acts on events (epoll's) on fd: it sends what the socket now
// takes of a request not all sent, and reads what arrived, the answer to
// the call in flight on fd when whole. A descriptor with no call in
// flight (a session idle in the pool whose server closed it or sent what
// nobody asked for) is taken out of the epoll set; its next call fails
// and replaces it.
func (l *eventLoop) ready(fd int, events uint32, now time.Time) {
	lw := l.byFd[fd]
	if lw == nil || lw.state != lCalling || lw.s == nil || lw.s.w.fd != fd {
		_ = unix.EpollCtl(l.ep, unix.EPOLL_CTL_DEL, fd, nil)
		for s := range l.watched {
			if s.w.fd == fd {
				delete(l.watched, s)
			}
		}
		delete(l.byFd, fd)
		return
	}
	if lw.sending {
		if err := lw.s.w.flushOut(); err != nil {
			l.settle(lw, 0, err, lw.until, now)
			return
		}
		if lw.s.w.unsent() == 0 {
			if err := l.watchOut(lw, false); err != nil {
				l.settle(lw, 0, err, lw.until, now)
				return
			}
		}
		if events&^unix.EPOLLOUT == 0 {
			return // room only: nothing to read
		}
	}
	whole, err := lw.s.w.fill()
	if err == nil && !whole {
		return
	}
	if err == nil && lw.sending {
		err = errAnswerBeforeRequest
	}
	var pts int64
	if err == nil {
		pts, err = guarded(func() (int64, error) { return lw.ops.recv(lw.s) })
	}
	l.settle(lw, pts, err, lw.until, now)
}

// settle ends lw's call (which had to end by deadline) with pts or err:
// the session goes back to the pool (closed when broken) and the
// operation is counted.
func (l *eventLoop) settle(lw *lworker, pts int64, err error, deadline, now time.Time) {
	var broken bool
	err, broken = l.p.settle(l.ctx, err, deadline, l.p.callTimeout)
	l.giveBack(lw, broken)
	l.handOn(now)
	l.finish(lw, pts, err, now)
}

// giveBack ends lw's call and puts its session back in the pool, closed
// when broken (closing the descriptor takes it out of ep).
func (l *eventLoop) giveBack(lw *lworker, broken bool) {
	s := lw.s
	lw.s, lw.sending = nil, false
	s.w.end()
	if broken {
		s.w.drop()
		delete(l.byFd, s.w.fd)
		delete(l.watched, s)
	}
	l.p.put(s, broken)
}

// handOn gives the slot just freed to the first worker waiting for one.
func (l *eventLoop) handOn(now time.Time) {
	if len(l.waiters) == 0 || !l.p.trySlot() {
		return
	}
	lw := l.waiters[0]
	l.waiters = l.waiters[1:]
	l.p.waiting.Add(-1)
	l.slotted(lw, now)
}

// finish counts lw's operation (ended with pts or err at now) and begins
// its next one, or its back-off after a connect failure. An operation cut
// because ctx ended is a censored latency only (workerStats.cut).
func (l *eventLoop) finish(lw *lworker, pts int64, err error, now time.Time) {
	if errors.Is(err, context.Canceled) && l.ctx.Err() != nil {
		lw.st.cut(lw.began, now)
		lw.state = lDone
		l.live--
		return
	}
	lw.st.record(l.secs, l.start, lw.began, now, lw.ops, lw.kind, pts, err)
	var stop bool
	if lw.backoff, stop = nextBackoff(err, lw.backoff, l.lv); stop {
		l.cancel() // the server is gone: end the step for every worker
		lw.state = lDone
		l.live--
		return
	}
	if lw.backoff > 0 {
		l.wait(lw, lBackoff, now.Add(jitter(lw.backoff, lw.rng)))
		return
	}
	l.begin(lw, now)
}

// expire acts on every due time that passed: a wait for a slot times
// out, a call's deadline passes (its session is closed), a back-off ends.
func (l *eventLoop) expire(now time.Time) {
	l.due = time.Time{}
	for _, lw := range l.workers {
		switch {
		case lw.state != lWaiting && lw.state != lCalling && lw.state != lBackoff:
			continue
		case now.Before(lw.until):
			if l.due.IsZero() || lw.until.Before(l.due) {
				l.due = lw.until
			}
			continue
		}
		switch lw.state {
		case lWaiting:
			l.unqueue(lw)
			l.finish(lw, 0, l.p.waitTimedOut(l.p.waitTimeout), now)
		case lCalling:
			l.settle(lw, 0, context.DeadlineExceeded, lw.until, now)
		case lBackoff:
			l.begin(lw, now)
		}
	}
}

// unqueue takes lw out of the workers waiting for a slot.
func (l *eventLoop) unqueue(lw *lworker) {
	for i, q := range l.waiters {
		if q == lw {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			l.p.waiting.Add(-1)
			return
		}
	}
}

// abort ends the step at once (ctx ended): calls in flight are cut
// (their sessions closed: they are mid-frame), waits end, and the loop
// waits for the opens still running (they end with ctx) to return their
// sessions. Each operation under way (calling, waiting for a slot or a
// session) is a latency censored at what it had waited (workerStats.cut).
func (l *eventLoop) abort() {
	now := time.Now()
	for _, lw := range l.workers {
		switch lw.state {
		case lCalling, lWaiting, lOpening:
			lw.st.cut(lw.began, now)
		}
		switch lw.state {
		case lCalling:
			l.giveBack(lw, true) // mid-frame
		case lWaiting:
			l.unqueue(lw)
		}
		lw.state = lDone
	}
	for ; l.pending > 0; l.pending-- {
		if o := <-l.opens; o.err == nil {
			l.p.put(o.s, false)
		} else {
			l.p.release()
		}
	}
	l.waiters, l.live = nil, 0
}
