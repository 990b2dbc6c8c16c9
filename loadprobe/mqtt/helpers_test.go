package mqtt

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/mochi-mqtt/server/v2/packets"
)

// noLeak fails the test if goroutines started during it are still alive
// at its very end (it registers first, so its cleanup runs last, after
// the proxies and brokers the test started are gone).
func noLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		t.Helper()
		testenv.Eventually(5*time.Second, func() bool { return runtime.NumGoroutine() <= before })
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines outlived Run (before %d):\n%s", n-before, before, buf)
		}
	})
}

// checkCounts asserts the accounting invariants every result must keep.
func checkCounts(t *testing.T, res *Result) {
	t.Helper()
	m, c := res.Messages, res.Connects
	// Answers of another flow (Protocol) are neither acked nor unacked,
	// and not in the ack histograms.
	other := res.Protocol.Downgraded + res.Protocol.WrongAck
	if res.Config.QoS > 0 && m.Published != m.Acked+m.Unacked+m.AckInFlight+other {
		t.Errorf("published %d != acked %d + unacked %d + ack in flight %d + answered with another flow %d", m.Published, m.Acked, m.Unacked, m.AckInFlight, other)
	}
	if m.AckInFlight < 0 || (m.AckInFlight > 0 && !res.Interrupted) {
		t.Errorf("ack in flight %d in a run that was not interrupted (interrupted %v)", m.AckInFlight, res.Interrupted)
	}
	if m.Received+m.Lost+m.InFlight != m.Expected || m.Expected != m.Published {
		t.Errorf("received %d + lost %d + in flight %d != expected %d (published %d)", m.Received, m.Lost, m.InFlight, m.Expected, m.Published)
	}
	if m.InFlight < 0 || (m.InFlight > 0 && !res.Interrupted) {
		t.Errorf("in flight %d in a run that was not interrupted (interrupted %v)", m.InFlight, res.Interrupted)
	}
	if m.Scheduled != m.Published+m.SendFailed {
		t.Errorf("scheduled %d != published %d + send failed %d", m.Scheduled, m.Published, m.SendFailed)
	}
	if m.Received < 0 || m.Lost < 0 || m.Unacked < 0 {
		t.Errorf("negative count: %+v", m)
	}
	// Every publish is in the ack and end-to-end histograms: acked or
	// delivered ones at their latency, the rest censored,
	// those still in flight at an interrupt too (at their wait).
	if l := res.Latency; res.Config.QoS > 0 && l.Ack.Count+l.WarmupAck.Count != m.Published-other {
		t.Errorf("ack histograms hold %d + %d values, want one per publish (%d) but those answered with another flow (%d)", l.Ack.Count, l.WarmupAck.Count, m.Published, other)
	} else if res.Config.QoS > 0 && l.Ack.Censored+l.WarmupAck.Censored != m.Unacked+m.AckInFlight {
		t.Errorf("ack censored %d + %d, want unacked %d + ack in flight %d", l.Ack.Censored, l.WarmupAck.Censored, m.Unacked, m.AckInFlight)
	}
	if l := res.Latency; l.E2E.Censored+l.WarmupE2E.Censored != m.Lost+m.InFlight {
		t.Errorf("e2e censored %d + %d, want lost %d + in flight %d", l.E2E.Censored, l.WarmupE2E.Censored, m.Lost, m.InFlight)
	}
	// Every connect attempted is in the connect histogram: the failed
	// and canceled ones censored at the time they waited.
	if l := res.Latency.Connect; l.Count != c.OK+c.Failed+c.Canceled || l.Censored != c.Failed+c.Canceled {
		t.Errorf("connect histogram holds %d values (%d censored), want ok %d + failed %d + canceled %d (those failed or canceled censored)",
			l.Count, l.Censored, c.OK, c.Failed, c.Canceled)
	}
	if c.OK+c.Failed+c.Canceled+c.NotStarted != int64(c.Target) {
		t.Errorf("connects ok %d + failed %d + canceled %d + not started %d != target %d", c.OK, c.Failed, c.Canceled, c.NotStarted, c.Target)
	}
	if (c.Canceled > 0 || c.NotStarted > 0) && !res.Interrupted && res.StoppedEarlyReason == "" {
		t.Errorf("a run that went its course left %d canceled and %d not started connects", c.Canceled, c.NotStarted)
	}
	if c.Lost > c.OK || c.SubscribersLost > int64(res.Config.Subscribers) {
		t.Errorf("more connections lost than established: publishers %d lost of %d ok, subscribers %d lost of %d",
			c.Lost, c.OK, c.SubscribersLost, res.Config.Subscribers)
	}
	// Every message of the asked load is sent or not sent for a reason.
	checkOffered(t, res)
	for name, s := range map[string]latency.Summary{"connect": res.Latency.Connect, "ack": res.Latency.Ack, "e2e": res.Latency.E2E,
		"warmup_ack": res.Latency.WarmupAck, "warmup_e2e": res.Latency.WarmupE2E, "rtt": res.Baseline.RoundTrip} {
		seq := []float64{s.Min, s.P50, s.P90, s.P95, s.P99, s.P999, s.Max}
		for i := range seq {
			if seq[i] < 0 || (i > 0 && seq[i] < seq[i-1]) {
				t.Errorf("%s percentiles not ordered / negative: %+v", name, s)
				break
			}
		}
	}
}

