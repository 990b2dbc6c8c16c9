package mqtt

import (
	"fmt"
	"sync"
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

// sampleEverySecond appends one Second to res.Series each second until
// done is closed, then the last, partial second up to then (its Seconds
// says how long it was), and shows each on bar or, every
// cfg.ProgressEvery, as a line on cfg.Progress.
func (r *run) sampleEverySecond(res *Result, done <-chan struct{}, bar *progressbar.ProgressBar) {
	cfg := &r.cfg
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last [3]int64 // published, acked, received at the last sample
	start := time.Now()
	every := int(cfg.ProgressEvery / time.Second)
	if every < 1 {
		every = 1
	}
	// Running totals at the last second and now, and the second's window.
	var tot [2][2]*latency.Recorder
	for i := range tot {
		tot[i] = [2]*latency.Recorder{latency.New(), latency.New()}
	}
	ack, e2e := latency.New(), latency.New()
	lastAt := time.Now()
	for {
		final := false
		select {
		case <-done:
			final = true
		case <-t.C:
		}
		now := time.Now()
		sec := r.sampleSecond(len(res.Series)+1, &tot, ack, e2e, &last)
		sec.Seconds = 1
		if final {
			// The run's last, partial second: up to its end, so the
			// deliveries of a drain (the burst that ends a stall) are
			// in the series, counted over the time it really lasted.
			sec.Seconds = min(1, now.Sub(lastAt).Seconds())
			if sec.Seconds > 0 && (sec.Seconds >= 0.001 || sec.Published+sec.Acked+sec.Received > 0) {
				res.Series = append(res.Series, sec)
			}
			if bar != nil {
				_ = bar.Finish()
			}
			return
		}
		lastAt = now
		res.Series = append(res.Series, sec)
		line := fmt.Sprintf("connected %d/%d, %d msg/s out, %d msg/s in, e2e p95 %.1f ms, failed conns %d",
			sec.Connected, r.n, sec.Published, sec.Received, sec.E2EP95, r.failedSoFar())
		switch {
		case bar != nil:
			bar.Describe(line)
			_ = bar.Add(1)
		case cfg.Progress != nil && sec.T%every == 0:
			fmt.Fprintf(cfg.Progress, "mqtt probe %3.0fs: %s\n", time.Since(start).Seconds(), line)
		}
	}
}

// sampleSecond is second t of the series: the counters' increase since
// last (updated) and the p95 (ms) of the ack and end-to-end latencies
// recorded in that second, read as the shards' running totals now minus
// at the last second (tot[0] is the last second's ack and e2e totals,
// tot[1] scratch for now's; they swap) into ack and e2e.
func (r *run) sampleSecond(t int, tot *[2][2]*latency.Recorder, ack, e2e *latency.Recorder, last *[3]int64) Second {
	now := tot[1]
	now[0].Reset()
	now[1].Reset()
	var rc int64 // deliveries, counted with their latencies (shard.received)
	for _, s := range r.shards {
		s.mu.Lock()
		now[0].Merge(s.ack)
		now[0].Merge(s.warmAck)
		now[1].Merge(s.e2e)
		now[1].Merge(s.warmE2E)
		rc += s.received
		s.mu.Unlock()
	}
	ack.Since(now[0], tot[0][0])
	e2e.Since(now[1], tot[0][1])
	tot[0], tot[1] = tot[1], tot[0]
	pub, ak := r.published.Load(), r.acked.Load()
	sec := Second{
		T:         t,
		Connected: r.connected.Load(),
		Published: pub - last[0],
		Acked:     ak - last[1],
		Received:  rc - last[2],
		AckP95:    float64(ack.Quantile(95)) / 1e6,
		E2EP95:    float64(e2e.Quantile(95)) / 1e6,
	}
	*last = [3]int64{pub, ak, rc}
	return sec
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
