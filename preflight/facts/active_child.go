package facts

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/sysctlkey"
)

// ChildOptions configure the measuring child (see active.go).
type ChildOptions struct {
	// Sockets is K, the sockets to open (K/2 loopback connections).
	Sockets int
	// NofileSoft and NofileHard are the target's RLIMIT_NOFILE; 0 keeps
	// the current limits.
	NofileSoft, NofileHard uint64
	// Timeout bounds the whole measurement.
	Timeout time.Duration
}

// dialWorkers is the number of concurrent connect() calls.
const dialWorkers = 32

// RunActiveChild is the body of `hostprep preflight __active-child`: it
// takes the target's fd limits, opens K sockets as loopback connections,
// measures the kernel memory they cost, closes them (RST, no TIME_WAIT) and
// returns what it saw. Only a failure to set up (no loopback, no
// /proc/meminfo) is an error; running out of fds or ports is a result.
func RunActiveChild(ctx context.Context, o ChildOptions) (*ActiveResult, error) {
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	r := &ActiveResult{RequestedSockets: o.Sockets}
	if err := applyNofile(o, r); err != nil {
		return nil, err
	}

	mem, err := openMeminfo()
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	before, err := mem.read()
	if err != nil {
		return nil, err
	}

	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen on 127.0.0.1: %w", err)
	}
	defer ln.Close()
	p := &loopbackPairs{r: r, perSource: childPortsPerSource(), addr: ln.Addr().(*net.TCPAddr)}
	defer p.closeAll()

	conns := o.Sockets / 2
	accepted := make(chan struct{}, conns+1)
	go p.acceptLoop(ln, accepted)

	start := time.Now()
	var sl slabSamples
	sl.add(0, before)
	if err := p.openInBatches(ctx, conns, accepted, mem, &sl); err != nil {
		return nil, err
	}
	r.DurationMS = float64(time.Since(start).Microseconds()) / 1000
	r.TimedOut = ctx.Err() != nil
	if r.TimedOut && r.FirstError == "" {
		r.FirstError, r.FirstErrorOp, r.FirstErrorMessage = "ETIMEDOUT", "connect", fmt.Sprintf("time bound %s reached", o.Timeout)
	}
	p.mu.Lock()
	r.Connections = min(len(p.clients), len(p.servers))
	r.ReachedSockets = len(p.clients) + len(p.servers)
	p.mu.Unlock()
	r.SourceAddresses = int(p.maxSrc.Load())
	sl.fit(r)
	return r, nil
}

// loopbackPairs are the connections the active child opens to its own
// listener: the client ends, the accepted ends, and the first error that
// stopped the opening (recorded into r once).
type loopbackPairs struct {
	r         *ActiveResult
	perSource int64        // ports per loopback source address
	addr      *net.TCPAddr // the listener
	mu        sync.Mutex
	clients   []*net.TCPConn
	servers   []*net.TCPConn
	firstOnce sync.Once
	stopped   atomic.Bool
	next      atomic.Int64 // index of the next connection to open
	maxSrc    atomic.Int64 // source addresses used so far
}

// setFirst records the first failing operation and its error, and stops
// the opening.
func (p *loopbackPairs) setFirst(op string, err error) {
	p.firstOnce.Do(func() {
		p.r.FirstErrorOp, p.r.FirstError, p.r.FirstErrorMessage = op, errnoName(err), err.Error()
	})
	p.stopped.Store(true)
}

// closeAll closes everything with SO_LINGER 0 on both sides: close() sends
// a RST and neither side enters TIME_WAIT, whichever closes first.
func (p *loopbackPairs) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range p.servers {
		_ = s.SetLinger(0)
		_ = s.Close()
	}
	for _, c := range p.clients {
		_ = c.SetLinger(0)
		_ = c.Close()
	}
}

// acceptLoop keeps the accepted ends until ln is closed, signalling each on
// accepted.
func (p *loopbackPairs) acceptLoop(ln net.Listener, accepted chan<- struct{}) {
	for {
		c, err := ln.Accept()
		if err != nil {
			if !errors.Is(err, net.ErrClosed) {
				p.setFirst("accept", err)
			}
			return
		}
		p.mu.Lock()
		p.servers = append(p.servers, c.(*net.TCPConn))
		p.mu.Unlock()
		accepted <- struct{}{}
	}
}

