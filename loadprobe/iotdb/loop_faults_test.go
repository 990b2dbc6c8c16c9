package iotdb

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/iotdbfault"
	"github.com/hostprep/hostprep/internal/rawsys"
)

// relay listens on loopback and, for each connection it accepts (n: in
// accept order), dials target and runs handle(n, c, s) on its own
// goroutine with the client's (c) and the server's (s) connection. It
// returns the listener's host:port; at t's end it closes the listener and
// every connection and waits for the handlers.
func relay(t *testing.T, target string, handle func(n int, c, s net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				handle(n, c, s)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// frameProxy relays each connection to target (relay): client to server
// as is, server to client frame by frame (the framed transport's 4-byte
// length and body) through f, which gets the connection's number (in
// accept order), the frame's number on it and the frame, and returns the
// bytes to send instead (nil: close). It returns the proxy's host:port;
// it stops with t.
func frameProxy(t *testing.T, target string, f func(conn, frame int, b []byte) []byte) string {
	t.Helper()
	return relay(t, target, func(n int, c, s net.Conn) {
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			_, _ = io.Copy(s, c)
			s.Close()
		}()
		defer func() { <-copied }() // after c.Close below ends the copy
		defer c.Close()
		for i := 0; ; i++ {
			var h [4]byte
			if _, err := io.ReadFull(s, h[:]); err != nil {
				return
			}
			b := make([]byte, 4+binary.BigEndian.Uint32(h[:]))
			copy(b, h[:])
			if _, err := io.ReadFull(s, b[4:]); err != nil {
				return
			}
			out := f(n, i, b)
			if out == nil {
				return
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	})
}

// loopStep runs one closed-loop step of n workers of cfg (write or
// batch: on the event loop) against cfg's server, without setup (the
// fault server needs none), and checks that it ran on the loop.
func loopStep(t *testing.T, ctx context.Context, cfg Config, n int) Step {
	t.Helper()
	cfg = cfg.withDefaults()
	p := newSessionPool(&cfg)
	defer p.close(time.Second)
	st := runStep(ctx, &cfg, p, newWorkload(&cfg, "root.hostprep_loop"), n, newLiveness(cfg.UnreachableAfter), timelineStep{}, nil)
	if !st.Client.EventLoop {
		t.Fatalf("the step did not run on the event loop")
	}
	return st
}

// An answer whose message runs past its frame (here: an empty frame)
// fails its call at once. The loop decoded it with a blocking read of
// the socket, which stalled every worker until the bad call's deadline
// and then failed the healthy workers' calls whose deadline had passed
// meanwhile.
func TestLoopShortAnswerDoesNotStallTheLoop(t *testing.T) {
	srv := iotdbfault.StartT(t, iotdbfault.None)
	addr := frameProxy(t, srv.Addr, func(conn, frame int, b []byte) []byte {
		// Frames 0 and 1 open the session; the rest answer writes.
		if conn == 1 && frame == 5 {
			return []byte{0, 0, 0, 0}
		}
		return b
	})
	cfg := Config{NodeURLs: []string{addr}, Scenario: ScenarioWrite, PoolSize: 2, CallTimeout: 1500 * time.Millisecond,
		StepDuration: 2 * time.Second}
	st := loopStep(t, context.Background(), cfg, 2)
	t.Logf("ops %d ok %d errors %v %v latency max %.1f ms", st.Ops, st.OK, st.ErrorsByClass, st.ErrorSamples, st.Latency.Max)
	if st.Errors != 1 || st.ErrorsByClass[ClassDeadline] != 0 {
		t.Errorf("errors %v: want the one bad answer, and no deadline", st.ErrorsByClass)
	}
	if st.Latency.Max > 750 {
		t.Errorf("latency max %.0f ms with a %v call timeout: the bad answer stalled the other worker", st.Latency.Max, cfg.CallTimeout)
	}
}

// Cancelling the run cuts a session's opening calls at once, on the
// event loop (write) and with a goroutine per worker (mixed): a node
// that takes the connection but never answers (a DataNode whose RPC
// threads are all busy) held the step, and Ctrl-C, until --call-timeout.
// Nothing is counted, and the node is not reported unreachable.
func TestCancelCutsSessionOpenInFlight(t *testing.T) {
	hung, err := net.Listen("tcp", "127.0.0.1:0") // never accepts: connects, never answers
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close()
	for _, sc := range []string{ScenarioWrite, ScenarioMixed} {
		t.Run(sc, func(t *testing.T) {
			cfg := Config{NodeURLs: []string{hung.Addr().String()}, Scenario: sc, PoolSize: 2, CallTimeout: 10 * time.Second,
				StepDuration: 20 * time.Second}.withDefaults()
			p := newSessionPool(&cfg)
			defer p.close(time.Second)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			t0 := time.Now()
			st := runStep(ctx, &cfg, p, newWorkload(&cfg, "root.hostprep_cut"), 2, newLiveness(cfg.UnreachableAfter), timelineStep{}, nil)
			took := time.Since(t0)
			t.Logf("event loop %v: returned after %v, ops %d %v, unreachable %q", st.Client.EventLoop, took, st.Ops, st.ErrorsByClass, p.unreachable())
			if st.Client.EventLoop != (sc == ScenarioWrite) {
				t.Errorf("event loop %v for %s", st.Client.EventLoop, sc)
			}
			if took > 2*time.Second {
				t.Errorf("the step returned %v after start, cancelled at 300ms: the opening calls waited for their deadline", took)
			}
			if st.Ops != 0 || len(p.unreachable()) != 0 {
				t.Errorf("%d ops %v, unreachable %q: want nothing counted for cut opens", st.Ops, st.ErrorsByClass, p.unreachable())
			}
		})
	}
}

// stallProxy relays one connection from a loopback listener to a
// server, both ways, except that it can stop reading from the client (a
// server that stopped reading its socket: the client's send buffer
// fills) and start again.
type stallProxy struct {
	addr    string
	stalled chan struct{} // closed by stall
	stopped chan struct{} // closed when the relay no longer reads
	resumed chan int      // resume's skip
	done    chan struct{} // closed at cleanup
}

// startStallProxy starts a stallProxy to target (host:port) for one
// connection; it stops with t.
func startStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	sp := &stallProxy{stalled: make(chan struct{}), stopped: make(chan struct{}),
		resumed: make(chan int, 1), done: make(chan struct{})}
	sp.addr = relay(t, target, func(_ int, c, s net.Conn) {
		defer close(sp.stopped) // also when the relay ended (stall must not hang)
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			_, _ = io.Copy(c, s)
		}()
		defer func() { <-copied }() // relay's cleanup closes c and s
		buf := make([]byte, 64<<10)
		skip, stalled := 0, sp.stalled
		for {
			select {
			case <-stalled:
				stalled = nil // once
				sp.stopped <- struct{}{}
				select {
				case skip = <-sp.resumed:
				case <-sp.done:
					return
				}
			default:
			}
			// A short read deadline: the relay looks at stall between
			// reads and is never inside a read once stopped.
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			n, err := c.Read(buf)
			out := buf[:n]
			if k := min(skip, n); k > 0 {
				out, skip = out[k:], skip-k
			}
			if len(out) > 0 {
				if _, werr := s.Write(out); werr != nil {
					return
				}
			}
			if err != nil && !isTimeout(err) {
				return
			}
		}
	})
	// Registered after relay's, so it runs first: a relay stopped in
	// stall returns before relay's cleanup waits for it.
	t.Cleanup(func() { close(sp.done) })
	return sp
}

// stall stops the relay reading from the client; it returns once the
// relay has stopped.
func (sp *stallProxy) stall() {
	close(sp.stalled)
	<-sp.stopped
}

// resume has the relay read from the client again, the first skip bytes
// dropped and the rest relayed.
func (sp *stallProxy) resume(skip int) { sp.resumed <- skip }

// stalledStep runs a 3 s batch step of 2 workers on the event loop
// against the fault server, one of its sessions stalled (stalledSession)
// with calls bounded by callTimeout; before the step starts, start gets
// the stalled proxy and the junk's length. The test fails when the step
// did not run on the event loop.
func stalledStep(t *testing.T, callTimeout time.Duration, start func(sp *stallProxy, junk int)) Step {
	t.Helper()
	srv := iotdbfault.StartT(t, iotdbfault.None)
	cfg := Config{NodeURLs: []string{srv.Addr}, Scenario: ScenarioBatch, PoolSize: 2, CallTimeout: callTimeout,
		StepDuration: 3 * time.Second}.withDefaults()
	p := newSessionPool(&cfg)
	defer p.close(time.Second)
	start(stalledSession(t, &cfg, p, srv.Addr))
	st := runStep(context.Background(), &cfg, p, newWorkload(&cfg, "root.hostprep_loop"), 2, newLiveness(cfg.UnreachableAfter), timelineStep{}, nil)
	if !st.Client.EventLoop {
		t.Fatalf("the step did not run on the event loop")
	}
	return st
}

// stalledSession opens a session through a stallProxy to srv, stalls the
// proxy and fills the session's socket until the kernel takes no more for
// a while (a small send buffer, junk bytes: the peer's window is closed),
// and leaves the session idle in p: a step's first worker takes it (its
// node comes after srv's, which has none idle). It returns the proxy and
// the junk's length.
func stalledSession(t *testing.T, cfg *Config, p *sessionPool, srv string) (*stallProxy, int) {
	t.Helper()
	sp := startStallProxy(t, srv)
	s, err := openSession(context.Background(), sp.addr, cfg.User, cfg.Password, cfg.ConnectTimeout, int32(cfg.FetchSize), true)
	if err != nil {
		t.Fatal(err)
	}
	sp.stall()
	if err := unix.SetsockoptInt(s.w.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 64<<10)
	filled := 0
	for {
		n, err := rawsys.Write(s.w.fd, junk)
		filled += n
		if filled > 64<<20 {
			t.Fatalf("%d bytes written and the send buffer is still not full", filled)
		}
		if err == unix.EAGAIN {
			fds := []unix.PollFd{{Fd: int32(s.w.fd), Events: unix.POLLOUT}}
			if n, err := unix.Poll(fds, 300); err == nil && n == 0 {
				break // no room for 300 ms: full
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("send buffer full after %d bytes", filled)
	if !p.remember(s) {
		t.Fatal("pool closed")
	}
	p.idleFor(sp.addr) <- s
	return sp, filled
}

// succeededBefore counts the operations of st that succeeded in its
// seconds before sec.
func succeededBefore(st Step, sec int) int64 {
	var n int64
	for _, s := range st.Seconds {
		if s.Second < sec {
			n += s.Ops - s.Errors
		}
	}
	return n
}

// A session whose send buffer is full (its server stopped reading) must
// not hold the loop: its call waits for room off the loop's critical
// path and fails at its deadline, while the other worker's calls, on a
// healthy session, keep completing meanwhile. rawConn.Write waited in
// poll(2) on the loop until the call's deadline, so no other worker's
// answer was read until then.
func TestLoopFullSendBufferDoesNotStallTheLoop(t *testing.T) {
	st := stalledStep(t, 2*time.Second, func(*stallProxy, int) {})
	// Operations that succeeded before the stalled call's deadline (2 s
	// after the step's start): the healthy worker's.
	before := succeededBefore(st, 2)
	t.Logf("ops %d ok %d errors %v %v; %d ops succeeded before the stalled call's deadline", st.Ops, st.OK, st.ErrorsByClass, st.ErrorSamples, before)
	if st.Errors != 1 || st.ErrorsByClass[ClassDeadline] != 1 {
		t.Errorf("errors %v: want the stalled call's deadline only", st.ErrorsByClass)
	}
	if before == 0 {
		t.Errorf("no operation succeeded while the stalled call waited for room: its send held the event loop")
	}
}

// A request the socket could not take at once goes out when the socket
// has room again, and its call succeeds within its deadline: the loop
// sends the rest when the session becomes writable, then reads the
// answer, and the session stays usable. The other worker's calls go on
// meanwhile (in the first second, before the proxy reads again).
func TestLoopSendsTheRestWhenTheSocketHasRoom(t *testing.T) {
	const pause = 1500 * time.Millisecond
	st := stalledStep(t, 5*time.Second, func(sp *stallProxy, junk int) {
		time.AfterFunc(pause, func() { sp.resume(junk) }) // the junk dropped, the request relayed
	})
	t.Logf("ops %d ok %d errors %v %v; latency max %.0f ms; %d ops succeeded in the first second", st.Ops, st.OK, st.ErrorsByClass, st.ErrorSamples,
		st.Latency.Max, succeededBefore(st, 1))
	if st.Errors != 0 {
		t.Errorf("errors %v: want none (the stalled request went out when the proxy read again)", st.ErrorsByClass)
	}
	// The stalled call could not end before the proxy read again: it
	// did wait for room (the test took the path it means to).
	if waited := time.Duration(st.Latency.Max * float64(time.Millisecond)); waited < pause/2 {
		t.Errorf("latency max %v: the stalled call did not wait for the proxy", waited)
	}
	if succeededBefore(st, 1) == 0 {
		t.Errorf("no operation succeeded in the first second: the stalled send held the event loop")
	}
}
