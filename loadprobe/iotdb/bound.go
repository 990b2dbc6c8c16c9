package iotdb

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
)

// Bound rules: what limited a step, checked in this order.
const (
	// BoundPoolUtil is the mean pool use (0..1) at or above which, with
	// workers waiting for a session in at least BoundPoolWaiting of the
	// samples, a step is bounded by the pool. A step with more workers than
	// sessions and workers waiting in at least BoundPoolQueued of the
	// samples is too, whatever the mean use (on a busy client host the
	// hand-over of a session to a waiting worker takes time, which lowers
	// the sampled use): the server never saw more calls at once than the
	// pool has sessions.
	BoundPoolUtil    = 0.90
	BoundPoolWaiting = 0.25
	BoundPoolQueued  = 0.50
	// BoundClientCPU is the share (0..1) of the probe's CPUs
	// (ClientUse.Cores: GOMAXPROCS, 1 on the event loop) its own process used at or above which the step is bounded by the
	// client; BoundClientLagMs the mean scheduling lag (ms) of the probe's
	// goroutines at or above which it is too (the host had no CPU for it).
	BoundClientCPU   = 0.90
	BoundClientLagMs = 5.0
)

// attributeBounds sets Bound and BoundReason on every complete step:
// BoundErrors when its error rate is above errLimit; BoundPool when the
// pool was near full with workers waiting; BoundClient when the probe's
// own CPU or scheduling lag was at its limit; BoundWorkers when an open
// loop (rate > 0 operations/s per worker) missed more than
// ScheduleWarnShare of its schedule; BoundServer when, against the
// step before, throughput grew < KneeTPSGrowth while p95 grew >
// KneeP95Growth or throughput fell, with pool and client below those
// limits; "" otherwise (more workers still bought throughput).
func attributeBounds(steps []Step, errLimit, rate float64) {
	var prev *Step
	for i := range steps {
		s := &steps[i]
		if s.Partial {
			continue
		}
		s.Bound, s.BoundReason = stepBound(s, prev, errLimit, rate)
		prev = s
	}
}

// stepBound is attributeBounds for one step and the complete step before
// it (nil for the first); rate is the rate per worker (0: closed loop).
func stepBound(s, prev *Step, errLimit, rate float64) (string, string) {
	if s.Ops > 0 && s.ErrorRate > errLimit {
		return BoundErrors, fmt.Sprintf("error rate %.2f%% (%d of %s failed%s) above %.2f%%",
			100*s.ErrorRate, s.Errors, plural.N(s.Ops, "operation"), mainClass(s), 100*errLimit)
	}
	p := s.Pool
	if p.MeanUtil >= BoundPoolUtil && (p.WaitingShare >= BoundPoolWaiting || s.local() > p.Size) ||
		s.local() > p.Size && p.WaitingShare >= BoundPoolQueued {
		return BoundPool, fmt.Sprintf("pool use %.0f%% (mean %.1f of %s, max %d) with workers waiting for a session in %.0f%% of samples (mean %.1f waiting; %s on %s: the server never saw more than %s at once)",
			100*p.MeanUtil, p.MeanUsed, plural.N(p.Size, "session"), p.MaxUsed, 100*p.WaitingShare, p.MeanWaiting, plural.N(s.local(), "worker"), plural.N(p.Size, "session"), plural.N(p.Size, "call"))
	}
	c := s.Client
	if c.Cores > 0 && c.CPUCores >= BoundClientCPU*float64(c.Cores) || c.SchedLagMeanMs >= BoundClientLagMs {
		return BoundClient, fmt.Sprintf("the probe used %.2f of %s (%.0f µs per operation) and its goroutines waited %.1f ms on average (max %.1f ms) for a CPU",
			c.CPUCores, plural.N(c.Cores, "CPU"), c.CPUPerOpUs, c.SchedLagMeanMs, c.SchedLagMaxMs)
	}
	if why, ok := workersBound(s, rate); ok {
		return BoundWorkers, why
	}
	if prev == nil || prev.TPS <= 0 || prev.Latency.P95 <= 0 {
		return "", ""
	}
	tg, pg := s.TPS/prev.TPS-1, s.Latency.P95/prev.Latency.P95-1
	if tg < KneeTPSGrowth && (pg > KneeP95Growth || tg < 0) {
		return BoundServer, fmt.Sprintf("from %d to %s TPS %+.1f%% while p95 %+.0f%% (%.2f -> %.2f ms); neither the pool (%.0f%% used, %.0f%% of samples with waiters) nor the client (%.2f of %s, %.1f ms scheduling lag) was the limit",
			prev.Workers, plural.N(s.Workers, "worker"), 100*tg, 100*pg, prev.Latency.P95, s.Latency.P95, 100*p.MeanUtil, 100*p.WaitingShare, c.CPUCores, plural.N(c.Cores, "CPU"), c.SchedLagMeanMs)
	}
	return "", ""
}

