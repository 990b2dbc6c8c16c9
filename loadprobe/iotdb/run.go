package iotdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
)

// Run executes the probe: it opens the SessionPool, reads the server
// version, creates root.hostprep_<run id> and its time series, runs every
// step of cfg.Steps, deletes the database (unless cfg.Keep) and judges the
// steps against cfg.Thresholds. Setup and clean-up calls run under
// max(cfg.CallTimeout, AdminCallTimeout), the load's calls under
// cfg.CallTimeout; a clean-up that fails adds the warning check
// CheckCleanup (with the statement to run), and a setup that fails deletes
// what it may have created before returning.
//
// Errors: exitcode.BadInput for an invalid cfg (nothing is contacted);
// exitcode.Environment when no session can be opened or the database
// cannot be set up (nothing measured). Errors during the load are counted
// per step, not returned. A threshold that fails gives Result.Verdict
// "fail" and a nil error; the caller maps it to exit code 1. When ctx is
// cancelled before the last step ended, the steps measured so far are
// returned with an exitcode.Environment error saying "interrupted", after
// clean-up. When it is cancelled after the last step, during the
// clean-up, the result is complete (CleanupInterrupted) and the error is
// nil, unless cfg.StopCleanup ended the clean-up's wait: then it is an
// exitcode.Environment error naming what may have been left.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	if cfg.RunID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		cfg.RunID = hex.EncodeToString(b[:])
	}
	prefix := probePrefix(cfg.Database, cfg.RunID)
	res := newResult(&cfg, prefix)
	defer func() { res.DurationS = time.Since(res.Started).Seconds() }()
	pool := newSessionPool(&cfg)
	defer pool.close(cfg.CallTimeout)

	w := newWorkload(&cfg, prefix)
	if err := setup(ctx, pool, &cfg, w, res); err != nil {
		if ctx.Err() != nil {
			left := ""
			if res.DeleteError != "" {
				left = fmt.Sprintf("; %s %s (delete failed: %s): delete it with: %s", prefix, res.leftWords(), res.DeleteError, deleteStatement(w, res))
			}
			return nil, exitcode.Environmentf("iotdb probe interrupted while setting up %s on %s: nothing measured%s", prefix, res.Target, left)
		}
		return nil, err
	}
	slog.Info("iotdb probe: series ready", "prefix", prefix, "series", res.Series, "server_version", res.ServerVersion)

	lv := newLiveness(cfg.UnreachableAfter)
	cutAt, downAt := runSteps(ctx, &cfg, pool, w, lv, res)

	measured := downAt < 0 && res.fullSteps() == len(cfg.Steps) // every step ran to its end
	res.UnreachableNodes = pool.unreachable()                   // the load's: a node failing only the clean-up is not listed
	teardown(ctx, pool, &cfg, w, res)
	attributeBounds(res.Steps, kneeErrorLimit(&cfg), cfg.Rate)
	res.Knee = cfg.findKnee(res.Steps, kneeErrorLimit(&cfg))
	bound, note := cfg.limitNote(res.Steps, res.Knee, cfg.maxWorkers())
	res.Knee.Bound, res.Knee.Reading = bound, res.Knee.Reading+note
	res.Suggestions = Suggest(&cfg, res.Steps, res.ServerVersion)
	res.Checks = checks(&cfg, res.Steps, res.WarmupNoAnswer)
	if c, ok := cleanupCheck(w, res); ok {
		res.Checks = append(res.Checks, c)
	}
	var runErr error
	switch {
	case ctx.Err() != nil && !measured:
		runErr = res.interrupted(cutAt, len(cfg.Steps))
	case downAt >= 0:
		runErr = res.unreachable(&cfg, lv, downAt)
	}
	if runErr != nil && res.LeftBehind {
		runErr = exitcode.Environmentf("%v; %s %s on %s: delete it with: %s", runErr, prefix, res.leftWords(), res.Target, deleteStatement(w, res))
	}
	res.Verdict = verdict.Worst(res.Checks)
	if ctx.Err() != nil && measured {
		runErr = res.cleanupInterrupted(w)
	}
	return res, runErr
}

