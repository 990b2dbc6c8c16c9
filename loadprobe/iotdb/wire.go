package iotdb

import (
	"bufio"
	"context"
	"math"
	"net"
	"sync/atomic"
	"time"
)

// wire is a session's TCP connection: the Thrift transport under the
// framed transport. Writes are buffered and flushed in one write(2) per
// request; reads go through Go's netpoller; the call deadline is the
// connection's deadline, set once per call (begin), so a call costs no
// goroutine or timer of its own.
//
// Blocking read(2) on the worker's thread (the Java client's way) was
// tried: at 1 worker it was about as fast, but from 8 workers on 2 CPUs it
// cost 70-100 µs of CPU per operation against 40-55 µs through the
// netpoller, and fewer TPS (sysmon hands the P of a thread blocked in a
// system call to another thread whenever goroutines wait to run), so the
// netpoller stays (bench/README.md).
type wire struct {
	c    net.Conn
	bw   *bufio.Writer
	busy atomic.Bool // a call is in progress (interrupt cuts only those)
}

// dialWire connects to node within connectTimeout (or until ctx ends).
func dialWire(ctx context.Context, node string, connectTimeout, _ time.Duration) (*wire, error) {
	d := net.Dialer{Timeout: connectTimeout}
	c, err := d.DialContext(ctx, "tcp", node)
	if err != nil {
		return nil, err
	}
	return &wire{c: c, bw: bufio.NewWriterSize(c, writeBuffer)}, nil
}

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
func (w *wire) Read(p []byte) (int, error)      { return w.c.Read(p) }
func (w *wire) Write(p []byte) (int, error)     { return w.bw.Write(p) }
func (w *wire) Flush(ctx context.Context) error { return w.bw.Flush() }
func (w *wire) RemainingBytes() uint64          { return math.MaxUint64 }
