package iotdb

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/rawsys"
)

// wire is a session's TCP connection: the Thrift transport under the
// framed transport. Writes are buffered and flushed in one write(2) per
// request; the call deadline is the connection's deadline, set once per
// call (begin), so a call costs no goroutine of its own.
//
// It runs on one of two connections (dialWire). For worker goroutines
// (mixed, and any step with --rate) a net.Conn: reads park the goroutine
// in Go's netpoller. Blocking read(2) on the worker's thread (the Java
// client's way) was tried: from 8 workers on 2 CPUs it cost 70-100 µs of
// CPU per operation against 40-55 µs through the netpoller (sysmon hands
// the P of a thread blocked in a system call to another thread whenever
// goroutines wait to run). For the event loop (closed-loop write and
// batch, loop.go) a rawConn, outside the netpoller: the loop reads what
// the socket holds with non-blocking read(2) on fd into in (fill) until a
// whole frame is there, and the Thrift stubs then decode it from in (Read
// serves in before the connection). The loop's sends (queue set) never
// wait either: what the socket does not take at once is kept in out, and
// the loop sends it (flushOut) when the socket is writable.
type wire struct {
	c    conn
	fd   int // a rawConn's descriptor (owned by it), for the event loop; -1 for a net.Conn
	bw   *bufio.Writer
	busy atomic.Bool // a call is in progress (interrupt cuts only those)
	in   []byte      // answer bytes read by fill and not yet decoded
	off  int         // in[:off] was decoded
	// inOnly: Read serves in and never the connection (the event loop
	// decodes a frame fill read whole; an answer whose message runs past
	// its frame must fail at once, not wait on the socket in the loop).
	inOnly bool
	// queue: a raw wire's flushes write what the socket takes now and
	// keep the rest in out, instead of waiting for room (the event loop's
	// sends: a full send buffer must not hold the loop).
	queue bool
	out   []byte // request bytes not yet sent (queue); flushOut sends them
	// blocking: a raw wire's descriptor blocks (PathDirect, setBlocking);
	// timeo: its waits are bounded (SO_RCVTIMEO, SO_SNDTIMEO).
	blocking, timeo bool
}

// directWait bounds one blocking read(2) or write(2) of a PathDirect
// step (SO_RCVTIMEO, SO_SNDTIMEO), as rawMaxWait bounds the loop's raw
// epoll_wait: the read holds the loop's P, and the loop looks at the
// clock, the call deadline and the context at least this often.
const directWait = rawMaxWait * time.Millisecond

// setBlocking makes a raw wire's descriptor block in read(2) and
// write(2), for at most directWait each (on), or not block (off, as
// dialed); a wire already so is left alone. A read or write that waited
// directWait fails with EAGAIN, as on a non-blocking descriptor, so
// fill, writeSome and rawConn work in either mode. Errors: setsockopt's
// or fcntl's.
func (w *wire) setBlocking(on bool) error {
	if w.blocking == on {
		return nil
	}
	if on && !w.timeo {
		tv := unix.NsecToTimeval(directWait.Nanoseconds())
		for _, opt := range []int{unix.SO_RCVTIMEO, unix.SO_SNDTIMEO} {
			if err := unix.SetsockoptTimeval(w.fd, unix.SOL_SOCKET, opt, &tv); err != nil {
				return os.NewSyscallError("setsockopt", err)
			}
		}
		w.timeo = true
	}
	if err := unix.SetNonblock(w.fd, !on); err != nil {
		return os.NewSyscallError("fcntl", err)
	}
	w.blocking = on
	return nil
}

// errShortAnswer is an answer whose message runs past the end of its
// frame (the server broke the protocol); the call fails at once.
var errShortAnswer = errors.New("the answer's message runs past the end of its frame")

// conn is what a wire runs on: a net.Conn (Go's netpoller), or a
// rawConn (outside it) for the sessions of an event-loop run.
type conn interface {
	io.ReadWriteCloser
	SetDeadline(t time.Time) error
}

// dialWire connects to node within connectTimeout (or until ctx ends):
// through Go's netpoller, or outside it when raw (for the event loop).
func dialWire(ctx context.Context, node string, connectTimeout time.Duration, raw bool) (*wire, error) {
	if raw {
		c, err := dialRaw(ctx, node, connectTimeout)
		if err != nil {
			return nil, err
		}
		w := &wire{c: c, fd: c.fd}
		w.bw = bufio.NewWriterSize(rawOut{w}, writeBuffer)
		return w, nil
	}
	d := net.Dialer{Timeout: connectTimeout}
	c, err := d.DialContext(ctx, "tcp", node)
	if err != nil {
		return nil, err
	}
	return &wire{c: c, fd: -1, bw: bufio.NewWriterSize(c, writeBuffer)}, nil
}