// cleanupInterrupted marks res as interrupted during the clean-up, after
// every step ran to its end (res.Verdict set): the verdict stands, a
// note says so, and when a second interrupt stopped the clean-up
// (CleanupStopped) it returns the exit-3 error naming what may have
// been left and the statement that deletes it (nil when the clean-up
// finished).
func (res *Result) cleanupInterrupted(w *workload) error {
	res.CleanupInterrupted = true
	if !res.CleanupStopped {
		res.Notes = append(res.Notes, "interrupted during the clean-up, after every step had run to its end: the measurement is complete, the verdict stands on the steps, and the clean-up finished")
		return nil
	}
	res.Notes = append(res.Notes, fmt.Sprintf("interrupted during the clean-up, after every step had run to its end: the measurement is complete and the verdict stands on the steps; a second interrupt stopped the clean-up, so %s may have been left: delete it with: %s", w.prefix, deleteStatement(w, res)))
	return exitcode.Environmentf("iotdb probe interrupted during the clean-up (every step ran to its end: verdict %s stands on the steps); a second interrupt stopped it, so %s may have been left on %s: delete it with: %s",
		strings.ToUpper(string(res.Verdict)), w.prefix, res.Target, deleteStatement(w, res))
}

// fullSteps is how many of res.Steps ran to their end (not Partial).
func (res *Result) fullSteps() int {
	full := 0
	for _, s := range res.Steps {
		if !s.Partial {
			full++
		}
	}
	return full
}

// newResult is the Result of a run of cfg under prefix before anything is
// measured: target, load, pool and timeouts, and cfg's warnings as notes.
func newResult(cfg *Config, prefix string) *Result {
	res := &Result{
		Target:        cfg.addr(),
		Database:      cfg.Database,
		Prefix:        prefix,
		Scenario:      cfg.Scenario,
		Mode:          "closed",
		RatePerWorker: cfg.Rate,
		PoolSize:      cfg.PoolSize,
		Redirection:   cfg.Redirection,
		Shard:         cfg.Shard.String(),
		WaitTimeoutMS: ms(cfg.WaitTimeout),
		CallTimeoutMS: ms(cfg.CallTimeout),
		Steps:         []Step{}, // "steps": [] when none was measured (interrupted in the warm-up)
		Started:       time.Now().UTC(),
	}
	if cfg.Rate > 0 {
		res.Mode = "open"
	}
	if res.Database == "" {
		res.Database = prefix
	}
	res.Notes = append(res.Notes, cfg.Warnings()...)
	return res
}

// runSteps runs the warm-up, then each step into res.Steps until ctx ends
// or the server is found unreachable. cutAt is the step (workers) running
// when ctx was cancelled (0: warm-up or between steps); downAt the step
// running when the server was found unreachable (0: warm-up, -1: never).
func runSteps(ctx context.Context, cfg *Config, pool *sessionPool, w *workload, lv *liveness, res *Result) (cutAt, downAt int) {
	clock := &answerClock{}
	prev := runWarmup(ctx, cfg, pool, w, lv, clock, res)
	downAt = -1
	if lv.isDown() {
		downAt = 0
	}
	for _, n := range cfg.Steps {
		if ctx.Err() != nil || downAt >= 0 {
			break
		}
		tl := timelineStep{step: len(res.Steps)}
		if stallJudged(cfg, cfg.Shard.Count(n)) {
			tl.clock = clock
		}
		if cfg.onStepStart != nil {
			cfg.onStepStart(n)
		}
		st := runStep(ctx, cfg, pool, w, n, lv, tl, prev)
		prev = &st.Client
		if ctx.Err() != nil {
			st.Partial, cutAt = true, n
		} else if lv.isDown() {
			st.Partial, downAt = true, n
		}
		res.Steps = append(res.Steps, st)
		slog.Info("iotdb probe: step done", "workers", n, "tps", st.TPS, "p95_ms", st.Latency.P95, "error_rate", st.ErrorRate)
		if cfg.OnStep != nil {
			cfg.OnStep(st)
		}
	}
	return cutAt, downAt
}

