package outcome

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/internal/verdict"
)

// StatusValue is how a check's status is exported to Prometheus: 0 pass,
// 1 warn, 2 fail, 3 skip.
func StatusValue(s verdict.Status) int {
	switch s {
	case verdict.Pass:
		return 0
	case verdict.Warn:
		return 1
	case verdict.Fail:
		return 2
	}
	return 3
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

func lv(s string) string { return labelEscaper.Replace(s) }

// WriteProm writes r in the Prometheus text exposition format for
// node_exporter's textfile collector (write it to DIR/hostprep.prom
// atomically; see WriteFileAtomic):
//
//	hostprep_ready{profile}                        1 READY / READY WITH WARNINGS, 0 NOT READY
//	hostprep_ready_warnings{profile}               1 when READY WITH WARNINGS
//	hostprep_ready_changed{profile}                1 when this run changed the host
//	hostprep_ready_step_status{step}               0 pass, 1 warn, 2 fail, 3 skip
//	hostprep_ready_check_status{step,check}        0 pass, 1 warn, 2 fail, 3 skip
//	hostprep_ready_step_metric{step,metric}        headline numbers (units in the metric label)
//	hostprep_ready_duration_seconds, hostprep_ready_last_run_timestamp_seconds
func WriteProm(w io.Writer, r *Result) error {
	var b strings.Builder
	p := lv(r.Profile)
	gauge := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}
	bool01 := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	gauge("hostprep_ready", "1 if hostprep ready found the host READY (or READY WITH WARNINGS), 0 if NOT READY.")
	fmt.Fprintf(&b, "hostprep_ready{profile=\"%s\"} %d\n", p, bool01(r.Verdict != NotReady))
	gauge("hostprep_ready_warnings", "1 if the verdict was READY WITH WARNINGS.")
	fmt.Fprintf(&b, "hostprep_ready_warnings{profile=\"%s\"} %d\n", p, bool01(r.Verdict == ReadyWithWarnings))
	gauge("hostprep_ready_changed", "1 if the last hostprep ready run changed the host's tuning.")
	fmt.Fprintf(&b, "hostprep_ready_changed{profile=\"%s\"} %d\n", p, bool01(r.Changed))
	gauge("hostprep_ready_step_status", "Status of each hostprep ready step: 0 pass, 1 warn, 2 fail, 3 skip.")
	for _, s := range r.Steps {
		fmt.Fprintf(&b, "hostprep_ready_step_status{profile=\"%s\",step=\"%s\"} %d\n", p, lv(s.Name), StatusValue(s.Verdict))
	}
	gauge("hostprep_ready_check_status", "Status of each check and probe threshold: 0 pass, 1 warn, 2 fail, 3 skip.")
	for _, s := range r.Steps {
		for _, c := range s.Checks {
			fmt.Fprintf(&b, "hostprep_ready_check_status{profile=\"%s\",step=\"%s\",check=\"%s\"} %d\n", p, lv(s.Name), lv(c.ID), StatusValue(c.Status))
		}
	}
	gauge("hostprep_ready_step_metric", "Headline numbers of each step; the unit is part of the metric label (capacity_sockets: connections, *_ms: milliseconds, loss and error_rate: fraction 0..1, tps and msgs_per_s: per second).")
	for _, s := range r.Steps {
		keys := make([]string, 0, len(s.Metrics))
		for k := range s.Metrics {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "hostprep_ready_step_metric{profile=\"%s\",step=\"%s\",metric=\"%s\"} %g\n", p, lv(s.Name), lv(k), s.Metrics[k])
		}
	}
	gauge("hostprep_ready_duration_seconds", "Wall time of the last hostprep ready run, seconds.")
	fmt.Fprintf(&b, "hostprep_ready_duration_seconds{profile=\"%s\"} %g\n", p, r.DurationMS/1000)
	gauge("hostprep_ready_last_run_timestamp_seconds", "Unix time the last hostprep ready run started.")
	fmt.Fprintf(&b, "hostprep_ready_last_run_timestamp_seconds{profile=\"%s\"} %d\n", p, r.Started.Unix())
	_, err := io.WriteString(w, b.String())
	return err
}
