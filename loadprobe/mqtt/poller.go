package mqtt

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/rawsys"
)

// poller reads what the broker sends to every plain-TCP publisher
// connection (PUBACK, PUBREC, PUBCOMP, PINGRESP) from one level-triggered
// epoll set, instead of one reader goroutine per connection: no goroutine
// stack per idle connection, and one read per ack. A polled connection's
// socket is a duplicate that the connection owns (conn.fd), outside Go's
// netpoller; reads and writes are raw system calls on it, and conn.fdMu
// keeps it from being closed mid-read.
//
// It works in two modes:
//
//   - tick mode, during the ramp and the steady window (QoS 0 and 1): the
//     scheduler goroutine drains the set each time it wakes up to publish
//     (drain), before firing anything, so acks cost no wake-up of their
//     own (a wake-up per ack burst was the largest part of the probe's
//     CPU per message: bench/README.md). Each socket has SO_TIMESTAMPNS on, and a
//     read takes one ack's worth of bytes (ackReadSize) and the kernel's
//     receive time of the segment that carried them, so an ack is timed
//     when it arrived, not when the probe got to it
//     (TestInjectedAckDelayReadBack);
//   - readiness mode, from the end of the window (handOff), or from the
//     start at QoS 2 (readiness): loop parks on the epoll fd, registered
//     with Go's netpoller (an epoll set is readable when it has ready
//     events), and reads each socket as it becomes readable, timing what
//     it reads by the clock, as the drain waits for the last acks with no
//     publishes to wake the scheduler. The acks already waiting at the
//     hand-off are read first in tick mode, with their receive
//     timestamps: the last publishes of a window may be up to a publish
//     interval old by then (TestAckLatencyNotBoundToPublishInterval).
//
// QoS 2 has no tick mode: a PUBREC must be answered (PUBREL) when it
// arrives, as the PUBCOMP that ends the exchange comes only after it. In
// tick mode a PUBREC waited for the scheduler's next wake-up, up to a
// publish interval, and that wait was reported as the broker's latency
// (1 client at 1 s: publish->PUBCOMP ~1 s on loopback; 20 clients: p95
// ~90 ms, the gaps between wake-ups). QoS 2 publishers are read as their
// packets arrive, one wake-up per ack burst, so the QoS 2 ack latency is
// PUBLISH->PUBREC, the probe's turnaround (a wake-up, a read and the
// PUBREL write: tens of µs) and PUBREL->PUBCOMP, timed by the clock when
// the PUBCOMP is read.
type poller struct {
	r    *run
	epfd int
	file *os.File
	rc   syscall.RawConn
	buf  []byte
	evs  []unix.EpollEvent
	oob  []byte
	// mu makes drains one at a time: the scheduler's in tick mode, loop's
	// after the hand-off (from the start in readiness).
	mu   sync.Mutex
	tick atomic.Bool
	// readiness: no tick mode at all (QoS 2); loop reads from the start.
	readiness bool
	handoff   chan struct{}
	once      sync.Once
}

// ackReadSize is how many bytes a tick-mode read takes: one PUBACK,
// PUBREC or PUBCOMP of MQTT 3.1.1 (or 5 with reason code Success omitted,
// as mosquitto sends it), so that the receive timestamp of a read is the
// arrival of that ack even when several wait on the socket (TCP reports
// the time of the last segment a read took data from). Longer packets
// take several reads; a PINGRESP (2 bytes) shares one with the next ack's
// first bytes, whose segment's time is the one that counts.
const ackReadSize = 4

func newPoller(r *run) (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	p := &poller{r: r, epfd: fd, buf: make([]byte, 64<<10), evs: make([]unix.EpollEvent, 256),
		oob: make([]byte, unix.CmsgSpace(16)), handoff: make(chan struct{})}
	p.readiness = r.cfg.QoS == 2
	p.tick.Store(!p.readiness)
	return p, nil
}

