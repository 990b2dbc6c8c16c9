package outcome

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
)

func statusRank(s verdict.Status) int {
	switch s {
	case verdict.Fail:
		return 0
	case verdict.Warn:
		return 1
	case verdict.Pass:
		return 2
	}
	return 3
}

// WriteText writes the human summary: the verdict line (naming the
// failing steps), the run's host, profile and "changed: yes|no" (the
// JSON's "changed"), then one line per step in the order the steps ran,
// each with its failed and warned checks (failed first), each with
// observed, expected and the fix.
func WriteText(w io.Writer, r *Result) error {
	changed := "no"
	if r.Changed {
		changed = "yes"
	}
	fmt.Fprintf(w, "hostprep ready: %s", r.Verdict)
	var failing []string
	for _, s := range r.Steps {
		if s.Verdict == verdict.Fail {
			failing = append(failing, s.Name)
		}
	}
	if len(failing) > 0 {
		fmt.Fprintf(w, " (failing: %s)", strings.Join(failing, ", "))
	}
	fmt.Fprintln(w)
	if r.DryRun {
		planned, skipped := "tuning planned, not applied", len(r.Skipped)
		if t := r.Step(StepTune); t != nil && t.Metrics == nil {
			planned = "tuning not planned"
		} else if t != nil {
			planned = fmt.Sprintf("tuning planned, not applied (%s)", plural.N(int(t.Metrics[MetricChanges]), "change"))
			if t.Verdict == verdict.Skip {
				skipped-- // the planned tuning, said just before
			}
		}
		fmt.Fprintf(w, "  dry run: %s; %s skipped", planned, plural.N(skipped, "other step"))
		if r.Verdict == DryRun {
			fmt.Fprint(w, "; nothing that ran failed, but this is not a readiness verdict: run without --dry-run")
		}
		fmt.Fprintln(w)
	}
	if !r.DryRun && r.Verdict != NotReady && !probed(r) {
		var ran []string
		for _, name := range []string{StepTune, StepPreflight} {
			if s := r.Step(name); s != nil && s.Verdict != verdict.Skip {
				ran = append(ran, map[string]string{StepTune: "the tuning", StepPreflight: "the preflight"}[name])
			}
		}
		fmt.Fprintf(w, "  no probe ran: this verdict rests on %s alone, not on a measured load (add probe.mqtt or probe.iotdb to the profile, or pass --mqtt / --iotdb)\n", strings.Join(ran, " and "))
	}
	fmt.Fprintf(w, "  host %s, profile %s, changed: %s, %.1f s\n", r.Host, r.Profile, changed, r.DurationMS/1000)
	for _, s := range r.Steps {
		fmt.Fprintf(w, "  %-4s  %-12s %s\n", strings.ToUpper(string(s.Verdict)), s.Name, s.Summary)
		if s.Error != "" {
			fmt.Fprintf(w, "        error: %s\n", s.Error)
		}
		cs := append([]verdict.Check(nil), s.Checks...)
		sort.SliceStable(cs, func(i, j int) bool { return statusRank(cs[i].Status) < statusRank(cs[j].Status) })
		for _, c := range cs {
			if c.Status != verdict.Fail && c.Status != verdict.Warn {
				continue
			}
			fmt.Fprintf(w, "        %-4s %s: %s\n", c.Status, c.ID, c.Summary)
			if c.Observed != "" || c.Expected != "" {
				fmt.Fprintf(w, "             observed %s; expected %s\n", dash(c.Observed), dash(c.Expected))
			}
			if c.Remedy != "" {
				fmt.Fprintf(w, "             fix: %s\n", c.Remedy)
			}
		}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// probed says whether a probe step ran (was not skipped).
func probed(r *Result) bool {
	for _, name := range []string{StepProbeMQTT, StepProbeIoTDB} {
		if s := r.Step(name); s != nil && s.Verdict != verdict.Skip {
			return true
		}
	}
	return false
}