// rawOut is what a raw wire's buffer flushes into: the connection,
// waiting for room until the deadline (rawConn.Write), or with queue set
// the socket without waiting, what it does not take kept in out (after
// bytes already kept, to keep their order). It reports all of p written
// unless the write failed (the errno, as rawConn.Write has it).
type rawOut struct{ w *wire }

func (o rawOut) Write(p []byte) (int, error) {
	w := o.w
	if !w.queue {
		return w.c.Write(p)
	}
	n := 0
	if len(w.out) == 0 {
		var err error
		if n, err = w.writeSome(p); err != nil {
			return n, err
		}
	}
	w.out = append(w.out, p[n:]...)
	return len(p), nil
}

// writeSome writes what of p the socket takes now (non-blocking): the
// bytes written; EAGAIN (the send buffer is full) is no error, any other
// errno is (EPIPE, ECONNRESET: the connection is lost).
func (w *wire) writeSome(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, err := rawsys.Write(w.fd, p[done:])
		done += n
		switch {
		case err == unix.EAGAIN:
			return done, nil
		case err == unix.EINTR:
		case err != nil:
			return done, os.NewSyscallError("write", err)
		}
	}
	return done, nil
}

// flushOut sends what the socket takes now of the bytes queued in out
// (non-blocking); unsent tells what is left. Errors: the write's errno
// (see writeSome).
func (w *wire) flushOut() error {
	n, err := w.writeSome(w.out)
	w.out = w.out[:copy(w.out, w.out[n:])]
	return err
}

// unsent is how many bytes of the request sent last are still queued in
// out (bytes).
func (w *wire) unsent() int { return len(w.out) }

// frameHeader is the framed transport's length prefix (bytes).
const frameHeader = 4

// fill reads what the socket holds (non-blocking) into in and reports
// whether in now holds a whole frame. Errors: io.EOF when the server
// closed the connection, the read's errno otherwise; EAGAIN is no error
// (nothing more to read yet).
func (w *wire) fill() (whole bool, err error) {
	for {
		if len(w.in) == cap(w.in) {
			w.in = slices.Grow(w.in, max(512, len(w.in)))
		}
		n, err := rawsys.Read(w.fd, w.in[len(w.in):cap(w.in)])
		if n > 0 {
			w.in = w.in[:len(w.in)+n]
		}
		switch {
		case err == unix.EAGAIN:
			return w.whole(), nil
		case err == unix.EINTR:
			continue
		case err != nil:
			return false, os.NewSyscallError("read", err)
		case n == 0:
			return false, io.EOF
		}
		if w.whole() {
			return true, nil
		}
	}
}

// whole tells whether in holds a whole frame (header and body).
func (w *wire) whole() bool {
	if len(w.in) < frameHeader {
		return false
	}
	return len(w.in)-frameHeader >= int(binary.BigEndian.Uint32(w.in))
}

// drop forgets the frame decoded from in (and anything after it: a
// session has one call in flight, so there is none).
func (w *wire) drop() { w.in, w.off = w.in[:0], 0 }

// begin starts a call that must end by deadline.
func (w *wire) begin(deadline time.Time) {
	_ = w.c.SetDeadline(deadline)
	w.busy.Store(true)
}

// end ends the call begun last.
func (w *wire) end() { w.busy.Store(false) }

// interrupt makes a call in progress return now (its deadline moved to
// now; the session is then closed as broken).
func (w *wire) interrupt() {
	if w.busy.Load() {
		_ = w.c.SetDeadline(time.Now())
	}
}

func (w *wire) Open() error                     { return nil }
func (w *wire) IsOpen() bool                    { return true }
func (w *wire) Close() error                    { return w.c.Close() }
func (w *wire) Write(p []byte) (int, error)     { return w.bw.Write(p) }
func (w *wire) Flush(ctx context.Context) error { return w.bw.Flush() }
func (w *wire) RemainingBytes() uint64          { return math.MaxUint64 }

// Read serves the bytes fill read before reading the connection.
func (w *wire) Read(p []byte) (int, error) {
	if w.off < len(w.in) {
		n := copy(p, w.in[w.off:])
		w.off += n
		return n, nil
	}
	if w.inOnly {
		return 0, errShortAnswer
	}
	return w.c.Read(p)
}
