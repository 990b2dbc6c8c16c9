package iotdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hostprep/hostprep/loadprobe/counts"
	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/hostprep/hostprep/loadprobe/pacer"
)

// workerStats is one worker's tally, merged at the end of a step.
type workerStats struct {
	lat           *latency.Recorder
	ok, errs      int64
	reads, writes int64
	points        int64
	byClass       map[string]int64
	codes         map[string]int64
	samples       map[string]string
	redirects     int64
	missed        int64 // open loop: operations due before the end (or the cut) that never started
	cuts          int64 // operations under way when the step was cut short (workerStats.cut)

	// The longest gap between answers this worker ended (answerClock),
	// and where it began (timeline ns).
	gap     time.Duration
	gapFrom int64

	// The second being counted (since the step's start) and its tally,
	// handed to the step's seconds when the next second begins.
	sec                          int
	secLat                       *latency.Recorder
	secOps, secErrs, secAnswered int64
}

func newWorkerStats() *workerStats {
	return &workerStats{lat: latency.New(), secLat: latency.New(), byClass: map[string]int64{}, codes: map[string]int64{}, samples: map[string]string{}}
}

// add counts an operation of kind that ended with n points or err; it
// tells whether the server answered it (answeredBy).
func (s *workerStats) add(kind opKind, n int64, err error) (answered bool) {
	if kind == opRead {
		s.reads++
	} else {
		s.writes++
	}
	s.secOps++
	if err == nil {
		s.ok++
		s.secAnswered++
		s.points += n
		return true
	}
	s.errs++
	s.secErrs++
	class, code := classify(err)
	if class == ClassStatus {
		s.secAnswered++ // the server answered, with an error status
	}
	s.byClass[class]++
	if class == ClassStatus {
		s.codes[strconv.Itoa(int(code))]++
	}
	if _, ok := s.samples[class]; !ok {
		s.samples[class] = err.Error()
	}
	return class == ClassStatus
}

// seconds collects a step's per-second latency from its workers, and
// their answers on the run's timeline (clock; nil when the step is not
// on it: the warm-up, an open loop owing less than one operation a
// second).
type seconds struct {
	clock    *answerClock
	mu       sync.Mutex
	lat      []*latency.Recorder
	ops      []int64
	errs     []int64
	answered []int64
}

// flush hands worker s's tally of its current second to ss and starts
// second sec.
func (ss *seconds) flush(s *workerStats, sec int) {
	if s.secOps > 0 {
		ss.mu.Lock()
		for len(ss.lat) <= s.sec {
			ss.lat = append(ss.lat, latency.New())
			ss.ops = append(ss.ops, 0)
			ss.errs = append(ss.errs, 0)
			ss.answered = append(ss.answered, 0)
		}
		ss.lat[s.sec].Merge(s.secLat)
		ss.ops[s.sec] += s.secOps
		ss.errs[s.sec] += s.secErrs
		ss.answered[s.sec] += s.secAnswered
		ss.mu.Unlock()
		s.secLat.Reset()
		s.secOps, s.secErrs, s.secAnswered = 0, 0, 0
	}
	s.sec = sec
}

// stats is the per-second series (for the heat map) over at least the
// step's elapsed time (a step that overran its duration, or whose last
// seconds saw no answer, has those seconds too); seconds without an
// operation have zeros.
func (ss *seconds) stats(elapsed time.Duration) []SecondStats {
	n := max(len(ss.lat), int(math.Ceil(elapsed.Seconds())))
	out := make([]SecondStats, n)
	for i := range out {
		out[i].Second = i
	}
	for i, l := range ss.lat {
		out[i] = SecondStats{Second: i, Ops: ss.ops[i], Errors: ss.errs[i], Answered: ss.answered[i]}
		if sum := l.Summary(); sum.Count > 0 {
			out[i].P50Ms, out[i].P95Ms, out[i].P99Ms, out[i].MaxMs = sum.P50, sum.P95, sum.P99, sum.Max
		}
	}
	return out
}

// sampler samples pool use, workers waiting for a session and its own
// scheduling lag every interval until stopped.
type sampler struct {
	samples, waitingSamples int
	sum, maxInUse, waitSum  int64
	lagSum, lagMax          time.Duration
	stop                    chan struct{}
	wg                      sync.WaitGroup
}