// small is a quick load for tests: every client publishes every 50 ms.
func small(broker string, clients int) Config {
	c := Defaults()
	c.Broker = broker
	c.Clients = clients
	c.ConnRate = 200
	c.PubInterval = 50 * time.Millisecond
	c.Duration = time.Second
	c.Grace = 3 * time.Second
	c.ConnectTimeout = 3 * time.Second
	// The CI box is small and shared: judge counts here, not latency.
	c.Thresholds.ConnectP95, c.Thresholds.AckP95, c.Thresholds.E2EP99 = 0, 0, 0
	return c
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ownMosquitto starts a private mosquitto on a free loopback port with
// the extra config lines; it is killed at cleanup (or by the test).
type ownMosquitto struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
}

func startMosquitto(t *testing.T, extra ...string) *ownMosquitto {
	t.Helper()
	return startMosquittoUnder(t, nil, extra...)
}

// startMosquittoUnder is startMosquitto run by the command prefix (e.g.
// prlimit --nofile=200:200, which execs mosquitto in its own process).
func startMosquittoUnder(t *testing.T, prefix []string, extra ...string) *ownMosquitto {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		bin = "/usr/sbin/mosquitto"
		if _, err := os.Stat(bin); err != nil {
			t.Skip("mosquitto is not installed: run scripts/mosquitto.sh start")
		}
	}
	dir := t.TempDir()
	port := freePort(t)
	conf := fmt.Sprintf("user root\nper_listener_settings false\npersistence false\nlog_dest stderr\nlog_type error\nlistener %d 127.0.0.1\n%s\n",
		port, strings.Join(extra, "\n"))
	path := filepath.Join(dir, "mosquitto.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var logb bytes.Buffer
	argv := append(append(append([]string(nil), prefix...), bin), "-c", path)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m := &ownMosquitto{cmd: cmd, url: fmt.Sprintf("tcp://127.0.0.1:%d", port), done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(m.done) }()
	t.Cleanup(m.kill)
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return m
		}
		select {
		case <-m.done:
			t.Fatalf("mosquitto exited at start: %s", logb.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("mosquitto did not listen on %d: %s", port, logb.String())
	return nil
}

func (m *ownMosquitto) kill() {
	_ = m.cmd.Process.Kill()
	<-m.done
}

// faultProxy sits between the probe and a broker and, for publisher
// connections only (not -sub / -calib clients), delays or drops the
// broker's PUBACK/PUBCOMP packets or closes the connection after a while.
// A stand-in for faults a healthy broker does not produce.
type faultProxy struct {
	ln       net.Listener
	target   string
	ackDelay time.Duration
	dropAcks bool
	// keepEvery > 0 drops every PUBACK/PUBCOMP except each keepEvery-th
	// of a connection.
	keepEvery  int
	closeAfter time.Duration
	// resetEvery > 0 limits closeAfter to every resetEvery-th publisher
	// connection, which it resets (RST, SO_LINGER 0) instead of closing.
	resetEvery int
	// refuseEvery > 0 closes every refuseEvery-th publisher connection
	// before its CONNECT reaches the broker (a failed connect).
	refuseEvery int
	npub        int // publisher connections seen (under mu)
	// rewriteAck, when not 0, is the packet type every PUBACK/PUBCOMP
	// to a publisher is rewritten to (an ack of another flow).
	rewriteAck byte
	// deliverDelay holds every PUBLISH to a subscriber this long.
	deliverDelay time.Duration
	// holdFrom and holdUntil hold every connection accepted between
	// them until holdUntil before it reaches the broker (a broker or a
	// path that does not accept for a while).
	holdFrom, holdUntil time.Time
	wg                  sync.WaitGroup
	mu                  sync.Mutex
	conns               []net.Conn
	sources             map[string]int // publisher source IP -> connections
}

func startProxy(t *testing.T, target string, p *faultProxy) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.ln = ln
	p.target = strings.TrimPrefix(target, "tcp://")
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go p.handle(c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return "tcp://" + ln.Addr().String()
}

// readRaw reads one packet: its first byte, the raw bytes and the body.
func readRaw(br *bufio.Reader) (byte, []byte, []byte, error) {
	hb, err := br.ReadByte()
	if err != nil {
		return 0, nil, nil, err
	}
	n, _, err := packets.DecodeLength(br)
	if err != nil {
		return 0, nil, nil, err
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		return 0, nil, nil, err
	}
	fh := packets.FixedHeader{Remaining: n}
	var tmp bytes.Buffer
	fh.Encode(&tmp) // the header byte and the length bytes
	raw := append([]byte{hb}, tmp.Bytes()[1:]...)
	return hb, append(raw, body...), body, nil
}

func (p *faultProxy) handle(cl net.Conn) {
	defer p.wg.Done()
	if now := time.Now(); !p.holdUntil.IsZero() && !now.Before(p.holdFrom) && now.Before(p.holdUntil) {
		time.Sleep(p.holdUntil.Sub(now))
	}
	br, err := net.Dial("tcp", p.target)
	if err != nil {
		cl.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, cl, br)
	p.mu.Unlock()
	defer cl.Close()
	defer br.Close()
	cr := bufio.NewReader(cl)
	hb, raw, body, err := readRaw(cr)
	if err != nil || hb>>4 != packets.Connect {
		return
	}
	var pk packets.Packet
	if err := pk.ConnectDecode(body); err != nil {
		return
	}
	id := pk.Connect.ClientIdentifier
	subscriber := strings.Contains(id, "-sub")
	publisher := !subscriber && !strings.Contains(id, "-calib")
	nth := 0
	if publisher {
		p.mu.Lock()
		if p.sources == nil {
			p.sources = map[string]int{}
		}
		p.sources[cl.RemoteAddr().(*net.TCPAddr).IP.String()]++
		p.npub++
		nth = p.npub
		p.mu.Unlock()
		if p.refuseEvery > 0 && nth%p.refuseEvery == 0 {
			return
		}
	}
	if _, err := br.Write(raw); err != nil {
		return
	}
	var wmu sync.Mutex
	p.wg.Add(1)
	go func() { // client -> broker
		defer p.wg.Done()
		_, _ = io.Copy(br, cr)
		br.Close()
		cl.Close()
	}()
	if publisher && p.closeAfter > 0 && (p.resetEvery == 0 || nth%p.resetEvery == 0) {
		t := time.AfterFunc(p.closeAfter, func() {
			if tc, ok := cl.(*net.TCPConn); ok && p.resetEvery > 0 {
				_ = tc.SetLinger(0) // close sends RST
			}
			cl.Close()
			br.Close()
		})
		defer t.Stop()
	}
	bb := bufio.NewReader(br)
	var timers sync.WaitGroup
	defer timers.Wait()
	// later writes raw to the client after d, in its own timer.
	later := func(d time.Duration, raw []byte) {
		timers.Add(1)
		time.AfterFunc(d, func() {
			defer timers.Done()
			wmu.Lock()
			_, _ = cl.Write(raw)
			wmu.Unlock()
		})
	}
	acks := 0
	for { // broker -> client
		hb, raw, _, err := readRaw(bb)
		if err != nil {
			return
		}
		typ := hb >> 4
		if subscriber && typ == packets.Publish && p.deliverDelay > 0 {
			later(p.deliverDelay, raw)
			continue
		}
		if publisher && (typ == packets.Puback || typ == packets.Pubcomp) {
			if p.dropAcks {
				continue
			}
			if p.rewriteAck != 0 {
				raw[0] = p.rewriteAck << 4
			}
			if acks++; p.keepEvery > 0 && acks%p.keepEvery != 0 {
				continue
			}
			if p.ackDelay > 0 {
				later(p.ackDelay, raw)
				continue
			}
		}
		wmu.Lock()
		_, err = cl.Write(raw)
		wmu.Unlock()
		if err != nil {
			return
		}
	}
}
