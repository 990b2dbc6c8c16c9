package iotdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iotdb-client-go/client"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/latency"
)

// Run executes the probe: it opens the SessionPool, reads the server
// version, creates root.hostprep_<run id> and its time series, runs every
// step of cfg.Steps, deletes the database (unless cfg.Keep) and judges the
// steps against cfg.Thresholds.
//
// Errors: exitcode.BadInput for an invalid cfg (nothing is contacted);
// exitcode.Environment when no session can be opened or the database
// cannot be set up (nothing measured). Errors during the load are counted
// per step, not returned. A threshold that fails gives Result.Verdict
// "fail" and a nil error; the caller maps it to exit code 1. When ctx is
// cancelled mid-run the steps measured so far are returned with ctx's
// error, after clean-up.
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
	res := &Result{
		Target:        cfg.addr(),
		Database:      "root.hostprep_" + cfg.RunID,
		Scenario:      cfg.Scenario,
		Mode:          "closed",
		RatePerWorker: cfg.Rate,
		PoolSize:      cfg.PoolSize,
		WaitTimeoutMS: ms(cfg.WaitTimeout),
		CallTimeoutMS: ms(cfg.CallTimeout),
		Started:       time.Now().UTC(),
	}
	if cfg.Rate > 0 {
		res.Mode = "open"
	}
	defer func() { res.DurationS = time.Since(res.Started).Seconds() }()

	pool := newCountingPool(&cfg)
	defer func() {
		if n := pool.drain(cfg.CallTimeout); n > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%d calls were still running %v after the last step (server not answering); they were left to finish on their own", n, cfg.CallTimeout))
		}
		if err := pool.close(cfg.CallTimeout); err != nil {
			res.Notes = append(res.Notes, err.Error())
		}
	}()

	w := newWorkload(&cfg, res.Database)
	if err := setup(ctx, pool, w, res); err != nil {
		if ctx.Err() != nil {
			return nil, exitcode.Environmentf("iotdb probe interrupted (%v) while setting up %s on %s: nothing measured", ctx.Err(), res.Database, res.Target)
		}
		return nil, err
	}
	slog.Info("iotdb probe: database ready", "database", res.Database, "series", res.Series, "server_version", res.ServerVersion)

	lv := newLiveness(cfg.UnreachableAfter)
	if cfg.Warmup > 0 {
		wc := cfg
		wc.StepDuration = cfg.Warmup
		w := runStep(ctx, &wc, pool, w, cfg.Steps[0], lv)
		res.WarmupOps = w.Ops
	}
	var runErr error
	cutAt := 0   // the step running when ctx was cancelled (0: warm-up or between steps)
	downAt := -1 // the step running when the server was found unreachable (0: warm-up)
	if lv.isDown() {
		downAt = 0
	}
	for _, n := range cfg.Steps {
		if ctx.Err() != nil || downAt >= 0 {
			break
		}
		st := runStep(ctx, &cfg, pool, w, n, lv)
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

	teardown(pool, &cfg, res)
	res.Knee = FindKnee(res.Steps, kneeErrorLimit(&cfg))
	res.Checks = Checks(&cfg, res.Steps)
	if err := ctx.Err(); err != nil {
		runErr = res.interrupted(err, cutAt, len(cfg.Steps))
	} else if downAt >= 0 {
		runErr = res.unreachable(&cfg, lv, downAt)
	}
	res.Verdict = verdict.Worst(res.Checks)
	return res, runErr
}

// kneeErrorLimit is the highest error rate a step may have to count for the
// knee and the peak: the --max-error-rate threshold, or KneeMaxErrorRate
// when none is set.
func kneeErrorLimit(c *Config) float64 {
	if c.Thresholds.MaxErrorRate != nil {
		return *c.Thresholds.MaxErrorRate
	}
	return KneeMaxErrorRate
}