// runWarmup runs the warm-up (cfg.Warmup of the first step's workers,
// unmeasured) on the run's silence timeline clock: a server that stops
// answering during the warm-up has stalled as much as during a step (a
// 3 s silence from 0.6 s into a 1 s warm-up held its calls, the first
// step began when they were answered, and iotdb.stall passed at
// 0.01 s). Its silence goes to res.WarmupNoAnswer; a warm-up that ran
// warmupSlack or more past cfg.Warmup (its calls in flight at the end
// were waited for) adds a note saying how long it ran. It returns the
// warm-up's client use (the first step's choosePath reads it), nil when
// there is no warm-up.
func runWarmup(ctx context.Context, cfg *Config, pool *sessionPool, w *workload, lv *liveness, clock *answerClock, res *Result) *ClientUse {
	if cfg.Warmup <= 0 {
		return nil
	}
	wc := *cfg
	wc.StepDuration = cfg.Warmup
	tl := timelineStep{step: warmupStep}
	if stallJudged(cfg, cfg.Shard.Count(cfg.Steps[0])) {
		tl.clock = clock
	}
	if cfg.onWarmup != nil {
		cfg.onWarmup()
	}
	st := runStep(ctx, &wc, pool, w, cfg.Steps[0], lv, tl, nil)
	res.WarmupOps, res.WarmupS, res.WarmupNoAnswer = st.Ops, st.DurationS, st.NoAnswer

	if over := time.Duration(st.DurationS*float64(time.Second)) - cfg.Warmup; over >= warmupSlack {
		res.Notes = append(res.Notes, fmt.Sprintf("the warm-up ran %.2f s, %.2f s past its %v: calls in flight at its end were waited for (the server was slow or silent), and the first step began after them",
			st.DurationS, over.Seconds(), cfg.Warmup))
	}
	return &st.Client
}

// warmupSlack is how far past --warmup the warm-up may run (its last
// calls) before the report says it overran.
const warmupSlack = 100 * time.Millisecond

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// kneeErrorLimit is the highest error rate a step may have to count for the
// knee and the peak: the error-rate threshold (--max-error-rate, default
// DefaultMaxErrorRate). c has its defaults (withDefaults).
func kneeErrorLimit(c *Config) float64 {
	return *c.Thresholds.MaxErrorRate
}

// unreachable marks res as stopped because every operation failed to
// connect for cfg.UnreachableAfter while the step of downAt workers ran
// (0: the warm-up), adds the failing iotdb.complete check and returns the
// exit-3 error naming the target.
func (res *Result) unreachable(cfg *Config, lv *liveness, downAt int) error {
	where := "during the warm-up"
	if downAt > 0 {
		where = fmt.Sprintf("during the step at %s", plural.N(downAt, "worker"))
	}
	full := res.fullSteps()
	res.Unreachable = true
	res.StopReason = fmt.Sprintf("stopped: %s could not be reached for %v %s (every operation failed to connect; last error: %s); %d of %s ran to the end; the results are partial and are no verdict on the load",
		res.Target, cfg.UnreachableAfter, where, lv.lastErr(), full, plural.N(len(cfg.Steps), "step"))
	res.Checks = append(res.Checks, verdict.Check{ID: CheckComplete, Status: verdict.Fail, Summary: res.StopReason,
		Remedy: "check that IoTDB at " + res.Target + " is up (its DataNode log), then run the probe again"})
	return exitcode.Environmentf("iotdb probe could not run: %s unreachable for %v %s (every operation failed to connect: %s); %d of %s complete, results partial",
		res.Target, cfg.UnreachableAfter, where, lv.lastErr(), full, plural.N(len(cfg.Steps), "step"))
}