func startSampler(p *sessionPool, interval time.Duration) *sampler {
	sm := &sampler{stop: make(chan struct{})}
	sm.wg.Add(1)
	go func() {
		defer sm.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-sm.stop:
				return
			case now := <-t.C:
				// The tick's lateness: how long a runnable goroutine waited
				// for a CPU (the ticker's channel holds the due time).
				lag := max(time.Since(now), 0)
				v, wt := p.inUse.Load(), p.waiting.Load()
				sm.samples++
				sm.sum += v
				sm.maxInUse = max(sm.maxInUse, v)
				sm.waitSum += wt
				if wt > 0 {
					sm.waitingSamples++
				}
				sm.lagSum += lag
				sm.lagMax = max(sm.lagMax, lag)
			}
		}
	}()
	return sm
}

func (sm *sampler) finish() { close(sm.stop); sm.wg.Wait() }

// cpuTime is the process's user+system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runStep keeps n workers busy for cfg.StepDuration and measures them,
// on the client path choosePath picks from n and prev (the client use of
// the step before, nil for none): the event loop (runLoop), a loop per
// worker on its own thread (PathDirect, runDirect), or a goroutine per
// worker (runWorker).
//
// A worker whose operation fails to connect backs off (see backoffMin);
// when lv finds the server unreachable the step ends early. When ctx ends,
// calls in flight are cut at once (sessionPool.interrupt, or the loop's
// abort), each a censored latency (workerStats.cut).
func runStep(ctx context.Context, cfg *Config, p *sessionPool, w *workload, n int, lv *liveness, tl timelineStep, prev *ClientUse) Step {
	stepCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopInterrupt := context.AfterFunc(ctx, p.interrupt)
	defer stopInterrupt()
	cut := &cutClock{}
	stopCut := context.AfterFunc(stepCtx, func() { cut.at() })
	defer stopCut()
	start := time.Now()
	cpu0 := cpuTime()
	local := cfg.Shard.Count(n) // this shard's workers of the step's n
	stats := make([]*workerStats, local)
	secs := &seconds{clock: tl.clock}
	if tl.clock != nil {
		tl.clock.beginStep(tl.step, start)
	}
	sm := startSampler(p, cfg.SampleInterval)
	workers := make([]int, local)
	for i := range workers {
		stats[i], workers[i] = newWorkerStats(), cfg.Shard.Global(i)
	}
	procs := runtime.GOMAXPROCS(0)
	path, why := choosePath(cfg, p, local, procs, prev)
	worker := func(i int) { runWorker(stepCtx, cancel, cfg, p, w, workers[i], start, stats[i], secs, lv, cut) }
	switch path {
	case PathLoop:
		if err := runLoop(stepCtx, cancel, cfg, p, w, workers, start, stats, secs, lv, false); err != nil {
			slog.Warn("iotdb probe: no event loop, one goroutine per worker instead", "err", err)
			path, why = PathGoroutines, "no event loop ("+err.Error()+"): a goroutine per worker"
		}
	case PathDirect:
		if err := runDirect(stepCtx, cancel, cfg, p, w, workers, start, stats, secs, lv, worker); err != nil {
			why += "; but " + err.Error()
		}
	}
	if path == PathGoroutines {
		var wg sync.WaitGroup
		for i := range local {
			wg.Add(1)
			go func() {
				defer wg.Done()
				worker(i)
			}()
		}
		wg.Wait()
	}
	sm.finish()
	elapsed := time.Since(start)
	out := mergeStats(n, stats, w.scenario, elapsed)
	if tl.clock != nil {
		out.NoAnswer = tl.clock.endStep(start.Add(elapsed), stats)
	}
	if cfg.Shard.On() {
		out.ShardWorkers = local
	}
	out.Seconds = secs.stats(elapsed)
	out.Pool = PoolUse{Size: p.size, MaxUsed: sm.maxInUse, Samples: sm.samples}
	if sm.samples > 0 {
		out.Pool.MeanUsed = float64(sm.sum) / float64(sm.samples)
		out.Pool.MeanWaiting = float64(sm.waitSum) / float64(sm.samples)
		out.Pool.WaitingShare = float64(sm.waitingSamples) / float64(sm.samples)
		out.Client.SchedLagMeanMs = ms(sm.lagSum / time.Duration(sm.samples))
	}
	out.Pool.MeanUtil = out.Pool.MeanUsed / float64(p.size)
	out.Pool.MaxUtil = float64(out.Pool.MaxUsed) / float64(p.size)
	out.Client.SchedLagMaxMs = ms(sm.lagMax)
	out.Client.path(path, why, local, procs)
	cpu := cpuTime() - cpu0
	out.Client.CPUCores = cpu.Seconds() / elapsed.Seconds()
	if out.Ops > 0 {
		out.Client.CPUPerOpUs = float64(cpu.Microseconds()) / float64(out.Ops)
	}
	return out
}

