package iotdb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/testenv"
)

// rawPair is a rawConn wire dialled to a loopback listener and the
// server's end of it.
func rawPair(t *testing.T) (*wire, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	w, err := dialWire(context.Background(), ln.Addr().String(), time.Second, true)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); srv.Close() })
	if _, ok := w.c.(*rawConn); !ok || w.fd < 0 {
		t.Fatalf("raw wire on %T fd %d, want a rawConn with its descriptor", w.c, w.fd)
	}
	return w, srv
}

// A read on a rawConn that gets no answer ends at the deadline with a
// timeout (a net.Error, as the pool's isTimeout reads it).
func TestRawConnReadEndsAtDeadline(t *testing.T) {
	w, _ := rawPair(t)
	w.begin(time.Now().Add(150 * time.Millisecond))
	start := time.Now()
	_, err := w.Read(make([]byte, 8))
	took := time.Since(start)
	if !isTimeout(err) {
		t.Fatalf("read with no answer: %v, want a timeout", err)
	}
	if took < 140*time.Millisecond || took > 2*time.Second {
		t.Errorf("read returned after %v, want at its 150 ms deadline", took)
	}
}

// interrupt (another goroutine moving the deadline to now) ends a read
// that had no deadline, within poll's slice.
func TestRawConnInterruptEndsRead(t *testing.T) {
	w, _ := rawPair(t)
	w.begin(time.Time{})
	done := make(chan error, 1)
	go func() {
		_, err := w.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	w.interrupt()
	select {
	case err := <-done:
		if !isTimeout(err) {
			t.Errorf("interrupted read: %v, want a timeout", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("interrupt did not end the read")
	}
}

// fill reports a frame whole only when its header and all of its body
// arrived, however the server splits it; Read then serves exactly it, and
// a closed connection is io.EOF.
func TestFillWaitsForTheWholeFrame(t *testing.T) {
	w, srv := rawPair(t)
	frame := []byte{0, 0, 0, 6, 'a', 'n', 's', 'w', 'e', 'r'}
	fillUntil := func(want bool) {
		t.Helper()
		testenv.WaitFor(t, 5*time.Second, fmt.Sprintf("fill to see whole=%v", want), func() bool {
			whole, err := w.fill()
			if err != nil {
				t.Fatalf("fill: %v", err)
			}
			if whole != want && !want && len(w.in) >= 6 {
				t.Fatalf("fill says whole=%v with %d bytes of a %d-byte frame", whole, len(w.in), len(frame))
			}
			return whole == want && (want || len(w.in) >= 6)
		})
	}
	if _, err := srv.Write(frame[:6]); err != nil { // header and 2 of 6 body bytes
		t.Fatal(err)
	}
	fillUntil(false)
	if _, err := srv.Write(frame[6:]); err != nil {
		t.Fatal(err)
	}
	fillUntil(true)
	got, err := io.ReadAll(io.LimitReader(bufio.NewReader(w), int64(len(frame))))
	if err != nil || string(got) != string(frame) {
		t.Fatalf("Read after fill: %q, %v; want the frame %q", got, err, frame)
	}
	w.drop()
	if len(w.in) != 0 {
		t.Errorf("drop left %d bytes", len(w.in))
	}
	srv.Close()
	testenv.WaitFor(t, 5*time.Second, "fill to return io.EOF after the server closed", func() bool {
		_, err := w.fill()
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("fill after the server closed: %v, want io.EOF", err)
		}
		return errors.Is(err, io.EOF)
	})
}

// With queue set (the event loop's sends), a flush that the socket cannot
// take returns at once, the rest kept in the wire; flushOut sends it as
// the peer reads, and the peer gets every byte in order.
func TestWireQueuesWhatTheSocketDoesNotTake(t *testing.T) {
	w, srv := rawPair(t)
	if err := unix.SetsockoptInt(w.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 1<<20) // far more than the send and receive buffers
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	w.begin(time.Now().Add(time.Minute))
	w.queue = true
	if _, err := w.Write(msg); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(context.Background()); err != nil {
		t.Fatalf("flush: %v", err)
	}
	w.queue = false
	if w.unsent() == 0 || w.unsent() >= len(msg) {
		t.Fatalf("%d of %d bytes left unsent, want some sent and the rest kept", w.unsent(), len(msg))
	}
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, len(msg))
		_, _ = io.ReadFull(srv, b)
		got <- b
	}()
	for deadline := time.Now().Add(10 * time.Second); w.unsent() > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes still unsent", w.unsent())
		}
		fds := []unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLOUT}}
		if _, err := unix.Poll(fds, 100); err != nil && err != unix.EINTR {
			t.Fatal(err)
		}
		if err := w.flushOut(); err != nil {
			t.Fatalf("flushOut: %v", err)
		}
	}
	select {
	case b := <-got:
		if !bytes.Equal(b, msg) {
			t.Errorf("the peer got other bytes than were sent")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the peer did not get the whole message")
	}
}
