package iotdb

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/loadprobe/counts"
)

// WriteText prints the result as the reference test's table, one row per
// step, followed by the knee reading and the checks.
func (r *Result) WriteText(w io.Writer) error {
	r.writeTextHeader(w)
	if err := r.writeStepTable(w); err != nil {
		return err
	}
	for _, s := range r.Steps {
		if s.Errors > 0 {
			fmt.Fprintf(w, "errors at %s: %s%s\n", plural.N(s.Workers, "worker"), classSummary(&s), codeSummary(s.StatusCodes))
		}
	}
	for _, s := range r.Steps {
		switch {
		case s.Missed > 0 && s.Partial:
			fmt.Fprintf(w, "behind at %s: %s the schedule had due before the step was cut never started (its workers were still busy with earlier ones)\n",
				plural.N(s.Workers, "worker"), plural.N(s.Missed, "operation"))
		case s.Missed > 0:
			fmt.Fprintf(w, "behind at %s: %s the schedule had due never started (the offered rate was above what client and server carried)\n",
				plural.N(s.Workers, "worker"), plural.N(s.Missed, "operation"))
		}
	}
	for _, s := range r.Steps {
		if s.Latency.Censored > 0 {
			fmt.Fprintf(w, "censored at %s: %s\n", plural.N(s.Workers, "worker"), censoredSummary(&s))
		}
	}
	for _, s := range r.Steps {
		if s.Bound != "" {
			fmt.Fprintf(w, "bound at %s: %s (%s)\n", plural.N(s.Workers, "worker"), s.Bound, s.BoundReason)
		}
	}
	fmt.Fprintf(w, "\nknee         %s\n", r.Knee.Reading)
	for _, g := range r.Suggestions {
		fmt.Fprintf(w, "suggest      %s: %s; fix: %s\n", g.Setting, g.Observed, g.Fix)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note         %s\n", n)
	}
	fmt.Fprintln(w)
	for _, c := range r.Checks {
		fmt.Fprintf(w, "%-5s %-17s %s\n", strings.ToUpper(string(c.Status)), c.ID, c.Summary)
		if c.Remedy != "" && (c.Status == "fail" || c.Status == "warn") {
			fmt.Fprintf(w, "      %-17s fix: %s\n", "", c.Remedy)
		}
	}
	_, err := fmt.Fprintf(w, "verdict: %s\n", strings.ToUpper(string(r.Verdict)))
	return err
}

// writeTextHeader prints the target, the load, the database and what
// happened to it, and the run's notes (shard, redirection, unreachable
// nodes, INCOMPLETE), then a blank line.
func (r *Result) writeTextHeader(w io.Writer) {
	wp, rp := PointsPerOp(r.Scenario)
	load := fmt.Sprintf("%s (%d points/op)", r.Scenario, wp)
	if r.Scenario == ScenarioMixed {
		load = fmt.Sprintf("mixed (70%% reads of %s, 30%% writes of %s)", plural.N(rp, "point"), plural.N(wp, "point"))
	}
	mode := "closed loop"
	if r.Mode == "open" {
		mode = fmt.Sprintf("open loop, %g ops/s per worker, latency from scheduled start", r.RatePerWorker)
	}
	fmt.Fprintf(w, "IoTDB probe  %s  (IoTDB %s)\n", r.Target, orUnknown(r.ServerVersion))
	fmt.Fprintf(w, "load         %s, %s; SessionPool %s, wait timeout %.0f ms, call deadline %.0f ms\n",
		load, mode, plural.N(r.PoolSize, "session"), r.WaitTimeoutMS, r.CallTimeoutMS)
	kept := "deleted after the run"
	if !r.CreatedDatabase && r.Prefix != r.Database {
		kept = "series deleted after the run"
	}
	switch {
	case r.DeleteUnknown:
		kept = "MAY NOT BE DELETED (delete failed: " + r.DeleteError + ")"
	case r.DeleteError != "":
		kept = "NOT DELETED (delete failed: " + r.DeleteError + ")"
	case r.Kept:
		kept = "KEPT (--keep)"
	}
	if r.CreatedDatabase || r.Prefix == r.Database {
		fmt.Fprintf(w, "database     %s (%d series, %s)\n", r.Database, r.Series, kept)
	} else {
		fmt.Fprintf(w, "database     %s (existing), devices under %s (%d series; only these %s)\n", r.Database, r.Prefix, r.Series, kept)
	}
	if r.Shard != "" {
		fmt.Fprintf(w, "shard        %s of a fleet run: workers columns are the fleet's; ops, TPS and latency this shard's\n", r.Shard)
	}
	if r.Redirection {
		fmt.Fprintf(w, "redirection  on: writes follow the server's REDIRECTION_RECOMMEND to the node leading the device\n")
	}
	for _, n := range r.UnreachableNodes {
		fmt.Fprintf(w, "unreachable  %s\n", n)
	}
	if r.StopReason != "" {
		fmt.Fprintf(w, "INCOMPLETE   %s\n", r.StopReason)
	}
	fmt.Fprintln(w)
}