// path records the client path a step of local workers ran on, why, and
// the CPUs its operations could use (procs: GOMAXPROCS).
func (c *ClientUse) path(path, why string, local, procs int) {
	c.Path, c.PathReason = path, why
	switch path {
	case PathLoop:
		c.Cores, c.EventLoop = 1, true
	case PathDirect:
		c.Cores, c.EventLoop = local, true
	default:
		c.Cores = procs
	}
}

// runDirect runs each of the workers on a loop of its own (runLoop,
// direct), each on a locked OS thread, blocking in read(2) for its
// answers (PathDirect). A worker whose loop could not be set up (epoll
// or eventfd: EMFILE) runs as a goroutine (worker(i)) and the error,
// the first such, is returned after the step.
func runDirect(ctx context.Context, cancel context.CancelFunc, cfg *Config, p *sessionPool, w *workload, workers []int,
	start time.Time, stats []*workerStats, secs *seconds, lv *liveness, worker func(i int)) error {
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			if err := runLoop(ctx, cancel, cfg, p, w, workers[i:i+1], start, stats[i:i+1], secs, lv, true); err != nil {
				once.Do(func() { first = fmt.Errorf("worker %d ran as a goroutine: no loop (%w)", workers[i], err) })
				worker(i)
			}
		}()
	}
	wg.Wait()
	return first
}

// cutClock is when a step's context ended (the run interrupted, or the
// server found unreachable): the one time every worker censors its
// missed operations at.
type cutClock struct{ ns atomic.Int64 }

// at is the time the step was cut: the first call's clock (the step's
// context.AfterFunc, or a worker that saw the context end first).
func (c *cutClock) at() time.Time {
	c.ns.CompareAndSwap(0, time.Now().UnixNano())
	return time.Unix(0, c.ns.Load())
}