// unreachable marks res as stopped because every operation failed to
// connect for cfg.UnreachableAfter while the step of downAt workers ran
// (0: the warm-up), adds the failing iotdb.complete check and returns the
// exit-3 error naming the target.
func (res *Result) unreachable(cfg *Config, lv *liveness, downAt int) error {
	where := "during the warm-up"
	if downAt > 0 {
		where = fmt.Sprintf("during the step at %d workers", downAt)
	}
	full := 0
	for _, s := range res.Steps {
		if !s.Partial {
			full++
		}
	}
	res.Unreachable = true
	res.StopReason = fmt.Sprintf("stopped: %s could not be reached for %v %s (every operation failed to connect; last error: %s); %d of %d steps ran to the end; the results are partial and are no verdict on the load",
		res.Target, cfg.UnreachableAfter, where, lv.lastErr(), full, len(cfg.Steps))
	res.Checks = append(res.Checks, verdict.Check{ID: CheckComplete, Status: verdict.Fail, Summary: res.StopReason,
		Remedy: "check that IoTDB at " + res.Target + " is up (its DataNode log, scripts/iotdb.sh status for the test server), then run the probe again"})
	return exitcode.Environmentf("iotdb probe could not run: %s unreachable for %v %s (every operation failed to connect: %s); %d of %d steps complete, results partial",
		res.Target, cfg.UnreachableAfter, where, lv.lastErr(), full, len(cfg.Steps))
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

// interrupted marks res as cut short by err (ctx's error) while the step
// of cutAt workers ran (0: before the first step or between steps), adds
// the failing iotdb.complete check and returns the exit-3 error.
func (res *Result) interrupted(err error, cutAt, planned int) error {
	full := 0
	for _, s := range res.Steps {
		if !s.Partial {
			full++
		}
	}
	where := "before the first step"
	switch {
	case cutAt != 0:
		where = fmt.Sprintf("during the step at %d workers", cutAt)
	case len(res.Steps) > 0:
		where = fmt.Sprintf("after the step at %d workers", res.Steps[len(res.Steps)-1].Workers)
	}
	res.Interrupted = true
	res.StopReason = fmt.Sprintf("interrupted (%v) %s: %d of %d steps ran to the end; the results are partial and are no verdict on the load", err, where, full, planned)
	res.Checks = append(res.Checks, verdict.Check{ID: CheckComplete, Status: verdict.Fail,
		Summary: res.StopReason, Remedy: "run the probe again and let every step finish"})
	return exitcode.Environmentf("iotdb probe interrupted (%v) %s; %d of %d steps complete, results partial", err, where, full, planned)
}

// TSStatus codes of a refused login (IoTDB's TSStatusCode
// WRONG_LOGIN_PASSWORD and NOT_LOGIN).
const (
	statusWrongLogin = 801
	statusNotLogin   = 802
)

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// admin runs one setup/teardown statement on a pooled session under the
// probe's deadlines.
func admin(ctx context.Context, p *countingPool, op opFunc) error {
	_, err := p.do(ctx, op)
	return err
}

// setup opens the first session, reads the version and creates the
// database and its series. Failures are Environment errors.
func setup(ctx context.Context, p *countingPool, w *workload, res *Result) error {
	v, err := serverVersion(ctx, p)
	if err != nil {
		class, code := classify(err)
		// The v1.3.7 client ignores the OpenSession status, so a refused
		// login shows here, at the first statement.
		if class == ClassStatus && (code == statusWrongLogin || code == statusNotLogin) {
			return exitcode.Environmentf("iotdb probe: %s refused the login of user %q (status %d): check --user and --password-file or $HOSTPREP_IOTDB_PASSWORD", res.Target, p.user, code)
		}
		if class == ClassConnect || class == ClassWaitTimeout || class == ClassDeadline || class == ClassPanic {
			return exitcode.Environmentf("iotdb probe: cannot open a session to %s: %v (is IoTDB running and is --host/--port its client RPC? scripts/iotdb.sh start runs one on 127.0.0.1:6667)", res.Target, err)
		}
		res.Notes = append(res.Notes, "server version not read: "+err.Error())
	} else if v == "" {
		res.Notes = append(res.Notes, "server version not read: show version returned no row")
	}
	res.ServerVersion = v

	if err := admin(ctx, p, func(s *client.Session) (int64, error) {
		return 0, s.ExecuteNonQueryStatement("CREATE DATABASE " + w.database)
	}); err != nil {
		return exitcode.Environmentf("iotdb probe: CREATE DATABASE %s on %s failed: %v (check --user has the privilege and the server accepts writes)", w.database, res.Target, err)
	}
	paths := w.seriesPaths()
	for i := 0; i < len(paths); i += 1000 {
		chunk := paths[i:min(i+1000, len(paths))]
		types := make([]client.TSDataType, len(chunk))
		enc := make([]client.TSEncoding, len(chunk))
		comp := make([]client.TSCompressionType, len(chunk))
		for j := range chunk {
			types[j], enc[j], comp[j] = client.FLOAT, client.GORILLA, client.LZ4
		}
		if err := admin(ctx, p, func(s *client.Session) (int64, error) {
			return 0, s.CreateMultiTimeseries(chunk, types, enc, comp)
		}); err != nil {
			dropDatabase(p, w.database)
			return exitcode.Environmentf("iotdb probe: creating %d time series under %s failed: %v", len(paths), w.database, err)
		}
	}
	res.Series = len(paths)
	if w.scenario == ScenarioMixed {
		// Reads need rows to read: one mixed write per device.
		rng := mrand.New(mrand.NewPCG(1, 2))
		for d := 0; d < w.devices; d++ {
			tb, err := w.tablet(rng, w.device(d), mixedWrite, w.ts(mixedWrite))
			if err == nil {
				err = admin(ctx, p, func(s *client.Session) (int64, error) { return 0, s.InsertTablet(tb, true) })
			}
			if err != nil {
				dropDatabase(p, w.database)
				return exitcode.Environmentf("iotdb probe: seeding %s for reads failed: %v", w.device(d), err)
			}
		}
	}
	return nil
}

// serverVersion answers `show version` (the v1.3.7 client does not expose
// the version the server reports at session open).
func serverVersion(ctx context.Context, p *countingPool) (string, error) {
	var v string
	err := admin(ctx, p, func(s *client.Session) (int64, error) {
		timeout := int64(0)
		ds, err := s.ExecuteQueryStatement("show version", &timeout)
		if err != nil {
			return 0, err
		}
		defer ds.Close()
		ok, err := ds.Next()
		if err != nil || !ok {
			return 0, err
		}
		v, err = ds.GetString("Version")
		return 0, err
	})
	return v, err
}

func teardown(p *countingPool, cfg *Config, res *Result) {
	if cfg.Keep {
		res.Kept = true
		res.Notes = append(res.Notes, "--keep: database "+res.Database+" left in place; drop it with: DELETE DATABASE "+res.Database)
		return
	}
	if err := dropDatabase(p, res.Database); err != nil {
		res.Kept = true
		res.DeleteError = err.Error()
		res.Notes = append(res.Notes, fmt.Sprintf("could not delete %s: %v; drop it with: DELETE DATABASE %s", res.Database, err, res.Database))
	}
}

// dropDatabase deletes the probe's database; it runs even when the run's
// context is cancelled, bounded by the pool's deadlines.
func dropDatabase(p *countingPool, db string) error {
	return admin(context.Background(), p, func(s *client.Session) (int64, error) {
		return 0, s.ExecuteNonQueryStatement("DELETE DATABASE " + db)
	})
}

// workerStats is one worker's tally, merged at the end of a step.
type workerStats struct {
	lat           *latency.Recorder
	ok, errs      int64
	reads, writes int64
	points        int64
	byClass       map[string]int64
	codes         map[string]int64
	samples       map[string]string
}

func (s *workerStats) add(kind opKind, n int64, err error) {
	if kind == opRead {
		s.reads++
	} else {
		s.writes++
	}
	if err == nil {
		s.ok++
		s.points += n
		return
	}
	s.errs++
	class, code := classify(err)
	s.byClass[class]++
	if class == ClassStatus {
		s.codes[strconv.Itoa(int(code))]++
	}
	if _, ok := s.samples[class]; !ok {
		s.samples[class] = err.Error()
	}
}

// runStep keeps n workers busy for cfg.StepDuration and measures them.
//
// A worker whose operation fails to connect backs off (see backoffMin);
// when lv finds the server unreachable the step ends early.
func runStep(ctx context.Context, cfg *Config, p *countingPool, w *workload, n int, lv *liveness) Step {
	stepCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	end := start.Add(cfg.StepDuration)
	stats := make([]*workerStats, n)

	// Pool utilisation sampler.
	var (
		samples  int
		sum      int64
		maxInUse int64
		sampWG   sync.WaitGroup
	)
	stopSampler := make(chan struct{})
	sampWG.Add(1)
	go func() {
		defer sampWG.Done()
		t := time.NewTicker(cfg.SampleInterval)
		defer t.Stop()
		for {
			select {
			case <-stopSampler:
				return
			case <-t.C:
				v := p.inUse.Load()
				samples++
				sum += v
				maxInUse = max(maxInUse, v)
			}
		}
	}()

	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		st := &workerStats{lat: latency.New(), byClass: map[string]int64{}, codes: map[string]int64{}, samples: map[string]string{}}
		stats[i] = st
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(uint64(worker), uint64(start.UnixNano())))
			var interval, backoff time.Duration
			next := start
			if cfg.Rate > 0 {
				interval = time.Duration(float64(time.Second) / cfg.Rate)
				// Spread the workers' schedules over one interval.
				next = start.Add(time.Duration(rng.Int64N(int64(interval) + 1)))
			}
			for {
				var began time.Time
				if cfg.Rate > 0 {
					if !next.Before(end) {
						return
					}
					if d := time.Until(next); d > 0 {
						select {
						case <-time.After(d):
						case <-stepCtx.Done():
							return
						}
					}
					began = next // wrk2: latency from the scheduled start
					next = next.Add(interval)
				} else {
					began = time.Now()
					if !began.Before(end) {
						return
					}
				}
				if stepCtx.Err() != nil {
					return
				}
				kind, op, err := w.next(worker, rng)
				var pts int64
				if err == nil {
					pts, err = p.do(stepCtx, op)
				}
				if errors.Is(err, context.Canceled) && stepCtx.Err() != nil {
					return
				}
				st.add(kind, pts, err)
				if err == nil {
					st.lat.Record(time.Since(began))
				}
				if class, _ := classify(err); err == nil || class != ClassConnect {
					backoff = 0
					lv.reached()
					continue
				}
				if lv.connectFailed(err) {
					cancel() // the server is gone: end the step for every worker
					return
				}
				backoff = min(max(2*backoff, backoffMin), backoffMax)
				select {
				case <-time.After(backoff/2 + time.Duration(rng.Int64N(int64(backoff/2)+1))):
				case <-stepCtx.Done():
					return
				}
			}
		}(i)
	}
	wg.Wait()
	close(stopSampler)
	sampWG.Wait()
	elapsed := time.Since(start)

	out := Step{Workers: n, DurationS: elapsed.Seconds(), ErrorsByClass: map[string]int64{}, StatusCodes: map[string]int64{}, ErrorSamples: map[string]string{}}
	lat := latency.New()
	for _, st := range stats {
		lat.Merge(st.lat)
		out.OK += st.ok
		out.Errors += st.errs
		out.Reads += st.reads
		out.Writes += st.writes
		out.Points += st.points
		for k, v := range st.byClass {
			out.ErrorsByClass[k] += v
		}
		for k, v := range st.codes {
			out.StatusCodes[k] += v
		}
		for k, v := range st.samples {
			if _, ok := out.ErrorSamples[k]; !ok {
				out.ErrorSamples[k] = v
			}
		}
	}
	if w.scenario != ScenarioMixed {
		out.Reads, out.Writes = 0, 0
	}
	out.Ops = out.OK + out.Errors
	if out.Ops > 0 {
		out.ErrorRate = float64(out.Errors) / float64(out.Ops)
	}
	out.Latency = lat.Summary()
	if s := elapsed.Seconds(); s > 0 {
		out.TPS = float64(out.OK) / s
		out.PointsPerS = float64(out.Points) / s
	}
	out.Pool = PoolUse{Size: p.size, MaxUsed: maxInUse, Samples: samples}
	if samples > 0 {
		out.Pool.MeanUsed = float64(sum) / float64(samples)
	}
	out.Pool.MeanUtil = out.Pool.MeanUsed / float64(p.size)
	out.Pool.MaxUtil = float64(out.Pool.MaxUsed) / float64(p.size)
	if len(out.ErrorsByClass) == 0 {
		out.ErrorsByClass, out.StatusCodes, out.ErrorSamples = nil, nil, nil
	}
	if len(out.StatusCodes) == 0 {
		out.StatusCodes = nil
	}
	return out
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
	p := newCountingPool(&cfg)
	defer p.close(d)
	v, err := serverVersion(ctx, p)
	if err == nil && v == "" {
		err = errors.New("show version returned no version")
	}
	return v, err
}
