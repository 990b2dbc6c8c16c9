package iotdb

import (
	"fmt"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
)

// Check IDs of the IoTDB probe's thresholds.
const (
	CheckErrorRate = "iotdb.error_rate"
	CheckP95       = "iotdb.p95"
	CheckMinTPS    = "iotdb.min_tps"
	CheckStall     = "iotdb.stall"
)

// stallAfter is how long without any answer from the server makes a
// stall: the workers of a closed loop wait for the server instead of
// sending, so a hung DataNode costs a few slow operations (its p95
// hardly moves) and shows only as a time with no answer.
const stallAfter = 2 * time.Second

// Checks judges the steps against cfg.Thresholds: the worst step's error
// rate, and p95 and TPS at the target step. A threshold that is not set
// gives a skip (the error-rate check warns instead when errors occurred).
func Checks(cfg *Config, steps []Step) []verdict.Check { return checks(cfg, steps, nil) }

// checks is Checks with the warm-up's silence warm (nil: none judged),
// which iotdb.stall judges with the steps'.
func checks(cfg *Config, steps []Step, warm *Silence) []verdict.Check {
	c := cfg.withDefaults()
	target := c.targetStep()
	var at *Step
	for i := range steps {
		if steps[i].Workers == target {
			at = &steps[i]
		}
	}
	return []verdict.Check{errorRateCheck(&c, steps), p95Check(&c, target, at), minTPSCheck(&c, target, at), stallCheck(&c, steps, warm), scheduleCheck(&c, steps)}
}

// stallJudged tells whether a step of local workers (this host's: the
// shard's when sharded) is judged for stalls: a closed loop always, an
// open loop (Config.Rate) only when its schedule owes at least one operation
// a second (a slower schedule is silent by design).
func stallJudged(c *Config, local int) bool { return c.Rate <= 0 || c.Rate*float64(local) >= 1 }

// stallCheck fails a run in which the server answered no operation (a
// success, or an error status; a refused write is an answer, a timeout
// or a dropped connection is not) for stallAfter or longer: the longest
// Step.NoAnswer and the warm-up's silence warm, measured between answers
// on one timeline across the warm-up and the steps (from the warm-up's
// start to each step's real end, a warm-up or step that overran its
// duration included), so a silence that crosses from one into the next
// is one. Steps not judged (stallJudged) are left out; a run with no
// step judged skips.
func stallCheck(c *Config, steps []Step, warm *Silence) verdict.Check {
	limit := fmt.Sprintf("%.0f s", stallAfter.Seconds())
	ch := verdict.Check{ID: CheckStall, Expected: fmt.Sprintf("an answer at least every %s (no %s or more without one)", limit, limit)}
	var worst *Silence
	if len(steps) > 0 {
		worst = warm
	}
	for i := range steps {
		local := steps[i].Workers // this host's workers: the shard's when sharded
		if steps[i].ShardWorkers > 0 {
			local = steps[i].ShardWorkers
		}
		if na := steps[i].NoAnswer; na != nil && stallJudged(c, local) && (worst == nil || na.S > worst.S) {
			worst = na
		}
	}
	switch {
	case len(steps) == 0:
		ch.Status, ch.Summary = verdict.Skip, "no step was measured"
		return ch
	case worst == nil:
		ch.Status, ch.Summary = verdict.Skip, "no step was judged (an open loop owing less than one operation a second is silent by design)"
		return ch
	}
	ch.Observed = fmt.Sprintf("longest time without an answer: %.2f s (%s, from %.2f s)", worst.S, stepName(steps, worst.FromStep), worst.FromS)
	if worst.S < stallAfter.Seconds() {
		ch.Status = verdict.Pass
		ch.Summary = fmt.Sprintf("the server never went %s without answering; %s", limit, ch.Observed)
		return ch
	}
	ch.Status = verdict.Fail
	ch.Summary = "the server stalled: " + ch.Observed
	if c.Rate <= 0 {
		ch.Summary += "; a closed loop's p95 hides it (its workers wait instead of sending)"
	}
	ch.Remedy = "see the DataNode's log (GC pauses, flushes, compaction) and its host; " + c.name("rate") + " measures from the schedule and shows a stall as latency"
	return ch
}