// liveness tells a server that went away from one that is merely
// failing some operations: it remembers when an operation last reached
// the server (a success, or any error other than a connect failure). When
// a connect failure comes more than after later than that, the server is
// taken as unreachable and the run stops.
type liveness struct {
	after   time.Duration
	last    atomic.Int64 // unix ns of the last operation that reached the server
	down    atomic.Bool
	mu      sync.Mutex
	lastMsg string
}

func newLiveness(after time.Duration) *liveness {
	lv := &liveness{after: after}
	lv.last.Store(time.Now().UnixNano())
	return lv
}

// reached records an operation that got an answer from the server.
func (lv *liveness) reached() { lv.last.Store(time.Now().UnixNano()) }

// connectFailed records a connect failure; it reports whether the server
// has now been unreachable for longer than lv.after.
func (lv *liveness) connectFailed(err error) bool {
	lv.mu.Lock()
	lv.lastMsg = err.Error()
	lv.mu.Unlock()
	if time.Since(time.Unix(0, lv.last.Load())) > lv.after {
		lv.down.Store(true)
	}
	return lv.down.Load()
}

func (lv *liveness) isDown() bool { return lv.down.Load() }

func (lv *liveness) lastErr() string {
	lv.mu.Lock()
	defer lv.mu.Unlock()
	return lv.lastMsg
}

// Connect-failure backoff of one worker: the first retry waits about
// backoffMin, each further failure doubles it up to backoffMax; the wait
// is drawn from [d/2, d] (jitter) so workers do not retry in lockstep. A
// success or any other error resets it.
const (
	backoffMin = 20 * time.Millisecond
	backoffMax = time.Second
)

// CheckComplete fails when the run did not run every step to its end
// (interrupted, or stopped because the server could not be reached).
const CheckComplete = "iotdb.complete"

// interrupted marks res as cut short (ctx ended: Ctrl-C, SIGTERM, a
// caller's deadline) while the step
// of cutAt workers ran (0: before the first step or between steps), adds
// the failing iotdb.complete check and returns the exit-3 error.
func (res *Result) interrupted(cutAt, planned int) error {
	full := res.fullSteps()
	where := "before the first step"
	switch {
	case cutAt != 0:
		where = fmt.Sprintf("during the step at %s", plural.N(cutAt, "worker"))
	case len(res.Steps) > 0:
		where = fmt.Sprintf("after the step at %s", plural.N(res.Steps[len(res.Steps)-1].Workers, "worker"))
	}
	res.Interrupted = true
	res.StopReason = fmt.Sprintf("interrupted %s: %d of %s ran to the end; the results are partial and are no verdict on the load", where, full, plural.N(planned, "step"))
	res.Checks = append(res.Checks, verdict.Check{ID: CheckComplete, Status: verdict.Fail,
		Summary: res.StopReason, Remedy: "run the probe again and let every step finish"})
	return exitcode.Environmentf("iotdb probe interrupted %s; %d of %s complete, results partial", where, full, plural.N(planned, "step"))
}

// Ping opens one session to addr (host:port) as user, runs `show version`
// and returns the server's version; the whole exchange is bounded by ctx's
// deadline (10 s if it has none). It is what scripts/iotdb.sh waits on.
func Ping(ctx context.Context, addr, user, password string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: want host:port: %w", addr, err)
	}
	pn, err := strconv.Atoi(port)
	if err != nil {
		return "", fmt.Errorf("address %q: port is not a number", addr)
	}
	d := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		d = time.Until(dl)
	}
	cfg := Config{Host: host, Port: pn, User: user, Password: password, PoolSize: 1, WaitTimeout: d, ConnectTimeout: d, CallTimeout: d}.withDefaults()
	p := newSessionPool(&cfg)
	p.adminTimeout = d // the exchange's bound, not AdminCallTimeout
	defer p.close(d)
	v, err := serverVersion(ctx, p)
	if err == nil && v == "" {
		err = errors.New("show version returned no version")
	}
	return v, err
}
