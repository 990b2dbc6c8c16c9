package iotdb

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/iotdbfault"
)

// frameProxy listens on loopback and relays each connection to target:
// client to server as is, server to client frame by frame (the framed
// transport's 4-byte length and body) through f, which gets the
// connection's number (in accept order), the frame's number on it and
// the frame, and returns the bytes to send instead (nil: close). It
// returns the proxy's host:port; it stops with t.
func frameProxy(t *testing.T, target string, f func(conn, frame int, b []byte) []byte) string {
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
	track := func(c ...net.Conn) {
		mu.Lock()
		conns = append(conns, c...)
		mu.Unlock()
	}
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
			track(c, s)
			wg.Add(2)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(s, c)
				s.Close()
			}()
			go func() {
				defer wg.Done()
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

// loopStep runs one closed-loop step of n workers of cfg (write or
// batch: on the event loop) against cfg's server, without setup (the
// fault server needs none), and checks that it ran on the loop.
func loopStep(t *testing.T, ctx context.Context, cfg Config, n int) Step {
	t.Helper()
	cfg = cfg.withDefaults()
	p := newSessionPool(&cfg)
	defer p.close(time.Second)
	st := runStep(ctx, &cfg, p, newWorkload(&cfg, "root.hostprep_loop"), n, newLiveness(cfg.UnreachableAfter))
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
			st := runStep(ctx, &cfg, p, newWorkload(&cfg, "root.hostprep_cut"), 2, newLiveness(cfg.UnreachableAfter))
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
