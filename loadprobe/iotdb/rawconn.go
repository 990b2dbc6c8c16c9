package iotdb

import (
	"context"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/rawsys"
)

// rawConn is a TCP connection on a descriptor outside Go's netpoller,
// for the sessions of an event-loop run (see loop.go). A socket in the
// netpoller is in the runtime's epoll set too: every answer also woke the
// thread the scheduler parks in its netpoll (whenever a timer is pending
// anywhere in the process), about 10 µs of CPU per operation. Outside the
// event loop (opening and closing sessions, setup) reads and writes wait
// in poll(2) on the calling thread; the deadline is checked by poll's own
// timeout, so it arms no runtime timer either. Reads and writes are raw
// system calls (rawsys): non-blocking, they need not tell the runtime.
type rawConn struct {
	fd       int
	deadline atomic.Int64 // unix ns; 0: none
	closed   atomic.Bool
}

// pollSlice bounds one poll(2) wait (ms), so that a deadline moved by
// another goroutine (interrupt) is seen within it.
const pollSlice = 50

// dialRaw connects to node within timeout (or until ctx ends) and
// returns the connection on a descriptor of its own. Errors: the dial's,
// or dup(2)'s.
func dialRaw(ctx context.Context, node string, timeout time.Duration) (*rawConn, error) {
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", node)
	if err != nil {
		return nil, err
	}
	defer c.Close() // the netpoller's descriptor; rawConn keeps a dup
	sc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return nil, err
	}
	fd := -1
	var derr error
	if err := sc.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, os.NewSyscallError("dup", derr)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return &rawConn{fd: fd}, nil
}

// wait waits until fd is ready for events (POLLIN, POLLOUT) or the
// deadline passes (os.ErrDeadlineExceeded, a net.Error whose Timeout is
// true).
func (c *rawConn) wait(events int16) error {
	for {
		ms := pollSlice
		if dl := c.deadline.Load(); dl != 0 {
			left := time.Until(time.Unix(0, dl))
			if left <= 0 {
				return os.ErrDeadlineExceeded
			}
			ms = int(min((left+time.Millisecond-1)/time.Millisecond, pollSlice))
		}
		fds := []unix.PollFd{{Fd: int32(c.fd), Events: events}}
		n, err := unix.Poll(fds, ms)
		if err != nil && err != unix.EINTR {
			return os.NewSyscallError("poll", err)
		}
		if n > 0 {
			return nil
		}
	}
}

// Read reads into p, waiting for data until the deadline. io.EOF when
// the peer closed the connection.
func (c *rawConn) Read(p []byte) (int, error) {
	for {
		n, err := rawsys.Read(c.fd, p)
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := c.wait(unix.POLLIN); err != nil {
				return 0, err
			}
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		default:
			return n, nil
		}
	}
}

// Write writes all of p, waiting for room until the deadline
// (os.ErrDeadlineExceeded); it returns the bytes written and the error
// that stopped it. The event loop's sends do not come here: they never
// wait (wire's queue, rawOut).
func (c *rawConn) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := rawsys.Write(c.fd, p[done:])
		if n > 0 {
			done += n
		}
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			if err := c.wait(unix.POLLOUT); err != nil {
				return done, err
			}
		case err != nil:
			return done, os.NewSyscallError("write", err)
		}
	}
	return done, nil
}

// SetDeadline sets the time by which a Read or Write must end (zero:
// none); it takes effect within pollSlice for one already waiting.
func (c *rawConn) SetDeadline(t time.Time) error {
	if t.IsZero() {
		c.deadline.Store(0)
	} else {
		c.deadline.Store(t.UnixNano())
	}
	return nil
}

// Close closes the descriptor (which also takes it out of any epoll
// set), once: a second Close must not close a number reused meanwhile.
func (c *rawConn) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	return unix.Close(c.fd)
}
