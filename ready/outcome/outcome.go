// Package outcome is the JSON document `hostprep ready --output json`
// prints and `hostprep report merge` reads: one host's verdict, whether
// anything changed, and one entry per step (tune, preflight, probe-mqtt,
// probe-iotdb) with its checks, headline numbers and full result.
//
// It is a leaf package (no hostprep imports besides internal/verdict and
// internal/plural) so
// the report can read results without linking the tuner and the probes.
package outcome

import (
	"time"

	"github.com/hostprep/hostprep/internal/verdict"
)

// Verdict is the one answer of a `hostprep ready` run.
type Verdict string

const (
	// Ready: every step that ran passed (exit 0).
	Ready Verdict = "READY"
	// ReadyWithWarnings: nothing failed, some check warned (exit 0).
	ReadyWithWarnings Verdict = "READY WITH WARNINGS"
	// NotReady: a step failed or could not run (exit 1, or 3 when a step
	// could not run at all).
	NotReady Verdict = "NOT READY"
	// DryRun: a --dry-run in which nothing that ran failed (exit 0). It is
	// not a readiness verdict: the tuning was only planned, and the steps
	// that would touch something (or had no target) were skipped, so a dry
	// run never says READY. A failure found by a step that did run is
	// still NOT READY.
	DryRun Verdict = "DRY RUN"
)

// VerdictOf is the run's verdict: Fold(steps), except that a dry run
// that found no failure is DryRun, never READY.
func VerdictOf(steps []Step, dryRun bool) Verdict {
	v := Fold(steps)
	if dryRun && v != NotReady {
		return DryRun
	}
	return v
}

// Step names, in the order ready runs them.
const (
	StepTune       = "tune"
	StepPreflight  = "preflight"
	StepProbeMQTT  = "probe-mqtt"
	StepProbeIoTDB = "probe-iotdb"
)

// Metric names a step may carry in Step.Metrics. Units are in the name.
const (
	// MetricCapacitySockets (preflight): connections this host can hold now,
	// the smallest ceiling among the checks (fd limits, ports, memory).
	MetricCapacitySockets = "capacity_sockets"
	// MetricTargetSockets (preflight): the target it was checked against.
	MetricTargetSockets = "target_sockets"
	// MetricChanges (tune): number of runtime/persistent changes made
	// (or planned, in a dry run).
	MetricChanges = "changes"
	// MQTT probe numbers over the steady-state window.
	MetricConnectP95MS = "connect_p95_ms"
	MetricAckP95MS     = "ack_p95_ms"
	MetricE2EP95MS     = "e2e_p95_ms"
	MetricE2EP99MS     = "e2e_p99_ms"
	MetricLoss         = "loss"         // fraction 0..1 of messages lost
	MetricMsgsPerS     = "msgs_per_s"   // received messages per second
	MetricClients      = "clients"      // MQTT clients connected
	MetricP95MS        = "p95_ms"       // IoTDB: p95 response time at the target step
	MetricTPS          = "tps"          // IoTDB: operations/s at the target step
	MetricErrorRate    = "error_rate"   // IoTDB: highest error fraction of any step
	MetricKneeWorkers  = "knee_workers" // IoTDB: the knee step's workers (TPS grew < 5%, p95 > 50%); absent when no step was one
	MetricPeakWorkers  = "peak_workers" // IoTDB: the workers of the step with the highest TPS
	MetricPeakTPS      = "peak_tps"     // IoTDB: throughput of that step, operations/s
	MetricRTTMS        = "baseline_rtt_ms"
)

