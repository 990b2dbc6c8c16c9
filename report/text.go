package report

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/ready/outcome"
)

// WriteText writes the fleet table: one line per host, not-ready hosts
// first, then a count per verdict and any notes; then the fleet run, if
// shards were given (WriteFleetRun).
func (f *Fleet) WriteText(w io.Writer) error {
	if len(f.Rows) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, r := range f.Rows {
			fmt.Fprintln(tw, strings.Join(r.cells(), "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		var counts []string
		for v, n := range f.ByVerdict {
			counts = append(counts, fmt.Sprintf("%d %s", n, v))
		}
		sort.Strings(counts)
		fmt.Fprintf(w, "\n%s: %s\n", plural.N(f.Hosts, "host"), strings.Join(counts, ", "))
	}
	for _, n := range f.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
	if f.Run != nil {
		if len(f.Rows) > 0 {
			fmt.Fprintln(w)
		}
		return f.Run.WriteText(w)
	}
	return nil
}

// WriteText writes the fleet run: a line per shard, the merged counts and
// percentiles, the checks and the fleet verdict ("fleet verdict: PASS", upper case like every verdict hostprep prints).
func (r *FleetRun) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "MQTT fleet run %s: %s\n", r.RunID, plural.N(r.Shards, "shard"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "SHARD\tVERDICT\tCLIENTS\tCONNECTED\tPUBLISHED\tACKED\tRECEIVED\tLOST\tWINDOW s\tFIRST PUB LATE ms\tHOST\tFILE\t")
	for _, s := range r.Present {
		fmt.Fprintf(tw, "%d/%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.1f\t%s\t%s\t\n", s.K, r.Shards, s.Verdict, s.Clients, s.Connected,
			s.Published, s.Acked, s.Received, s.Lost, s.WindowS, s.FirstPublishLateMs, s.Hostname, s.Source)
	}
	for _, k := range r.Missing {
		fmt.Fprintf(tw, "%d/%d\tMISSING\t-\t-\t-\t-\t-\t-\t-\t-\t-\t-\t\n", k, r.Shards)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if m := r.Merged; m != nil {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "fleet (all shards merged; percentiles from the merged histograms):")
		if err := m.WriteText(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	for _, c := range r.Checks {
		if c.ID == "fleet.shards" || r.Merged == nil {
			fmt.Fprintf(w, "%-5s %-24s %s\n", strings.ToUpper(string(c.Status)), c.ID, c.Summary)
		}
	}
	_, err := fmt.Fprintf(w, "fleet verdict: %s\n", strings.ToUpper(string(r.Verdict)))
	return err
}

// WriteJUnit writes the fleet run's checks (one test case each, suite
// "hostprep fleet RUN") and one test case per host row (fails when the
// host is NOT READY).
func (f *Fleet) WriteJUnit(w io.Writer) error {
	var checks []verdict.Check
	for _, r := range f.Rows {
		c := verdict.Check{ID: "host." + r.Host, Status: verdict.Pass, Observed: string(r.Verdict), Summary: r.Host + " " + string(r.Verdict)}
		switch r.Verdict {
		case outcome.NotReady:
			c.Status, c.Remedy = verdict.Fail, "failing: "+strings.Join(r.Failing, ", ")
		case outcome.ReadyWithWarnings, outcome.DryRun:
			c.Status = verdict.Warn
		}
		checks = append(checks, c)
	}
	suite := "hostprep fleet"
	if f.Run != nil {
		suite += " " + f.Run.RunID
		checks = append(checks, f.Run.Checks...)
	}
	return verdict.WriteJUnit(w, suite, checks)
}

// WriteJSON writes the fleet as indented JSON (see Fleet and Row).
func (f *Fleet) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}