// keepTimestamps turns the kernel's receive timestamps on for as long as
// the run lasts, from before its subscribers connect: Linux stamps
// received packets only while some socket asks for it, and turns that on
// in deferred work after the first one does, so an ack that arrived in
// the first moments after the first publisher's socket asked (a client's
// first slot is its connect time) had no timestamp and was timed at the
// scheduler's next wake-up, up to a publish interval late. One UDP
// socket with SO_TIMESTAMPNS keeps it on; the returned func closes it.
// Nothing to do when the socket cannot be made (the poller then times
// what has no timestamp by its read, as before).
func keepTimestamps() (closeIt func()) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return func() {}
	}
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) != nil {
		_ = unix.Close(fd)
		return func() {}
	}
	return func() { _ = unix.Close(fd) }
}

// watch registers the epoll fd with Go's netpoller, for readiness mode.
// Not before: the netpoller would wake the probe for every ack that
// arrives in tick mode, to no use.
func (p *poller) watch() error {
	if err := unix.SetNonblock(p.epfd, true); err != nil {
		return err
	}
	p.file = os.NewFile(uintptr(p.epfd), "mqtt-epoll")
	rc, err := p.file.SyscallConn()
	if err != nil {
		return err
	}
	p.rc = rc
	return nil
}

// add registers publisher c; false when c cannot be polled (TLS).
func (p *poller) add(c *conn) bool {
	tc, ok := c.nc.(*net.TCPConn)
	if !ok {
		return false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return false
	}
	// A duplicate of the socket, for c alone: closing nc then takes the
	// socket out of Go's netpoller, which would otherwise get a second
	// readiness event (and the probe a second epoll_wait entry to walk)
	// for every ack.
	var cerr error
	sock := -1
	err = rc.Control(func(fd uintptr) {
		sock, cerr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	if err != nil || cerr != nil {
		return false
	}
	// Kernel receive timestamps for tick mode; a socket without them is
	// not polled (its connection gets a reader goroutine).
	if err := unix.SetsockoptInt(sock, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		_ = unix.Close(sock)
		return false
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.client)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, sock, &ev); err != nil {
		_ = unix.Close(sock)
		return false
	}
	_ = c.nc.Close() // the socket stays open: sock refers to it
	c.mu.Lock()      // c is not shared yet; for the race detector's sake
	c.fdMu.Lock()
	c.polled, c.fd = true, sock
	c.fdMu.Unlock()
	c.mu.Unlock()
	return true
}

// handOff ends tick mode: from now on loop reads the sockets as they
// become readable (in readiness from the start it already does). Safe to
// call more than once.
func (p *poller) handOff() { p.once.Do(func() { close(p.handoff) }) }

// drainTick is the scheduler's drain in tick mode (nothing after the
// hand-off).
func (p *poller) drainTick() {
	if p.tick.Load() {
		p.drain()
	}
}

// loop waits for the hand-off (or stop; not in readiness from the
// start), then reads the sockets as they become readable until stop is
// closed, and closes the epoll set.
//
// In readiness mode everything happens inside one RawConn.Read of the
// epoll fd: the callback drains the set and returns false to park until
// the netpoller reports it readable again. Staying inside one Read keeps
// a readiness edge that arrives while the callback runs (it is kept by
// the pollDesc and ends the next park at once) without the extra empty
// epoll_wait per batch that a new Read (which resets that state) would
// need.
func (p *poller) loop(stop <-chan struct{}) {
	if !p.readiness {
		select {
		case <-stop:
			_ = unix.Close(p.epfd)
			return
		case <-p.handoff:
		}
		// The acks that arrived since the scheduler's last wake-up wait
		// on the sockets, some for up to a publish interval: one last
		// tick-mode drain reads them with their kernel receive times (the
		// clock after the hand-off would time them that much late), then
		// readiness mode reads whatever comes after.
		p.mu.Lock()
		p.drainLocked(true)
		p.tick.Store(false)
		p.mu.Unlock()
	}
	if err := p.watch(); err != nil {
		p.pollEvery(stop, time.Millisecond)
		return
	}
	defer p.file.Close()
	go func() { <-stop; _ = p.file.SetReadDeadline(time.Unix(1, 0)) }()
	_ = p.rc.Read(func(uintptr) bool {
		return p.drain() // park while the set is drained and not broken
	}) // returns at stop (read deadline), on close or when the set broke
}

// pollEvery drains the set every d until stop: readiness mode where the
// epoll fd cannot join Go's netpoller.
func (p *poller) pollEvery(stop <-chan struct{}, d time.Duration) {
	defer func() {
		if p.file != nil {
			_ = p.file.Close()
		} else {
			_ = unix.Close(p.epfd)
		}
	}()
	t := time.NewTicker(d)
	defer t.Stop()
	for !p.drain() {
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// drain reads every socket of the set that has data. In tick mode a
// read takes one ack (ackReadSize) and the set is asked again until it
// has nothing ready; in readiness mode a read takes what is there and
// one short epoll_wait ends the drain. It returns true when the epoll set
// is broken.
func (p *poller) drain() (broken bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drainLocked(p.tick.Load())
}

// drainLocked is drain in tick mode (tick) or readiness mode; p.mu must
// be held.
func (p *poller) drainLocked(tick bool) (broken bool) {
	var clk clockPair
	if tick {
		clk = p.r.clockPair()
	}
	for {
		n, err := rawsys.EpollPoll(p.epfd, p.evs)
		if err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return true
		}
		progress := false
		for i := 0; i < n; i++ {
			id := int(p.evs[i].Fd)
			if id < 0 || id >= len(p.r.conns) {
				continue
			}
			if c := p.r.conns[id].Load(); c != nil && c.polled {
				progress = p.read(c, tick, &clk) || progress
			}
		}
		// In tick mode the set is asked again while reads take data: a
		// socket reported ready that nothing could be read from (its
		// connection not yet published in r.conns, a spurious wake-up)
		// must not keep the scheduler here until it can.
		if tick && !progress || !tick && n < len(p.evs) {
			return false
		}
	}
}

// read reads what c has (one ack's worth in tick mode) and handles every
// complete packet; progress is false when nothing could be read. The read(2) is under c.fdMu, which keeps c.fd open
// (see conn.fd). In tick mode packets are timed by the kernel's receive
// timestamp (clk converts it to the run's clock), else by the clock
// after the read.
func (p *poller) read(c *conn, tick bool, clk *clockPair) (progress bool) {
	c.fdMu.Lock()
	if c.fd < 0 { // dead: already out of the set
		c.fdMu.Unlock()
		return false
	}
	var n int
	var rerr error
	var now int64
	if tick {
		var ts int64
		n, ts, rerr = rawsys.RecvTimestamped(c.fd, p.buf[:ackReadSize], p.oob)
		now = clk.run(ts)
	} else {
		n, rerr = rawsys.Read(c.fd, p.buf)
		now = p.r.now() // every packet this read returned had arrived by now
	}
	c.fdMu.Unlock()
	switch {
	case rerr == unix.EAGAIN || rerr == unix.EINTR:
		return false
	case rerr != nil:
		p.end(c, rerr)
		return true
	case n == 0:
		p.end(c, io.EOF)
		return true
	}
	data := p.buf[:n]
	if len(c.pending) > 0 {
		c.pending = append(c.pending, data...)
		data = c.pending
	}
	for {
		used, perr := c.handleNext(data, now)
		if perr != nil {
			p.end(c, perr)
			return true
		}
		if used == 0 {
			break
		}
		data = data[used:]
	}
	if len(data) > 0 {
		c.pending = append(c.pending[:0], data...)
	} else {
		c.pending = nil
	}
	return true
}

// end accounts a polled connection that the broker closed or broke
// (connEnded takes it out of the epoll set).
func (p *poller) end(c *conn, err error) {
	p.r.connEnded(c, err)
}