// local is how many workers of the step ran here (the shard's share).
func (s *Step) local() int {
	if s.ShardWorkers > 0 {
		return s.ShardWorkers
	}
	return s.Workers
}

// mainClass is ", mostly <class>" for the error class with most errors.
func mainClass(s *Step) string {
	best, n := "", int64(0)
	for _, c := range Classes {
		if v := s.ErrorsByClass[c]; v > n {
			best, n = c, v
		}
	}
	if best == "" {
		return ""
	}
	return ", mostly " + best
}

// boundFix is the fix for a bound, given the run's largest step, naming
// c's settings (Config.name).
func (c *Config) boundFix(bound string, maxWorkers int) string {
	switch bound {
	case BoundPool:
		return fmt.Sprintf("a pool of at least the largest step: %s %d or more (a common sizing is 1.5 x the writers: %d)", c.name("pool_size"), maxWorkers, (3*maxWorkers+1)/2)
	case BoundClient:
		return "the load generator is the limit, not the server: run the probe from more hosts or processes (" + c.name("shard") + " K/N; a write or batch step drives all its workers from one thread), or fewer workers per process"
	case BoundErrors:
		return "fix the errors first (see errors by class and the status codes); the throughput of a failing step says nothing about capacity"
	case BoundWorkers:
		return "too few workers for the rate: run more workers (" + c.name("steps") + ") or a lower " + c.name("rate") + "; each worker runs one operation at a time"
	case BoundServer:
		return "the server is the limit: check its CPU, disk and memory (MEMORY_SIZE in datanode-env.sh, data region count), or add DataNodes"
	}
	return ""
}

// limitNote is the bound of the step where throughput stopped growing
// (the knee step when it has one, else the first bounded step from the
// peak or the knee on) for the knee reading: " — limited by the pool at 16
// workers: <reason>; fix: <fix>"; "" when no such step has a bound. The
// fix names c's settings.
func (c *Config) limitNote(steps []Step, k Knee, maxWorkers int) (bound, note string) {
	from := k.PeakWorkers
	if k.Workers != 0 {
		from = min(from, k.Workers)
	}
	var pick *Step
	for i := range steps {
		s := &steps[i]
		if s.Partial || s.Workers < from || s.Bound == "" {
			continue
		}
		if pick == nil || s.Workers == k.Workers {
			pick = s
		}
	}
	if pick == nil {
		return "", ""
	}
	return pick.Bound, fmt.Sprintf(" — limited by the %s at %s: %s; fix: %s", pick.Bound, plural.N(pick.Workers, "worker"), pick.BoundReason, c.boundFix(pick.Bound, maxWorkers))
}