// dialOne opens the next connection from the next loopback source address
// with free ports (127.0.0.1, then 127.0.0.2 ...); false when it failed
// (the first failure is recorded) or more than 251 sources are needed.
func (p *loopbackPairs) dialOne(ctx context.Context) bool {
	i := p.next.Add(1) - 1
	src := i / p.perSource // 0 -> 127.0.0.1, 1 -> 127.0.0.2 ...
	if src > 250 {
		p.setFirst("connect", fmt.Errorf("more than 251 loopback source addresses needed: %w", syscall.EADDRNOTAVAIL))
		return false
	}
	for {
		cur := p.maxSrc.Load()
		if src+1 <= cur || p.maxSrc.CompareAndSwap(cur, src+1) {
			break
		}
	}
	d := net.Dialer{
		LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+src))},
		Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			_ = c.Control(func(fd uintptr) {
				serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
			})
			return serr
		},
	}
	dctx, dcancel := context.WithTimeout(ctx, 5*time.Second)
	c, err := d.DialContext(dctx, "tcp4", p.addr.String())
	dcancel()
	if err != nil {
		if ctx.Err() == nil {
			p.setFirst("connect", err)
		}
		return false
	}
	p.mu.Lock()
	p.clients = append(p.clients, c.(*net.TCPConn))
	p.mu.Unlock()
	return true
}

// openInBatches opens conns connections in batches; after each, it waits
// for the accept side and samples Slab, so the cost per socket is the
// slope of a least-squares fit over many points rather than one
// difference that other processes' slab activity can swamp. It stops at
// the first failure or when ctx ends; the error is only /proc/meminfo's.
func (p *loopbackPairs) openInBatches(ctx context.Context, conns int, accepted <-chan struct{}, mem *meminfo, sl *slabSamples) error {
	batch := max(1, conns/activeSamples)
	got := 0
	for done := 0; done < conns && !p.stopped.Load() && ctx.Err() == nil; {
		n := min(batch, conns-done)
		var wg sync.WaitGroup
		per := (n + dialWorkers - 1) / dialWorkers
		for w := 0; w < n; w += per {
			cnt := min(per, n-w)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < cnt && !p.stopped.Load() && ctx.Err() == nil; j++ {
					if !p.dialOne(ctx) {
						return
					}
				}
			}()
		}
		wg.Wait()
		done += n
		p.mu.Lock()
		nc := len(p.clients)
		p.mu.Unlock()
		got = waitAccepted(ctx, accepted, got, nc, 2*time.Second)
		mi, err := mem.read()
		if err != nil {
			return err
		}
		sl.add(nc+got, mi)
	}
	return nil
}

// slabSamples are Slab and SUnreclaim (bytes, from /proc/meminfo) against
// the sockets open when each was read.
type slabSamples struct{ xs, ys, ysU []float64 }

func (s *slabSamples) add(sockets int, mi map[string]int64) {
	s.xs = append(s.xs, float64(sockets))
	s.ys, s.ysU = append(s.ys, float64(mi["Slab"])), append(s.ysU, float64(mi["SUnreclaim"]))
}

// fit writes the deltas, the sample count and the least-squares slopes
// (bytes per socket, with R²) into r.
func (s *slabSamples) fit(r *ActiveResult) {
	last := len(s.ys) - 1
	r.SlabDeltaBytes = int64(s.ys[last] - s.ys[0])
	r.SUnreclaimDeltaBytes = int64(s.ysU[last] - s.ysU[0])
	r.Samples = len(s.xs)
	if slope, ok := leastSquaresSlope(s.xs, s.ys); ok && slope > 0 {
		r.BytesPerSocket = slope
		r.SlabFitR2 = rSquared(s.xs, s.ys, slope)
	}
	if slope, ok := leastSquaresSlope(s.xs, s.ysU); ok && slope > 0 {
		r.SUnreclaimPerSocket = slope
	}
}

// activeSamples is the number of Slab samples taken while opening.
const activeSamples = 20

// waitAccepted counts accept notifications until want have arrived or
// the wait expires; it returns the new count.
func waitAccepted(ctx context.Context, accepted <-chan struct{}, got, want int, wait time.Duration) int {
	t := time.NewTimer(wait)
	defer t.Stop()
	for got < want {
		select {
		case <-accepted:
			got++
		case <-t.C:
			return got
		case <-ctx.Done():
			return got
		}
	}
	return got
}