// runWorker is one worker's loop: closed (next operation when the last
// returned) or open (cfg.Rate operations/s on a fixed schedule, latency
// from the scheduled start, as wrk2 measures). When ctx ends, an open
// loop's operations due before the cut (cut.at) that it never started
// (it was busy, or backing off) are missed, each censored at the cut
// (workerStats.censorMissed); those due after it are not counted.
func runWorker(ctx context.Context, cancel context.CancelFunc, cfg *Config, p *sessionPool, w *workload, worker int,
	start time.Time, st *workerStats, secs *seconds, lv *liveness, cut *cutClock) {
	defer secs.flush(st, 0)
	end := start.Add(cfg.StepDuration)
	rng := mrand.New(mrand.NewPCG(uint64(worker), uint64(start.UnixNano())))
	ops := w.newWorkerOps(worker, rng)
	var backoff time.Duration
	// Open loop: operation k of this worker is due at its phase plus
	// k/Rate (the workers' phases spread over one interval).
	sched := pacer.Constant{Rate: cfg.Rate}
	var phase time.Duration
	if cfg.Rate > 0 {
		phase = pacer.Grid{Interval: sched.Interval()}.Phase(worker)
	}
	k := 0
	// cutShort counts the operations from operation from on that were
	// due before the cut and never started (open loop).
	cutShort := func(from int) {
		if cfg.Rate > 0 {
			at := cut.at().Sub(start)
			st.censorMissed(sched, phase, min(cfg.StepDuration, at), at, from)
		}
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var began time.Time
		if cfg.Rate > 0 {
			next := start.Add(phase + sched.At(k))
			// Behind schedule, next is already past: stop at the step's
			// end all the same, counting what never started.
			if !next.Before(end) || !time.Now().Before(end) || !sleep(ctx, timer, time.Until(next)) {
				if ctx.Err() != nil { // interrupted: the step is partial
					cutShort(k)
					return
				}
				// Censored at the time the worker got back: the step's
				// end, or later when a call outlived it (a stall).
				st.censorMissed(sched, phase, cfg.StepDuration, max(cfg.StepDuration, time.Since(start)), k)
				// The step's window is its duration: TPS is measured
				// over all of it, not up to the last scheduled start.
				sleep(ctx, timer, time.Until(end))
				return
			}
			began, k = next, k+1
		} else if began = time.Now(); !began.Before(end) {
			return
		}
		if ctx.Err() != nil {
			cutShort(k - 1) // operation k-1 was due, and not started
			return
		}
		kind := ops.next()
		pts, err := p.do(ctx, ops.prefer, ops.exec)
		if errors.Is(err, context.Canceled) && ctx.Err() != nil {
			st.cut(began, time.Now())
			cutShort(k)
			return
		}
		st.record(secs, start, began, time.Now(), ops, kind, pts, err)
		var stop bool
		if backoff, stop = nextBackoff(err, backoff, lv); stop {
			cancel() // the server is gone: end the step for every worker
			cutShort(k)
			return
		}
		if backoff > 0 && !sleep(ctx, timer, jitter(backoff, rng)) {
			cutShort(k)
			return
		}
	}
}

// record counts an operation of kind that began at began and ended at
// now with pts points or err (and a redirection its answer carried) in
// st and, per second since the step's start, in secs, and its answer on
// the run's timeline (secs.clock).
//
// Its latency is now - began. An operation the server answered (a
// success, or an error status: a refused statement) is recorded as it
// is; one that failed without an answer (a deadline, a reset or dropped
// connection, no session within --wait-timeout, no session opened) is
// recorded censored at the time it had waited: its answer would have
// taken at least that, so p95, p99 and max include it instead of being
// computed over the survivors only (a 1.7 s hang failed 8 operations at
// the 1 s --call-timeout and left p99 at 2.06 ms).
func (st *workerStats) record(secs *seconds, start, began, now time.Time, ops *workerOps, kind opKind, pts int64, err error) {
	if ops.redirected {
		st.redirects++
		ops.redirected = false
	}
	if sec := int(now.Sub(start) / time.Second); sec != st.sec {
		secs.flush(st, sec)
	}
	answered := st.add(kind, pts, err)
	if answered && secs.clock != nil {
		if gap, from := secs.clock.answered(now); gap > st.gap {
			st.gap, st.gapFrom = gap, from
		}
	}
	d := now.Sub(began)
	if answered {
		st.lat.Record(d)
		st.secLat.Record(d)
		return
	}
	st.lat.RecordCensored(d, 0)
	st.secLat.RecordCensored(d, 0)
}

// cut records an operation that began at began and was cut at now
// because the step ended before its answer (the run interrupted, or the
// server found unreachable): a latency censored at the time it had
// waited, since its answer would have taken at least that. It is not
// counted as an operation or an error (the step is partial, no verdict)
// but as Step.Cut, so the step's latencies may outnumber its operations,
// as with Missed.
// An interrupt during a hang left the step's max at 8.9 ms while its
// calls had waited 2.5 s.
func (st *workerStats) cut(began, now time.Time) {
	st.cuts++
	st.lat.RecordCensored(now.Sub(began), 0)
}

// nextBackoff is the back-off before a worker's next operation after one
// that ended with err, given the last back-off (0 after a success): 0
// unless err is a connect failure, then doubled within [backoffMin,
// backoffMax] (the pause is jitter of it); stop when lv finds the server
// unreachable (the step ends).
func nextBackoff(err error, last time.Duration, lv *liveness) (backoff time.Duration, stop bool) {
	if class, _ := classify(err); err == nil || class != ClassConnect {
		lv.reached()
		return 0, false
	}
	if lv.connectFailed(err) {
		return 0, true
	}
	return min(max(2*last, backoffMin), backoffMax), false
}

