package iotdb

import (
	"fmt"
	"slices"

	"github.com/hostprep/hostprep/internal/plural"
)

// Knee rules: a step is the knee when, against the step before it,
// throughput grows by less than KneeTPSGrowth while p95 grows by more than
// KneeP95Growth.
const (
	KneeTPSGrowth = 0.05
	KneeP95Growth = 0.50
)

// Knee is where more concurrency stops buying throughput.
type Knee struct {
	// PeakWorkers is the step with the highest TPS; PeakTPS that TPS.
	PeakWorkers int     `json:"peak_workers"`
	PeakTPS     float64 `json:"peak_tps"`
	// Workers is the first step whose TPS grew < 5% while its p95 grew
	// > 50% over the previous step; 0 when no step did.
	Workers int `json:"workers,omitempty"`
	// TPSGrowth and P95Growth are that step's growth over the previous
	// step (fractions: 0.02 = +2%).
	TPSGrowth float64 `json:"tps_growth,omitempty"`
	P95Growth float64 `json:"p95_growth,omitempty"`
	// Ignored are the worker counts of steps left out because their error
	// rate was above the limit FindKnee was given.
	Ignored []int `json:"ignored_steps,omitempty"`
	// Behind are the worker counts of open-loop steps left out because
	// more than ScheduleFailShare of the operations their schedule had
	// due never started: they carried less than the rate asked.
	Behind []int `json:"behind_steps,omitempty"`
	// Bound is what limited the knee step (or the first bounded step
	// from the peak on): one of the Bound* values, "" when none was found
	// (see Step.Bound); Run names it, its reason and the fix in Reading.
	Bound string `json:"bound,omitempty"`
	// Reading is one line for humans.
	Reading string `json:"reading"`
}

// FindKnee finds the throughput peak and the knee of steps (in the order
// run; the rule compares each step with the one before it). It is a pure
// function of Workers, TPS, Latency.P95, the error rate and the missed
// share.
//
// Partial steps (cut short) are left out, and so are steps whose error
// rate is above maxErrorRate (listed in Knee.Ignored and named in the
// reading): their TPS and p95 come from the few operations that got
// through; and open-loop steps that missed more than ScheduleFailShare
// of their schedule (Knee.Behind): they measured less than the load
// asked of them. Run passes the error-rate threshold (default DefaultMaxErrorRate).
// The reading names settings by the library's defaults (SettingName).
func FindKnee(steps []Step, maxErrorRate float64) Knee {
	return (&Config{}).findKnee(steps, maxErrorRate)
}

// findKnee is FindKnee with the reading naming c's settings (Config.name).
func (c *Config) findKnee(steps []Step, maxErrorRate float64) Knee {
	var k Knee
	partial := 0
	for _, s := range steps {
		if s.Partial {
			partial++
		}
	}
	if partial > 0 && partial == len(steps) {
		k.Reading = "no step ran to the end (the run was cut short): no knee to read"
		return k
	}
	steps = slices.DeleteFunc(slices.Clone(steps), func(s Step) bool {
		switch {
		case s.Partial:
			return true
		case s.ErrorRate > maxErrorRate:
			k.Ignored = append(k.Ignored, s.Workers)
			return true
		case s.behind():
			k.Behind = append(k.Behind, s.Workers)
			return true
		}
		return false
	})
	k.Reading = k.read(steps, c.name("step_duration"))
	if len(k.Ignored) > 0 {
		k.Reading += fmt.Sprintf(" (the %s at %s ignored for the knee: error rate above %.2f%%)", plural.Noun(len(k.Ignored), "step"), plural.List(k.Ignored, "worker"), 100*maxErrorRate)
	}
	if len(k.Behind) > 0 {
		k.Reading += fmt.Sprintf(" (the %s at %s left out of the knee: more than %g%% of the operations the schedule had due never started, so the rate asked was not carried)", plural.Noun(len(k.Behind), "step"), plural.List(k.Behind, "worker"), 100*ScheduleFailShare)
	}
	return k
}

// read finds the peak and the knee of steps into k and returns the
// reading; stepDuration names the step-duration setting.
func (k *Knee) read(steps []Step, stepDuration string) string {
	if len(steps) == 0 {
		switch {
		case len(k.Behind) > 0:
			return "no step carried the rate asked with an acceptable error rate: no knee to read"
		case len(k.Ignored) > 0:
			return "no step ran with an acceptable error rate: no knee to read"
		}
		return "no steps were measured"
	}
	for i, s := range steps {
		if i == 0 || s.TPS > k.PeakTPS {
			k.PeakWorkers, k.PeakTPS = s.Workers, s.TPS
		}
	}
	for i := 1; i < len(steps); i++ {
		prev, cur := steps[i-1], steps[i]
		if prev.TPS <= 0 || prev.Latency.P95 <= 0 {
			continue
		}
		tg := cur.TPS/prev.TPS - 1
		pg := cur.Latency.P95/prev.Latency.P95 - 1
		if tg < KneeTPSGrowth && pg > KneeP95Growth {
			k.Workers, k.TPSGrowth, k.P95Growth = cur.Workers, tg, pg
			break
		}
	}
	last := steps[len(steps)-1]
	switch {
	case k.PeakTPS <= 0:
		return "no operation succeeded: no throughput to read a knee from"
	case len(steps) == 1:
		return fmt.Sprintf("one step (%s, %.0f TPS): add steps to find a knee", plural.N(last.Workers, "worker"), k.PeakTPS)
	case k.Workers != 0 && k.Workers < k.PeakWorkers:
		return fmt.Sprintf("at %s latency rises without more throughput (TPS %+.1f%%, p95 %+.0f%%), yet throughput peaks later at %s (%.0f TPS): the steps are noisy; repeat with longer %s",
			plural.N(k.Workers, "worker"), 100*k.TPSGrowth, 100*k.P95Growth, plural.N(k.PeakWorkers, "worker"), k.PeakTPS, stepDuration)
	case k.Workers != 0 && k.Workers == k.PeakWorkers:
		return fmt.Sprintf("throughput tops out at %s (%.0f TPS, only %+.1f%% over the step before) while p95 rises %+.0f%%: the knee is at %s; more workers only add latency",
			plural.N(k.Workers, "worker"), k.PeakTPS, 100*k.TPSGrowth, 100*k.P95Growth, plural.N(k.Workers, "worker"))
	case k.Workers != 0:
		return fmt.Sprintf("throughput peaks at %s (%.0f TPS); at %s latency rises without more throughput (TPS %+.1f%%, p95 %+.0f%%)",
			plural.N(k.PeakWorkers, "worker"), k.PeakTPS, plural.N(k.Workers, "worker"), 100*k.TPSGrowth, 100*k.P95Growth)
	case k.PeakWorkers == last.Workers && len(steps) > 1:
		return fmt.Sprintf("throughput still grows at the last step (%s, %.0f TPS): no knee within these steps; try larger steps", plural.N(k.PeakWorkers, "worker"), k.PeakTPS)
	default:
		return fmt.Sprintf("throughput peaks at %s (%.0f TPS) and falls beyond it, without the p95 jump that marks a knee", plural.N(k.PeakWorkers, "worker"), k.PeakTPS)
	}
}