// writeStepTable prints one row per step, the knee and the peak marked.
func (r *Result) writeStepTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "workers\tops\tTPS\tpoints/s\tmean ms\tp50 ms\tp95 ms\tp99 ms\tmax ms\terrors\tpool use\tclient CPU\tbound\t\n")
	for _, s := range r.Steps {
		mark := ""
		if s.Partial {
			mark = " partial"
		}
		switch {
		case s.Partial:
		case s.Workers == r.Knee.Workers:
			mark = " knee"
		case s.Workers == r.Knee.PeakWorkers:
			if len(r.Steps) > 1 {
				mark = " peak"
			}
		}
		bound := s.Bound
		if bound == "" {
			bound = "-"
		}
		fmt.Fprintf(tw, "%d%s\t%d\t%.1f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f%%\t%.0f%% (max %.0f%%)\t%.2f cores\t%s\t\n",
			s.Workers, mark, s.Ops, s.TPS, s.PointsPerS, s.Latency.Mean, s.Latency.P50, s.Latency.P95, s.Latency.P99, s.Latency.Max,
			100*s.ErrorRate, 100*s.Pool.MeanUtil, 100*s.Pool.MaxUtil, s.Client.CPUCores, bound)
	}
	return tw.Flush()
}

// censoredSummary says how many of s's latencies are censored (at no
// less than the time they waited) and why (censoredParts).
func censoredSummary(s *Step) string {
	var why []string
	for _, p := range censoredParts(s) {
		why = append(why, plural.N(p.n, "operation")+" "+p.long)
	}
	return fmt.Sprintf("%d of %s in p95/p99/max at no less than the time they waited (%s)",
		s.Latency.Censored, plural.N(s.Latency.Count, "latency"), strings.Join(why, ", "))
}

// censorPart is one reason a step's latencies are censored: n
// operations, said long (text) or short (the HTML table's cell).
type censorPart struct {
	n           int64
	long, short string
}

// censoredParts are the reasons s's latencies are censored, the same
// in every format (text, HTML; JSON and CSV count them as unanswered,
// missed and cut): failed without an answer, never started (open loop),
// under way when the step was cut short. Parts of 0 are left out.
func censoredParts(s *Step) []censorPart {
	var out []censorPart
	for _, p := range []censorPart{
		{unanswered(s), "failed without an answer", "no answer"},
		{s.Missed, "never started", "never started"},
		{s.Cut, "in flight when the step was cut", "cut"},
	} {
		if p.n > 0 {
			out = append(out, p)
		}
	}
	return out
}

// unanswered is how many of s's operations failed without an answer
// from the server (every error but a status).
func unanswered(s *Step) int64 { return s.Errors - s.ErrorsByClass[ClassStatus] }

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
}

func codeSummary(codes map[string]int64) string {
	if len(codes) == 0 {
		return ""
	}
	return " (status codes: " + counts.List(codes, "%s x%d") + ")"
}

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// CSVHeader is the header row of WriteCSV.
var CSVHeader = []string{"scenario", "workers", "duration_s", "ops", "ok", "errors", "error_rate",
	"tps", "points_per_s", "mean_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms",
	"wait_timeout", "connect", "status", "deadline", "panic", "other",
	"pool_size", "pool_mean_util", "pool_max_util", "knee", "partial", "missed", "cut", "censored", "unanswered"}

// WriteCSV writes one row per step (header CSVHeader); knee is "peak",
// "knee" or empty; partial is true for a step cut short (an interrupted
// or stopped run), whose figures cover only the part that ran. missed,
// cut and censored are the JSON's missed, cut and latency.censored:
// operations the open-loop schedule had due that never started, those
// under way when the step was cut short, and how many of the step's
// latencies are censored (those two plus the failures without an
// answer: unanswered, the sum of the wait_timeout, connect, deadline,
// panic and other columns), so that p95/p99/max of a row can be read as
// lower bounds. Errors are
// w's.
func (r *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	d := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, s := range r.Steps {
		mark := ""
		if s.Workers == r.Knee.PeakWorkers {
			mark = "peak"
		}
		if s.Workers == r.Knee.Workers {
			mark = "knee"
		}
		row := []string{r.Scenario, strconv.Itoa(s.Workers), f(s.DurationS), d(s.Ops), d(s.OK), d(s.Errors), f(s.ErrorRate),
			f(s.TPS), f(s.PointsPerS), f(s.Latency.Mean), f(s.Latency.P50), f(s.Latency.P95), f(s.Latency.P99), f(s.Latency.Max)}
		for _, c := range Classes {
			row = append(row, d(s.ErrorsByClass[c]))
		}
		row = append(row, strconv.Itoa(s.Pool.Size), f(s.Pool.MeanUtil), f(s.Pool.MaxUtil), mark, strconv.FormatBool(s.Partial),
			d(s.Missed), d(s.Cut), d(s.Latency.Censored), d(unanswered(&s)))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
