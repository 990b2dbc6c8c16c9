package iotdb

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// wire is a session's TCP connection driven with blocking read(2) and
// write(2) on the calling goroutine's thread, as the Java client's
// thread-per-worker does: a call costs one write and (usually) one read.
// Through Go's netpoller the same call costs a read that fails with EAGAIN,
// a park, an epoll_wait and a wake-up of the goroutine on another thread,
// which at low concurrency made each operation about 0.1 ms slower and
// doubled its CPU (bench/iotdb).
//
// The call deadline is a socket receive/send timeout (SO_RCVTIMEO,
// SO_SNDTIMEO): set once to the call timeout, shortened only when a call
// needs a second read, and checked before every read, so a call never runs
// past its deadline. interrupt shuts the socket down (a blocked read
// returns at once). It implements thrift.TTransport for the framed
// transport: writes are buffered and flushed in one write(2).
type wire struct {
	f        *os.File // owns fd
	fd       int
	bw       *bufio.Writer
	timeout  time.Duration // the call timeout: the socket timeout between calls
	sockTO   time.Duration // the socket timeout set now
	deadline time.Time     // of the call in progress
	busy     atomic.Bool   // a call is in progress (interrupt cuts only those)
}

// dialWire connects to node within connectTimeout (or until ctx ends) and
// puts the socket in blocking mode with timeout as its receive and send
// timeout.
func dialWire(ctx context.Context, node string, connectTimeout, timeout time.Duration) (*wire, error) {
	d := net.Dialer{Timeout: connectTimeout}
	c, err := d.DialContext(ctx, "tcp", node)
	if err != nil {
		return nil, err
	}
	f, err := c.(*net.TCPConn).File() // a dup of the socket
	c.Close()
	if err != nil {
		return nil, err
	}
	w := &wire{f: f, fd: int(f.Fd()), timeout: timeout} // Fd puts the socket in blocking mode
	w.bw = bufio.NewWriterSize(rawWriter{w}, writeBuffer)
	if err := w.setTimeout(timeout); err != nil {
		f.Close()
		return nil, err
	}
	tv := syscall.NsecToTimeval(int64(timeout))
	if err := syscall.SetsockoptTimeval(w.fd, syscall.SOL_SOCKET, syscall.SO_SNDTIMEO, &tv); err != nil {
		f.Close()
		return nil, os.NewSyscallError("setsockopt SO_SNDTIMEO", err)
	}
	return w, nil
}

// setTimeout sets the socket's receive timeout (at least 1 ms: 0 would
// mean none).
func (w *wire) setTimeout(d time.Duration) error {
	d = max(d, time.Millisecond)
	tv := syscall.NsecToTimeval(int64(d))
	if err := syscall.SetsockoptTimeval(w.fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv); err != nil {
		return os.NewSyscallError("setsockopt SO_RCVTIMEO", err)
	}
	w.sockTO = d
	return nil
}

// begin starts a call that must end by deadline.
func (w *wire) begin(deadline time.Time) {
	w.deadline = deadline
	if w.sockTO != w.timeout {
		_ = w.setTimeout(w.timeout)
	}
	w.busy.Store(true)
}

// end ends the call begun last.
func (w *wire) end() { w.busy.Store(false) }

// interrupt makes a call in progress return now (the socket is shut
// down; the session is then closed as broken).
func (w *wire) interrupt() {
	if w.busy.Load() {
		_ = syscall.Shutdown(w.fd, syscall.SHUT_RDWR)
	}
}

// errWireTimeout is a read or write that hit the call deadline.
type wireTimeout struct{}

func (wireTimeout) Error() string   { return "i/o timeout (call deadline)" }
func (wireTimeout) Timeout() bool   { return true }
func (wireTimeout) Temporary() bool { return true }

func (w *wire) Read(p []byte) (int, error) {
	if !w.deadline.IsZero() {
		left := time.Until(w.deadline)
		if left <= 0 {
			return 0, wireTimeout{}
		}
		if left < w.sockTO-time.Millisecond {
			if err := w.setTimeout(left); err != nil {
				return 0, err
			}
		}
	}
	for {
		n, err := syscall.Read(w.fd, p)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return 0, wireTimeout{}
		case err != nil:
			return 0, os.NewSyscallError("read", err)
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// rawWriter writes straight to the socket (under the buffer).
type rawWriter struct{ w *wire }

func (r rawWriter) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := syscall.Write(r.w.fd, p[done:])
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return done, wireTimeout{}
		case err != nil:
			return done, os.NewSyscallError("write", err)
		}
		done += n
	}
	return done, nil
}

func (w *wire) Open() error                     { return nil }
func (w *wire) IsOpen() bool                    { return true }
func (w *wire) Close() error                    { return w.f.Close() }
func (w *wire) Write(p []byte) (int, error)     { return w.bw.Write(p) }
func (w *wire) Flush(ctx context.Context) error { return w.bw.Flush() }
func (w *wire) RemainingBytes() uint64          { return math.MaxUint64 }