// stepName is "step N at W workers" for steps[i] (N counting from 1),
// "the warm-up" for warmupStep.
func stepName(steps []Step, i int) string {
	if i == warmupStep {
		return "the warm-up"
	}
	if i < 0 || i >= len(steps) {
		return fmt.Sprintf("step %d", i+1)
	}
	return fmt.Sprintf("step %d at %s", i+1, plural.N(steps[i].Workers, "worker"))
}

// errorRateCheck judges the worst step's error rate against the
// thresholds.max_error_rate setting; without one, errors warn.
func errorRateCheck(c *Config, steps []Step) verdict.Check {
	th := c.Thresholds
	// Error rate: the worst step.
	var worst *Step
	for i := range steps {
		if worst == nil || steps[i].ErrorRate > worst.ErrorRate {
			worst = &steps[i]
		}
	}
	er := verdict.Check{ID: CheckErrorRate}
	switch {
	case worst == nil:
		er.Status, er.Summary = verdict.Skip, "no step was measured"
	default:
		er.Observed = fmt.Sprintf("%.2f%% at %s (%d of %s; %s)", 100*worst.ErrorRate, plural.N(worst.Workers, "worker"), worst.Errors, plural.N(worst.Ops, "operation"), classSummary(worst))
		er.Expected = fmt.Sprintf("<= %.2f%% in every step", 100**th.MaxErrorRate)
		if worst.ErrorRate <= *th.MaxErrorRate {
			er.Status, er.Summary = verdict.Pass, "error rate "+er.Observed+" within "+er.Expected
		} else {
			er.Status, er.Summary = verdict.Fail, "error rate "+er.Observed+", above "+er.Expected
			er.Remedy = errorRemedy(worst, c)
		}
	}
	return er
}

// p95Check judges the p95 (ms) at the target step at (nil: not measured)
// against the thresholds.p95 setting.
func p95Check(c *Config, target int, at *Step) verdict.Check {
	limit := c.Thresholds.P95
	return targetCheck(CheckP95, limit > 0, c.name("thresholds.p95"), target, at, func(p *verdict.Check) {
		p.Observed = fmt.Sprintf("p95 %.1f ms at %s", at.Latency.P95, plural.N(target, "worker"))
		if n := at.Latency.Censored; n > 0 {
			p.Observed += fmt.Sprintf(" (%d of %s censored: no answer, at the time they waited)", n, plural.N(at.Latency.Count, "latency"))
		}
		p.Expected = fmt.Sprintf("<= %.1f ms", ms(limit))
		if at.OK > 0 && at.Latency.P95 <= ms(limit) {
			p.Status, p.Summary = verdict.Pass, p.Observed+" "+p.Expected
		} else {
			p.Status, p.Summary = verdict.Fail, p.Observed+", above "+p.Expected
			if at.OK == 0 {
				p.Summary = fmt.Sprintf("no operation succeeded at %s", plural.N(target, "worker"))
			}
			p.Remedy = fmt.Sprintf("run fewer workers than %d (the knee is where p95 starts to climb), or give IoTDB more CPU/memory; see the per-step table", target)
		}
	})
}

// minTPSCheck judges the TPS at the target step at (nil: not measured)
// against the thresholds.min_tps setting.
func minTPSCheck(c *Config, target int, at *Step) verdict.Check {
	limit := c.Thresholds.MinTPS
	return targetCheck(CheckMinTPS, limit > 0, c.name("thresholds.min_tps"), target, at, func(t *verdict.Check) {
		t.Observed = fmt.Sprintf("%.1f TPS at %s", at.TPS, plural.N(target, "worker"))
		t.Expected = fmt.Sprintf(">= %.1f TPS", limit)
		if at.TPS >= limit {
			t.Status, t.Summary = verdict.Pass, t.Observed+" "+t.Expected
		} else {
			t.Status, t.Summary = verdict.Fail, t.Observed+", below "+t.Expected
			t.Remedy = "throughput is bounded by the server or the pool: check pool utilisation (a pool near 100% needs " + c.name("pool_size") + "), errors by class, and the server's CPU"
		}
	})
}

