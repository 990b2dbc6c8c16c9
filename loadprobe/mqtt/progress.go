package mqtt

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/schollz/progressbar/v3"
)

// progress samples the counters once a second into Result.Series and
// shows a progress line on cfg.Progress.
type progress struct {
	done chan struct{}
	wg   sync.WaitGroup
}

func (p *progress) stop() {
	close(p.done)
	p.wg.Wait()
}

func (r *run) startProgress(res *Result) *progress {
	p := &progress{done: make(chan struct{})}
	bar := newProgressBar(&r.cfg)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		// Second t of the series is [start + t-1 s, start + t s) of the
		// schedule, so shards started together line up (report merge
		// adds them per second).
		if wait := time.Until(r.base.Add(time.Duration(r.start))); wait > 0 {
			w := time.NewTimer(wait)
			select {
			case <-p.done:
				w.Stop()
				return
			case <-w.C:
			}
		}
		r.sampleEverySecond(res, p.done, bar)
	}()
	return p
}

// newProgressBar is a spinner on cfg.Progress when it is a terminal, else
// nil. Indeterminate: the description carries connected / target, and a
// bar at its max would finish and stop drawing.
func newProgressBar(cfg *Config) *progressbar.ProgressBar {
	if cfg.Progress == nil || !cfg.ProgressTTY {
		return nil
	}
	return progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(cfg.Progress),
		progressbar.OptionSetDescription("connecting"),
		progressbar.OptionSetWidth(20),
		progressbar.OptionClearOnFinish(),
	)
}

// secCounts counts the publishes, acks and deliveries by the second of
// the schedule they happened in (index t-1 for Second t, from their own
// clock reading), so a row's counts are its second's whatever the
// sampler's timing: a sampler paused (SIGSTOP, a starved core) does not
// move a burst into another row. Events past the last second count in
// it.
type secCounts struct {
	start         int64 // the schedule's start, ns since the run base
	pub, ack, rcv []atomic.Int64
}

// newSecCounts holds seconds seconds from start (ns since the run base).
func newSecCounts(start int64, seconds int) *secCounts {
	seconds = max(seconds, 1)
	return &secCounts{start: start, pub: make([]atomic.Int64, seconds), ack: make([]atomic.Int64, seconds), rcv: make([]atomic.Int64, seconds)}
}

// count adds one event at now (ns since the run base) to c; safe on a
// nil c (before the schedule).
func (c *secCounts) count(which func(*secCounts) []atomic.Int64, now int64) {
	if c == nil {
		return
	}
	which(c)[c.index(now)].Add(1)
}

func pubs(c *secCounts) []atomic.Int64 { return c.pub }
func acks(c *secCounts) []atomic.Int64 { return c.ack }
func rcvs(c *secCounts) []atomic.Int64 { return c.rcv }

// fill sets row's Published, Acked and Received from second row.T of c;
// the last row also takes every later second's events.
func (c *secCounts) fill(row *Second, last bool) {
	i := row.T - 1
	if i >= len(c.pub) {
		return
	}
	j := i + 1
	if last {
		j = len(c.pub)
	}
	row.Published, row.Acked, row.Received = 0, 0, 0
	for ; i < j; i++ {
		row.Published += c.pub[i].Load()
		row.Acked += c.ack[i].Load()
		row.Received += c.rcv[i].Load()
	}
}

// sampleEverySecond appends Second t to res.Series once second t of the
// schedule is over, at each second's end by the schedule's clock (a timer
// aimed at it, not a ticker that drops ticks), until done is closed; then
// the last, partial second up to then (its Seconds says how long it
// was). A sampler that wakes late (the process was stopped, a core
// starved) appends every second that passed meanwhile, each 1 s long, so
// row t is always second t and the rows' Seconds add up to the run's
// length; their counts come from secCounts, by when the events happened,
// re-read at the end when every event is in, and their p95s from the
// latencies recorded by the same second (secP95). It shows each row on bar or,
// every cfg.ProgressEvery, as a line on cfg.Progress.
func (r *run) sampleEverySecond(res *Result, done <-chan struct{}, bar *progressbar.ProgressBar) {
	cfg := &r.cfg
	every := max(1, int(cfg.ProgressEvery/time.Second))
	ack, e2e := latency.New(), latency.New() // secP95's scratch
	counts := r.perSec.Load()
	timer := time.NewTimer(time.Second)
	defer timer.Stop()
	for {
		final := false
		select {
		case <-done:
			final = true
		case <-timer.C:
		}
		at := r.now() - r.start // the schedule's clock
		over := int(at / int64(time.Second))
		connected := r.connected.Load()
		from := len(res.Series)
		for t := from + 1; t <= over; t++ {
			res.Series = append(res.Series, Second{T: t, Seconds: 1, Connected: connected})
		}
		if final {
			// The run's last, partial second: up to its end, so the
			// deliveries of a drain (the burst that ends a stall) are
			// in it, counted over the time it really lasted.
			part := Second{T: over + 1, Seconds: float64(at-int64(over)*int64(time.Second)) / 1e9, Connected: connected}
			counts.fill(&part, true)
			if part.Seconds >= 0.001 || part.Published+part.Acked+part.Received > 0 {
				res.Series = append(res.Series, part)
			}
		}
		for i := range res.Series {
			counts.fill(&res.Series[i], final && i == len(res.Series)-1)
		}
		r.secP95(res.Series, final, ack, e2e)
		if final {
			if bar != nil {
				_ = bar.Finish()
			}
			return
		}
		timer.Reset(time.Duration(int64(over+1)*int64(time.Second)-at) + time.Millisecond)
		if len(res.Series) == from {
			continue
		}
		sec := res.Series[len(res.Series)-1]
		line := fmt.Sprintf("connected %d/%d, %d msg/s out, %d msg/s in, e2e p95 %.1f ms, failed conns %d",
			sec.Connected, r.n, sec.Published, sec.Received, sec.E2EP95, r.failedSoFar())
		switch {
		case bar != nil:
			bar.Describe(line)
			_ = bar.Add(1)
		case cfg.Progress != nil && sec.T%every == 0:
			fmt.Fprintf(cfg.Progress, "mqtt probe %3ds: %s\n", sec.T, line)
		}
	}
}

// failedSoFar is connects failed plus connections lost, for progress.
func (r *run) failedSoFar() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, v := range r.connectFailed {
		n += v
	}
	for _, v := range r.disconnects {
		n += v
	}
	return n
}
