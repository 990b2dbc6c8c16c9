package outcome

import (
	"io"
	"sort"

	"github.com/hostprep/hostprep/internal/verdict"
)

// PromChecks are the checks of every step with step-qualified IDs
// ("preflight/fd.hard"), plus "STEP/could-not-run" (fail) for a step that
// failed without a failed check, so their worst status is the run's.
func PromChecks(r *Result) []verdict.Check {
	var cs []verdict.Check
	for _, s := range r.Steps {
		failed := false
		for _, c := range s.Checks {
			c.ID = s.Name + "/" + c.ID
			failed = failed || c.Status == verdict.Fail
			cs = append(cs, c)
		}
		if s.Verdict == verdict.Fail && !failed {
			cs = append(cs, verdict.Check{ID: s.Name + "/could-not-run", Status: verdict.Fail, Summary: s.Error})
		}
	}
	return cs
}

// WriteProm writes r for node_exporter's textfile collector with the
// shared writer of internal/verdict (write it atomically, see
// internal/atomicfile):
//
//	hostprep_ready_check_status{check="STEP/ID"}   0 pass, 1 warn, 2 fail, -1 skip
//	hostprep_ready_verdict                         worst of them: 0 pass, 1 warn, 2 fail
//	hostprep_ready                                 1 READY / READY WITH WARNINGS, 0 NOT READY or DRY RUN
//	hostprep_ready_changed                         1 when this run changed the host
//	hostprep_ready_step_status{step}               0 pass, 1 warn, 2 fail, -1 skip
//	hostprep_ready_step_metric{step,metric}        headline numbers (unit in the metric label)
//	hostprep_ready_duration_seconds, hostprep_ready_last_run_timestamp_seconds
func WriteProm(w io.Writer, r *Result) error {
	b01 := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	extra := []verdict.Gauge{
		{Name: "hostprep_ready", Help: "1 if hostprep ready found the host READY (or READY WITH WARNINGS), 0 if NOT READY or a DRY RUN.",
			Labels: map[string]string{"profile": r.Profile}, Value: b01(r.Verdict == Ready || r.Verdict == ReadyWithWarnings)},
		{Name: "hostprep_ready_changed", Help: "1 if the last hostprep ready run changed the host's tuning.", Value: b01(r.Changed)},
	}
	for _, s := range r.Steps {
		extra = append(extra, verdict.Gauge{Name: "hostprep_ready_step_status", Help: "Status of each hostprep ready step: 0 pass, 1 warn, 2 fail, -1 skip.",
			Labels: map[string]string{"step": s.Name}, Value: verdict.StatusValue(s.Verdict)})
	}
	for _, s := range r.Steps {
		keys := make([]string, 0, len(s.Metrics))
		for k := range s.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			extra = append(extra, verdict.Gauge{Name: "hostprep_ready_step_metric",
				Help:   "Headline numbers of each step; the unit is in the metric label (capacity_sockets: connections, *_ms: milliseconds, loss and error_rate: fraction 0..1, tps and msgs_per_s: per second).",
				Labels: map[string]string{"step": s.Name, "metric": k}, Value: s.Metrics[k]})
		}
	}
	extra = append(extra,
		verdict.Gauge{Name: "hostprep_ready_duration_seconds", Help: "Wall time of the last hostprep ready run, seconds.", Value: r.DurationMS / 1000},
		verdict.Gauge{Name: "hostprep_ready_last_run_timestamp_seconds", Help: "Unix time the last hostprep ready run started.", Value: float64(r.Started.Unix())},
	)
	return verdict.WriteProm(w, "hostprep_ready", PromChecks(r), extra)
}