// targetCheck is check id of the target step at: a skip when its
// threshold is not set (set false; flag names it) or the step was not
// measured (at nil), else judge fills in the verdict.
func targetCheck(id string, set bool, flag string, target int, at *Step, judge func(*verdict.Check)) verdict.Check {
	ch := verdict.Check{ID: id}
	switch {
	case !set:
		ch.Status, ch.Summary = verdict.Skip, "no "+flag+" set"
	case at == nil:
		ch.Status, ch.Summary = verdict.Skip, fmt.Sprintf("target step %s was not measured", plural.N(target, "worker"))
	default:
		judge(&ch)
	}
	return ch
}

func classSummary(s *Step) string {
	if s.Errors == 0 {
		return "no errors"
	}
	var parts []string
	for _, c := range Classes {
		if n := s.ErrorsByClass[c]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	return strings.Join(parts, ", ")
}

// errorRemedy points at the fix for the dominant error class. For wait
// timeouts it agrees with Suggest's wait-timeout line: a pool smaller
// than the workers is fixed by the pool size alone (a longer wait only
// hides the queue); a pool that covers the workers points at sessions
// slow to open or stuck in calls, and proposes a longer wait. Settings
// are named by c.name.
func errorRemedy(s *Step, c *Config) string {
	top, n := "", int64(0)
	for _, cl := range Classes {
		if s.ErrorsByClass[cl] > n {
			top, n = cl, s.ErrorsByClass[cl]
		}
	}
	switch top {
	case ClassWaitTimeout:
		wait := suggestWait(c.WaitTimeout)
		if c.PoolSize < s.Workers {
			return fmt.Sprintf("the pool is exhausted: %s share %s; use %s %d or more (one session per worker; the server's dn_rpc_max_concurrent_client_num must allow it); a longer %s only hides the queue",
				plural.N(s.Workers, "worker"), plural.N(c.PoolSize, "session"), c.name("pool_size"), s.Workers, c.name("wait_timeout"))
		}
		return fmt.Sprintf("no session became free within the %v wait although the pool (%s) covers the %s: sessions are slow to open or stuck in calls; use %s %v and check the server's dn_rpc_max_concurrent_client_num and load",
			c.WaitTimeout, plural.N(c.PoolSize, "session"), plural.N(s.Workers, "worker"), c.name("wait_timeout"), wait)
	case ClassConnect:
		return "sessions could not be opened or were dropped: check the server log, its connection limit (dn_rpc_max_concurrent_client_num) and the host's nofile limit (hostprep preflight)"
	case ClassStatus:
		return "the server rejected operations: see status_codes in " + c.name("output") + " and the DataNode log"
	case ClassDeadline:
		return fmt.Sprintf("calls exceeded %s %v: the server is overloaded or stalled (GC, flush); lower the workers or raise %s", c.name("call_timeout"), c.CallTimeout, c.name("call_timeout"))
	case ClassPanic:
		return "the IoTDB Go client panicked (e.g. on a MULTIPLE_ERROR status without a message); see error_samples in " + c.name("output")
	}
	return "see error_samples in " + c.name("output")
}

// suggestWait is the wait timeout the wait-timeout advice proposes when
// the pool covers the workers:
// ten times the current one, at least 1 s, rounded to whole ms (whole
// seconds from 1 s up) so it can be typed back as a flag.
func suggestWait(cur time.Duration) time.Duration {
	d := max(10*cur, time.Second)
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
