package iotdb

import (
	"fmt"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
)

// CheckSchedule judges whether an open loop (Config.Rate) kept its own
// schedule: the share of the operations a step's schedule had due that
// never started (Step.Missed) because its workers were still busy with
// earlier ones.
const CheckSchedule = "iotdb.schedule"

// Thresholds of CheckSchedule, as fractions (0..1) of a step's due
// operations (Step.Due) that never started. ScheduleWarnShare is the
// MQTT probe's allowance for its own schedule (mqtt.schedule: 1% of
// publishes late for GC pauses and a busy core) applied to operations
// that never started. ScheduleFailShare is the knee's throughput
// growth rule (KneeTPSGrowth, 5%): a step that carried less than 95% of
// the rate asked of it is short by more than the growth the knee reads
// as "throughput stopped growing", so its TPS and p95 no longer describe
// the load asked; such a step fails the check and is left out of the
// knee (Knee.Behind).
//
// OfferFailShare is the most of a step's due operations that may go
// unoffered to the server, whatever the cause (never started: Missed;
// or failed on a session that could not connect or lost its connection,
// ClassConnect: not carried by the server), before CheckSchedule fails: the
// offered rate is then more than 2% below the rate asked, as
// mqtt.schedule judges the MQTT probe's.
const (
	ScheduleWarnShare = 0.01
	ScheduleFailShare = KneeTPSGrowth
	OfferFailShare    = 0.02
)

// Due is how many operations the step's open-loop schedule had due: the
// ones that finished, were cut, or never started (Missed). 0 for a
// closed loop's step without misses.
func (s *Step) Due() int64 { return s.Ops + s.Cut + s.Missed }

// MissedShare is Missed over Due (0..1; 0 when nothing was due).
func (s *Step) MissedShare() float64 {
	if d := s.Due(); d > 0 {
		return float64(s.Missed) / float64(d)
	}
	return 0
}

// NotConnected is how many of the step's operations failed because
// their session could not connect or lost its connection (ClassConnect):
// due, but not carried by the server.
func (s *Step) NotConnected() int64 { return s.ErrorsByClass[ClassConnect] }

// NotOfferedShare is the share of the step's due operations the server
// was never offered: Missed plus NotConnected, over Due (0..1).
func (s *Step) NotOfferedShare() float64 {
	if d := s.Due(); d > 0 {
		return float64(s.Missed+s.NotConnected()) / float64(d)
	}
	return 0
}

// behind tells a complete step whose open-loop schedule missed more
// than ScheduleFailShare of its due operations: it measured less than the
// load asked, and the knee leaves it out.
func (s *Step) behind() bool { return !s.Partial && s.MissedShare() > ScheduleFailShare }

// scheduleCheck judges the complete steps of an open loop against
// ScheduleWarnShare and ScheduleFailShare on the worst step's missed
// share; a closed loop, or a run with no complete step, skips.
func scheduleCheck(c *Config, steps []Step) verdict.Check {
	ch := verdict.Check{ID: CheckSchedule,
		Expected: fmt.Sprintf("<= %g%% of the operations due never started in every step (warn above, fail above %g%%)", 100*ScheduleWarnShare, 100*ScheduleFailShare)}
	if c.Rate <= 0 {
		ch.Status, ch.Summary, ch.Expected = verdict.Skip, "closed loop: no schedule to keep ("+c.name("rate")+" sets one)", ""
		return ch
	}
	var worst, short *Step
	for i := range steps {
		s := &steps[i]
		if !s.Partial && (worst == nil || s.MissedShare() > worst.MissedShare()) {
			worst = s
		}
		if !s.Partial && (short == nil || s.NotOfferedShare() > short.NotOfferedShare()) {
			short = s
		}
	}
	if worst == nil {
		ch.Status, ch.Summary, ch.Expected = verdict.Skip, "no step ran to the end", ""
		return ch
	}
	if share := short.NotOfferedShare(); share > OfferFailShare {
		// The offered rate fell short of the asked one, whatever the
		// cause: every due operation is offered, missed or not connected.
		due := short.Due()
		ch.Status = verdict.Fail
		ch.Expected = fmt.Sprintf(">= %g%% of the operations due offered to the server in every step", 100*(1-OfferFailShare))
		ch.Observed = fmt.Sprintf("%d of %s due offered (%.2f%%) at %s", due-short.Missed-short.NotConnected(), plural.N(due, "operation"), 100*(1-share), plural.N(short.Workers, "worker"))
		asked := c.Rate * float64(short.local())
		ch.Summary = fmt.Sprintf("offered %.1f of the %.1f operations/s asked at %s (%.1f%% short, beyond the %g%% allowance): %d never started (the workers were behind), %d failed on a session that could not connect or lost its connection (not carried by the server)",
			asked*(1-share), asked, plural.N(short.Workers, "worker"), 100*share, 100*OfferFailShare, short.Missed, short.NotConnected())
		var fix []string
		if short.Missed > 0 {
			fix = append(fix, c.workersFix())
		}
		if short.NotConnected() > 0 {
			fix = append(fix, "sessions failed to connect or lost their connection: see errors by class (connect) and the server's log")
		}
		ch.Remedy = strings.Join(fix, "; ")
		return ch
	}
	ch.Observed = fmt.Sprintf("%d of %s due never started (%.2f%%) at %s", worst.Missed, plural.N(worst.Due(), "operation"), 100*worst.MissedShare(), plural.N(worst.Workers, "worker"))
	switch share := worst.MissedShare(); {
	case share <= ScheduleWarnShare:
		ch.Status = verdict.Pass
		ch.Summary = fmt.Sprintf("the probe kept its schedule of %g operations/s per worker: at worst %s, within the %g%% allowance", c.Rate, ch.Observed, 100*ScheduleWarnShare)
		return ch
	case share <= ScheduleFailShare:
		ch.Status = verdict.Warn
		ch.Summary = fmt.Sprintf("the probe fell behind its schedule of %g operations/s per worker: %s, beyond the %g%% allowance; that step carried less than the rate asked", c.Rate, ch.Observed, 100*ScheduleWarnShare)
	default:
		ch.Status = verdict.Fail
		ch.Summary = fmt.Sprintf("the probe could not keep its schedule of %g operations/s per worker: %s, above %g%%: the step measured less than the load asked (left out of the knee)", c.Rate, ch.Observed, 100*ScheduleFailShare)
	}
	ch.Remedy = c.workersFix()
	return ch
}

// workersFix is the fix for a step bounded by its workers at c.Rate
// operations/s per worker, naming c's settings (Config.name).
func (c *Config) workersFix() string {
	return fmt.Sprintf("each worker runs one operation at a time, so it carries at most 1/latency operations/s: run more workers for the same total rate (%s) or a lower %s than %g", c.name("steps"), c.name("rate"), c.Rate)
}

// workersBound is BoundWorkers' reason for s, ok false when s kept its
// schedule within ScheduleWarnShare: rate operations/s per worker
// against what one worker carried at its latency.
func workersBound(s *Step, rate float64) (string, bool) {
	if s.Partial || s.MissedShare() <= ScheduleWarnShare {
		return "", false
	}
	carried := 0.0
	if s.DurationS > 0 {
		carried = float64(s.Ops) / s.DurationS / float64(s.local())
	}
	return fmt.Sprintf("%d of %s due never started (%.1f%%): %s were asked %g operations/s each and carried %.0f; a worker runs one operation at a time, so rate x latency above 1 leaves it behind",
		s.Missed, plural.N(s.Due(), "operation"), 100*s.MissedShare(), plural.N(s.local(), "worker"), rate, carried), true
}