// Point is one x/y sample of a step's series (for charts): a latency
// percentile (X = percentile, 50..100), or an IoTDB step (X = workers).
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Step is one part of a ready run.
type Step struct {
	// Name is tune, preflight, probe-mqtt or probe-iotdb.
	Name string `json:"name"`
	// Verdict is pass, warn, fail, or skip (not run: --no-tune, no
	// target, dry run, or an earlier step failed — Summary says which).
	Verdict verdict.Status `json:"verdict"`
	// Summary is one line for humans.
	Summary string `json:"summary"`
	// Error is set when the step could not run or failed with an error
	// (not root, target unreachable, ...); Verdict is then fail.
	Error string `json:"error,omitempty"`
	// ExitCode is the step's own exit code (0 pass/warn, 1 failed checks,
	// 3 could not run).
	ExitCode int `json:"exit_code"`
	// Changed (tune only): the host was changed by this run.
	Changed bool `json:"changed,omitempty"`
	// DurationMS is the wall time of the step, ms.
	DurationMS float64 `json:"duration_ms"`
	// Checks are every check and probe threshold of the step.
	Checks []verdict.Check `json:"checks,omitempty"`
	// Metrics are the headline numbers (see the Metric* names).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Series are chart data by name: "e2e_latency_ms" / "ack_latency_ms"
	// (X percentile, Y ms), "tps" / "p95_ms" (X workers).
	Series map[string][]Point `json:"series,omitempty"`
	// Result is the step's full result as its package reports it
	// (tune.Result, or tune.PlanReport in a dry run, preflight.Report,
	// mqtt.Result, iotdb.Result).
	Result any `json:"result,omitempty"`
}

// Result is a whole `hostprep ready` run on one host.
type Result struct {
	// Host is the host name (os.Hostname) the run was made on.
	Host string `json:"host"`
	// Profile is the profile's name.
	Profile string `json:"profile"`
	// Verdict: READY, READY WITH WARNINGS or NOT READY; DRY RUN for a
	// --dry-run that found no failure (see DryRun).
	Verdict Verdict `json:"verdict"`
	// Changed is true when tuning changed anything on the host; a second
	// run on a ready host gives false (use it for Ansible's changed_when).
	Changed bool `json:"changed"`
	// DryRun: tuning was only planned and external targets not loaded.
	DryRun bool `json:"dry_run,omitempty"`
	// Started is when the run began; DurationMS its wall time, ms.
	Started    time.Time `json:"started"`
	DurationMS float64   `json:"duration_ms"`
	// Failing names what makes the host NOT READY, failed checks only:
	// "step: check-id: summary" (or "step: error" for a step that could
	// not run). An empty list (never absent) when nothing failed, so a
	// playbook's `failed_when: (r.stdout | from_json).failing | length > 0`
	// always works; the same for Warnings and Skipped.
	Failing []string `json:"failing"`
	// Warnings are the warned checks, same form; they never make a host
	// NOT READY.
	Warnings []string `json:"warnings"`
	// Skipped names the steps that were not run and why, "step: reason"
	// (--no-tune, no target, dry run, an earlier step failed).
	Skipped []string `json:"skipped"`
	// Steps in the order they ran.
	Steps []Step `json:"steps"`
}

// Step returns the step named name, or nil.
func (r *Result) Step(name string) *Step {
	for i := range r.Steps {
		if r.Steps[i].Name == name {
			return &r.Steps[i]
		}
	}
	return nil
}

// Fold computes the run's verdict from its steps: any failed step gives
// NOT READY, else any warning gives READY WITH WARNINGS, else READY.
// Skipped steps do not count.
func Fold(steps []Step) Verdict {
	v := Ready
	for _, s := range steps {
		switch s.Verdict {
		case verdict.Fail:
			return NotReady
		case verdict.Warn:
			v = ReadyWithWarnings
		}
	}
	return v
}

// SkippedSteps lists the steps not run as "step: reason".
func SkippedSteps(steps []Step) []string {
	out := []string{}
	for _, s := range steps {
		if s.Verdict == verdict.Skip {
			out = append(out, s.Name+": "+s.Summary)
		}
	}
	return out
}

// Findings lists the failed checks and, separately, the warned ones, as
// "step: id: summary"; a failed step with no failed check contributes
// "step: error or summary" to fails.
func Findings(steps []Step) (fails, warns []string) {
	fails, warns = []string{}, []string{}
	for _, s := range steps {
		failedCheck := false
		for _, c := range s.Checks {
			line := s.Name + ": " + c.ID + ": " + c.Summary
			switch c.Status {
			case verdict.Fail:
				fails = append(fails, line)
				failedCheck = true
			case verdict.Warn:
				warns = append(warns, line)
			}
		}
		if s.Verdict == verdict.Fail && !failedCheck {
			msg := s.Error
			if msg == "" {
				msg = s.Summary
			}
			fails = append(fails, s.Name+": "+msg)
		}
	}
	return fails, warns
}