// leastSquaresSlope fits y = a + b x and returns b.
func leastSquaresSlope(xs, ys []float64) (float64, bool) {
	n := float64(len(xs))
	if len(xs) < 2 || len(xs) != len(ys) {
		return 0, false
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, false
	}
	return (n*sxy - sx*sy) / den, true
}

// rSquared is the coefficient of determination of the least-squares line
// with slope b through (xs, ys): 1 when Slab follows the sockets exactly,
// near 0 when it is noise. 0 when ys do not vary.
func rSquared(xs, ys []float64, b float64) float64 {
	n := float64(len(xs))
	var sx, sy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
	}
	a := (sy - b*sx) / n
	my := sy / n
	var ssRes, ssTot float64
	for i := range xs {
		e := ys[i] - (a + b*xs[i])
		ssRes += e * e
		d := ys[i] - my
		ssTot += d * d
	}
	if ssTot == 0 {
		return 0
	}
	return 1 - ssRes/ssTot
}

// applyNofile sets this process's RLIMIT_NOFILE to the target's.
func applyNofile(o ChildOptions, r *ActiveResult) error {
	var cur unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &cur); err != nil {
		return fmt.Errorf("getrlimit(RLIMIT_NOFILE): %w", err)
	}
	want := cur
	if o.NofileHard != 0 {
		want = unix.Rlimit{Cur: o.NofileSoft, Max: o.NofileHard}
	}
	if want.Cur > want.Max {
		want.Cur = want.Max
	}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		// Raising the hard limit needs CAP_SYS_RESOURCE: run at what we have.
		got := unix.Rlimit{Cur: min(want.Cur, cur.Max), Max: cur.Max}
		if err2 := unix.Setrlimit(unix.RLIMIT_NOFILE, &got); err2 != nil {
			return fmt.Errorf("setrlimit(RLIMIT_NOFILE, %d:%d): %w", got.Cur, got.Max, err2)
		}
		r.LimitNote = fmt.Sprintf("could not take the target's nofile %s:%s (%v: raising the hard limit needs CAP_SYS_RESOURCE); measured at %d:%d",
			FmtNofile(want.Cur), FmtNofile(want.Max), err, got.Cur, got.Max)
		want = got
	}
	r.NofileSoft, r.NofileHard = want.Cur, want.Max
	return nil
}

// childPortsPerSource is how many connections one source address makes to
// the one listener: the ephemeral range minus reserved ports, less a margin
// so connect() does not search a nearly full range.
func childPortsPerSource() int64 {
	f := &Facts{Sysctl: map[string]string{}}
	for _, k := range []string{"net.ipv4.ip_local_port_range", "net.ipv4.ip_local_reserved_ports"} {
		if b, err := os.ReadFile(sysctlkey.File("/proc/sys", k)); err == nil {
			f.Sysctl[k] = strings.TrimSpace(string(b))
		}
	}
	lo, hi, ok := PortRange(f)
	if !ok {
		return 28232 * 9 / 10
	}
	n := hi - lo + 1 - ReservedIn(ReservedPorts(f), lo, hi)
	return max(1, n*9/10)
}

// meminfo reads /proc/meminfo through a file opened once, so sampling
// still works when the process has used up its fd limit.
type meminfo struct{ f *os.File }

func openMeminfo() (*meminfo, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return nil, fmt.Errorf("--active needs /proc/meminfo: %w", err)
	}
	return &meminfo{f: f}, nil
}

func (m *meminfo) Close() error { return m.f.Close() }

// read returns /proc/meminfo in bytes by field name.
func (m *meminfo) read() (map[string]int64, error) {
	if _, err := m.f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("/proc/meminfo: %w", err)
	}
	out := map[string]int64{}
	sc := bufio.NewScanner(m.f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		out[name] = n
	}
	return out, sc.Err()
}

// errnoName classifies an error by its errno (EMFILE, ENFILE,
// EADDRNOTAVAIL, ENOBUFS, ...); timeouts are ETIMEDOUT.
func errnoName(err error) string {
	var en syscall.Errno
	if errors.As(err, &en) {
		if n := unix.ErrnoName(en); n != "" {
			return n
		}
		return fmt.Sprintf("errno %d", int(en))
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "ETIMEDOUT"
	}
	return "error"
}