// jitter is the pause for back-off b: half of it fixed, half random.
func jitter(b time.Duration, rng *mrand.Rand) time.Duration {
	return b/2 + time.Duration(rng.Int64N(int64(b/2)+1))
}

// censorMissed counts the operations of a worker's open-loop schedule
// due before dur (since the step's start: its duration, or the cut when
// ctx ended before it) from operation k on, which it never started
// (Missed), and records each in the latency at the time it had waited
// when the worker got back or the step was cut, at (dur, or later when
// its last call outlived the step), censored (>= at - its scheduled
// start): an operation the schedule owed and the server never got to is
// the slowest of all, not one left out (coordinated omission).
// A stall at a step's end showed as a low p95 with half the schedule
// missing; censored at dur instead of at, a stall that held a call 1.1 s
// past the step's end showed p95 592 ms where the owed operations had
// waited 1.1-1.9 s.
func (st *workerStats) censorMissed(sched pacer.Constant, phase, dur, at time.Duration, k int) {
	n := missedOps(sched, phase, dur, k)
	st.missed += n
	for i := range min(n, maxCensoredMissed) {
		st.lat.RecordCensored(at-phase-sched.At(k+int(i)), 0)
	}
}

// maxCensoredMissed bounds the censored latencies one worker records per
// step (an absurd --rate would otherwise loop for long); beyond it Missed
// still counts them.
const maxCensoredMissed = 1 << 20

// missedOps is how many operations of a worker's open-loop schedule
// (phase + i/Rate) fall before the step's duration from operation k on:
// the ones it never started. Capped at MaxInt64/2 for absurd rates.
func missedOps(sched pacer.Constant, phase, dur time.Duration, k int) int64 {
	due := math.Ceil((dur - phase).Seconds() * sched.Rate)
	if due > math.MaxInt64/2 {
		return math.MaxInt64 / 2
	}
	return max(0, int64(due)-int64(k))
}

// sleep waits d on timer (stopped, reused); false when ctx ended first.
func sleep(ctx context.Context, timer *time.Timer, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	timer.Reset(d)
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		timer.Stop()
		return false
	}
}

// mergeStats adds the workers' tallies into the step of n workers that
// ran for elapsed.
func mergeStats(n int, stats []*workerStats, scenario string, elapsed time.Duration) Step {
	out := Step{Workers: n, DurationS: elapsed.Seconds(), ErrorsByClass: map[string]int64{}, StatusCodes: map[string]int64{}, ErrorSamples: map[string]string{}}
	lat := latency.New()
	for _, st := range stats {
		lat.Merge(st.lat)
		counts.Sum([2]*int64{&out.OK, &st.ok}, [2]*int64{&out.Errors, &st.errs}, [2]*int64{&out.Reads, &st.reads},
			[2]*int64{&out.Writes, &st.writes}, [2]*int64{&out.Points, &st.points}, [2]*int64{&out.Redirects, &st.redirects},
			[2]*int64{&out.Missed, &st.missed}, [2]*int64{&out.Cut, &st.cuts})
		out.ErrorsByClass = counts.Add(out.ErrorsByClass, st.byClass)
		out.StatusCodes = counts.Add(out.StatusCodes, st.codes)
		for k, v := range st.samples {
			if _, ok := out.ErrorSamples[k]; !ok {
				out.ErrorSamples[k] = v
			}
		}
	}
	if scenario != ScenarioMixed {
		out.Reads, out.Writes = 0, 0
	}
	out.Ops = out.OK + out.Errors
	out.Unanswered = unanswered(&out)
	if out.Ops > 0 {
		out.ErrorRate = float64(out.Errors) / float64(out.Ops)
	}
	out.Latency = lat.Summary()
	if s := elapsed.Seconds(); s > 0 {
		out.TPS = float64(out.OK) / s
		out.PointsPerS = float64(out.Points) / s
	}
	if len(out.ErrorsByClass) == 0 {
		out.ErrorsByClass, out.StatusCodes, out.ErrorSamples = nil, nil, nil
	}
	if len(out.StatusCodes) == 0 {
		out.StatusCodes = nil
	}
	return out
}
