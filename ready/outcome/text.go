package outcome

import (
	"fmt"
	"io"
	"sort"
	"strings"

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

// Ordered returns the steps failing first, then warned, passed and
// skipped; run order within each group.
func Ordered(steps []Step) []Step {
	out := append([]Step(nil), steps...)
	sort.SliceStable(out, func(i, j int) bool { return statusRank(out[i].Verdict) < statusRank(out[j].Verdict) })
	return out
}

// WriteText writes the human summary: the verdict line, then one line per
// step (failing steps first) with its failed and warned checks, each with
// observed, expected and the fix.
func WriteText(w io.Writer, r *Result) error {
	changed := "no"
	if r.Changed {
		changed = "yes"
	}
	fmt.Fprintf(w, "hostprep ready: %s\n", r.Verdict)
	if r.DryRun {
		planned := "tuning planned, not applied"
		if t := r.Step(StepTune); t != nil && t.Verdict == verdict.Skip {
			planned = "tuning not planned"
		} else if t != nil {
			planned = fmt.Sprintf("tuning planned, not applied (%.0f changes)", t.Metrics[MetricChanges])
		}
		fmt.Fprintf(w, "  dry run: %s; %d steps skipped", planned, len(r.Skipped))
		if r.Verdict == DryRun {
			fmt.Fprint(w, "; nothing that ran failed, but this is not a readiness verdict: run without --dry-run")
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  host %s, profile %s, changed: %s, %.1f s\n", r.Host, r.Profile, changed, r.DurationMS/1000)
	for _, s := range Ordered(r.Steps) {
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
