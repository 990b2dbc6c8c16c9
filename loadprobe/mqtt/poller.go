package mqtt

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// poller reads what the broker sends to every plain-TCP publisher
// connection (PUBACK, PUBREC, PUBCOMP, PINGRESP) from one goroutine
// with its own level-triggered epoll set, instead of one reader goroutine
// per connection: no goroutine stack per idle connection, and one read
// per ack instead of a read plus an EAGAIN read and a goroutine wake-up.
// A polled connection's socket is a duplicate that the connection owns
// (conn.fd), outside Go's netpoller; reads and writes are raw system
// calls on it, and conn.fdMu keeps it from being closed mid-read.
//
// The epoll fd itself is registered with Go's netpoller (an epoll set is
// readable when it has ready events), so the poller goroutine parks like
// any network reader instead of sitting in a blocking epoll_wait, which
// would cost a thread hand-off and sysmon wake-ups per batch.
type poller struct {
	r    *run
	epfd int
	file *os.File
	rc   syscall.RawConn
	buf  []byte
}

func newPoller(r *run) (*poller, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "mqtt-epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &poller{r: r, epfd: fd, file: f, rc: rc, buf: make([]byte, 64<<10)}, nil
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

// loop waits for readable publisher sockets until stop is closed, then
// closes the epoll set.
//
// Everything happens inside one RawConn.Read of the epoll fd: the
// callback takes the ready sockets, reads them, and returns false to park
// until the netpoller reports the set readable again. Staying inside one
// Read keeps a readiness edge that arrives while the callback runs (it is
// kept by the pollDesc and ends the next park at once) without the extra
// empty epoll_wait per batch that a new Read (which resets that state)
// would need.
func (p *poller) loop(stop <-chan struct{}) {
	go func() { <-stop; _ = p.file.SetReadDeadline(time.Unix(1, 0)) }()
	defer p.file.Close()
	evs := make([]unix.EpollEvent, 256)
	_ = p.rc.Read(func(uintptr) bool {
		for {
			n, err := rawEpollPoll(p.epfd, evs)
			if err != nil {
				if errors.Is(err, syscall.EINTR) {
					continue
				}
				return true // epoll set broken: stop
			}
			for i := 0; i < n; i++ {
				id := int(evs[i].Fd)
				if id < 0 || id >= len(p.r.conns) {
					continue
				}
				if c := p.r.conns[id].Load(); c != nil && c.polled {
					p.read(c)
				}
			}
			if n < len(evs) {
				return false // drained: park until the set is readable
			}
		}
	}) // returns at stop (read deadline), on close or when the set broke
}

// read drains what is readable on c and handles every complete packet.
// The read(2) is under c.fdMu, which keeps c.fd open (see conn.fd).
func (p *poller) read(c *conn) {
	c.fdMu.Lock()
	if c.fd < 0 { // dead: already out of the set
		c.fdMu.Unlock()
		return
	}
	n, rerr := rawRead(c.fd, p.buf)
	c.fdMu.Unlock()
	now := p.r.now() // every packet this read returned had arrived by now
	switch {
	case rerr == unix.EAGAIN || rerr == unix.EINTR:
		return
	case rerr != nil:
		p.end(c, rerr)
		return
	case n == 0:
		p.end(c, io.EOF)
		return
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
			return
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
}

// end accounts a polled connection that the broker closed or broke
// (connEnded takes it out of the epoll set).
func (p *poller) end(c *conn, err error) {
	p.r.connEnded(c, err)
}