// Suggest derives tuning suggestions from a finished run: the pool size
// against the workers, wait-timeout hits, deadline errors, a client-bound
// step, and every IoTDB status code the probe can explain (pointing at
// server settings or privileges). cfg is the run's configuration; its
// settings are named by its SettingNames (see Config.name).
func Suggest(cfg *Config, steps []Step, serverVersion string) []Suggestion {
	var out []Suggestion
	maxW := 0
	var poolBound, clientBound []int
	var waitHits, deadlines int64
	codes := map[int32]int64{}
	codeSteps := map[int32][]int{}
	for _, s := range steps {
		maxW = max(maxW, s.Workers)
		switch s.Bound {
		case BoundPool:
			poolBound = append(poolBound, s.Workers)
		case BoundClient:
			clientBound = append(clientBound, s.Workers)
		}
		waitHits += s.ErrorsByClass[ClassWaitTimeout]
		deadlines += s.ErrorsByClass[ClassDeadline]
		for k, v := range s.StatusCodes {
			c, err := strconv.Atoi(k)
			if err != nil {
				continue
			}
			codes[int32(c)] += v
			if !slices.Contains(codeSteps[int32(c)], s.Workers) {
				codeSteps[int32(c)] = append(codeSteps[int32(c)], s.Workers)
			}
		}
	}
	if maxW > cfg.PoolSize || len(poolBound) > 0 {
		obs := fmt.Sprintf("steps up to %s on a pool of %s", plural.N(maxW, "worker"), plural.N(cfg.PoolSize, "session"))
		if len(poolBound) > 0 {
			obs += "; the pool bounded the " + plural.Noun(len(poolBound), "step") + " at " + plural.List(poolBound, "worker") + " (near full, workers waiting for a session)"
		}
		out = append(out, Suggestion{Setting: cfg.name("pool_size"), Observed: obs, Fix: cfg.boundFix(BoundPool, maxW)})
	}
	if waitHits > 0 {
		// As errorRemedy: the pool when it is smaller than the workers,
		// else sessions slow to open or stuck in calls.
		fix := fmt.Sprintf("raise %s to %d or more so that every worker has a session; a longer %s only hides the queue", cfg.name("pool_size"), maxW, cfg.name("wait_timeout"))
		if cfg.PoolSize >= maxW {
			fix = fmt.Sprintf("the pool covers every worker, so sessions were slow to open or stuck in calls: check the server's load and dn_rpc_max_concurrent_client_num; %s %v gives them longer", cfg.name("wait_timeout"), suggestWait(cfg.WaitTimeout))
		}
		out = append(out, Suggestion{Setting: cfg.name("wait_timeout"), Observed: fmt.Sprintf("%s found no free session within %v", plural.N(waitHits, "operation"), cfg.WaitTimeout),
			Fix: fix})
	}
	if deadlines > 0 {
		out = append(out, Suggestion{Setting: cfg.name("call_timeout"), Observed: fmt.Sprintf("%s did not return within %v", plural.N(deadlines, "call"), cfg.CallTimeout),
			Fix: "the server answers slower than the deadline: check its load (CPU, disk, GC in the DataNode log); raise " + cfg.name("call_timeout") + " only if such latency is acceptable"})
	}
	if len(clientBound) > 0 {
		out = append(out, Suggestion{Setting: "load generators", Observed: "the probe's own CPU or scheduling lag bounded the " + plural.Noun(len(clientBound), "step") + " at " + plural.List(clientBound, "worker"),
			Fix: cfg.boundFix(BoundClient, maxW)})
	}
	keys := make([]int32, 0, len(codes))
	for c := range codes {
		keys = append(keys, c)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, c := range keys {
		e, ok := cfg.explainStatus(c)
		if !ok {
			continue
		}
		out = append(out, Suggestion{Setting: statusSetting(cfg, c),
			Observed: fmt.Sprintf("status %d %s x%d at %s: %s", c, e.Name, codes[c], plural.List(codeSteps[c], "worker"), e.Cause),
			Fix:      e.Fix + versionCaveat(serverVersion)})
	}
	return out
}

// statusSetting is what a status code points at, the user and database
// settings by cfg's names (Config.name).
func statusSetting(cfg *Config, code int32) string {
	switch code {
	case statusWrongLogin:
		return cfg.name("user") + " / password"
	case 803, 811:
		return "privileges"
	case 500:
		return cfg.name("database")
	case 717:
		return "max_allowed_concurrent_queries"
	case 600:
		return "DataNode disk"
	}
	return "DataNode memory"
}

// versionCaveat notes that code meanings come from another release.
func versionCaveat(serverVersion string) string {
	if serverVersion == "" || strings.HasPrefix(serverVersion, StatusCodesRelease) {
		return ""
	}
	return fmt.Sprintf(" (code meaning as in IoTDB %s; this server is %s)", StatusCodesRelease, serverVersion)
}
