package mqtt

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"golang.org/x/sys/unix"
)

// poller reads what the broker sends to every plain-TCP publisher
// connection (PUBACK, PUBREC, PUBCOMP, PINGRESP) from one goroutine
// with its own level-triggered epoll set, instead of one reader goroutine
// per connection: no goroutine stack per idle connection, and one read
// per ack instead of a read plus an EAGAIN read and a goroutine wake-up.
// Writes still go through net.Conn. Reads use syscall.RawConn.Read, which
// holds the fd's reference so a concurrent Close cannot hand the fd
// number to another socket mid-read.
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
	c.raw = rc
	var cerr error
	err = rc.Control(func(fd uintptr) {
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP, Fd: int32(c.client)}
		cerr = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
	})
	if err != nil || cerr != nil {
		c.raw = nil
		return false
	}
	return true
}

// loop waits for readable publisher sockets until stop is closed, then
// closes the epoll set.
func (p *poller) loop(stop <-chan struct{}) {
	go func() { <-stop; _ = p.file.SetReadDeadline(time.Unix(1, 0)) }()
	defer p.file.Close()
	evs := make([]unix.EpollEvent, 256)
	for {
		var n int
		var werr error
		err := p.rc.Read(func(uintptr) bool {
			n, werr = unix.EpollWait(p.epfd, evs, 0)
			return n != 0 || (werr != nil && werr != syscall.EINTR)
		})
		if err != nil { // deadline set at stop, or closed
			return
		}
		if werr != nil {
			if errors.Is(werr, syscall.EINTR) {
				continue
			}
			return
		}
		for i := 0; i < n; i++ {
			id := int(evs[i].Fd)
			if id < 0 || id >= len(p.r.conns) {
				continue
			}
			if c := p.r.conns[id].Load(); c != nil && c.raw != nil {
				p.read(c)
			}
		}
	}
}

// read drains what is readable on c and handles every complete packet.
func (p *poller) read(c *conn) {
	var n int
	var rerr error
	err := c.raw.Read(func(fd uintptr) bool {
		n, rerr = unix.Read(int(fd), p.buf)
		return true
	})
	switch {
	case err != nil: // closed by us
		p.unregister(c)
		return
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
		used, perr := p.one(c, data)
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

// one handles the first packet in data; used is 0 when it is incomplete.
func (p *poller) one(c *conn, data []byte) (used int, err error) {
	if len(data) < 2 {
		return 0, nil
	}
	var pk packets.Packet
	if err := pk.FixedHeader.Decode(data[0]); err != nil {
		return 0, err
	}
	// Remaining length: up to 4 bytes of 7 bits.
	rem, mult, i := 0, 1, 1
	for ; ; i++ {
		if i >= len(data) {
			return 0, nil
		}
		if i > 4 {
			return 0, errors.New("malformed remaining length")
		}
		b := data[i]
		rem += int(b&127) * mult
		mult *= 128
		if b&128 == 0 {
			break
		}
	}
	end := i + 1 + rem
	if end > len(data) {
		return 0, nil
	}
	pk.FixedHeader.Remaining = rem
	if err := c.decode(&pk, data[i+1:end]); err != nil {
		return 0, err
	}
	if err := c.handle(&pk); err != nil {
		return 0, err
	}
	return end, nil
}

func (p *poller) unregister(c *conn) {
	_ = c.raw.Control(func(fd uintptr) {
		_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	})
}

// end accounts a polled connection that the broker closed or broke.
func (p *poller) end(c *conn, err error) {
	p.unregister(c)
	p.r.connEnded(c, err)
}
