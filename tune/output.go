package tune

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/shellquote"
)

// WriteText prints a plan or apply result as an aligned table: one row per
// change (layer, key or file, from -> to, reason), then what is skipped
// and why, warnings, units to restart and notes. verb is "plan" or "apply".
func (r *Result) WriteText(w io.Writer, verb string) error {
	state := "no change: the host already matches"
	if r.Changed {
		state = plural.N(len(r.Changes), "change")
		if verb == "plan" {
			state += " would be made"
		}
	}
	fmt.Fprintf(w, "profile %s (%s mode): %s\n", r.Profile, r.Mode, state)
	if len(r.Changes) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LAYER\tKEY/FILE\tFROM\tTO\tREASON")
		for _, c := range r.Changes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Layer, c.Target(), cell(c.From), cell(c.To), c.Reason)
		}
		tw.Flush()
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintln(w, "skipped:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, s := range r.Skipped {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Layer, s.Target(), s.Reason)
		}
		tw.Flush()
	}
	for _, p := range r.Processes {
		if p.Error != "" {
			fmt.Fprintf(w, "process: %s\n", p.Error)
		} else {
			fmt.Fprintf(w, "process: pid %d RLIMIT_NOFILE %s -> %s\n", p.PID, p.From, p.Now)
		}
	}
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
	if len(r.Restart) > 0 {
		// try-restart, not restart: a profile lists alternatives (emqx,
		// mosquitto), and restart would start one that is stopped, a
		// second broker on the same port. Quoted: a template's pattern
		// (worker@*.service) and an escaped name (a\x2db.service) reach
		// systemctl as written.
		fmt.Fprintf(w, "restart to pick up new limits (try-restart restarts only the units running now): systemctl daemon-reload && systemctl try-restart %s\n", shellquote.Join(r.Restart...))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// WriteText prints what rollback restored and what it left alone.
func (r *RollbackResult) WriteText(w io.Writer) error {
	if len(r.Profiles) == 0 && !r.Changed && len(r.Left) == 0 && len(r.Kept) == 0 && len(r.Failed) == 0 { // nothing applied: the notes say so
		for _, n := range r.Notes {
			fmt.Fprintln(w, n)
		}
		return nil
	}
	fmt.Fprintf(w, "rolled back %s %s: %s restored\n", plural.Noun(len(r.Profiles), "profile"), strings.Join(r.Profiles, ", "), plural.N(len(r.Changes), "item"))
	if len(r.Changes) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "LAYER\tKEY/FILE\tFROM\tTO")
		for _, c := range r.Changes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Layer, c.Target(), cell(c.From), cell(c.To))
		}
		tw.Flush()
	}
	writeNotRolledBack(w, "left alone (changed by someone else since hostprep set it):", r.Left)
	writeNotRolledBack(w, "kept (not lowered below a nofile limit that is still in force):", r.Kept)
	if len(r.Failed) > 0 {
		fmt.Fprintln(w, "not restored (kept in the journal):")
		for _, f := range r.Failed {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return nil
}

// writeNotRolledBack prints title and then one aligned row per item that
// rollback did not restore (layer, key or file, its value now, why);
// nothing when there is none.
func writeNotRolledBack(w io.Writer, title string, items []Skip) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range items {
		fmt.Fprintf(tw, "  %s\t%s\tnow %s\t%s\n", s.Layer, s.Target(), cell(s.Current), s.Reason)
	}
	tw.Flush()
}

// WriteText prints the journal and the live comparison.
func (s *Status) WriteText(w io.Writer) error {
	if !s.Applied {
		fmt.Fprintf(w, "nothing applied (no journal at %s)\n", s.Journal)
		return nil
	}
	fmt.Fprintf(w, "applied %s: %s (%s, last %s)\n", plural.Noun(len(s.Profiles), "profile"), strings.Join(s.Profiles, ", "), plural.N(len(s.Applies), "apply"), s.Applies[len(s.Applies)-1].At.Format("2006-01-02 15:04:05Z"))
	switch {
	case s.RollbackIncomplete:
		fmt.Fprintf(w, "INCOMPLETE: %s\n", s.Interrupted)
	case s.Interrupted != "":
		fmt.Fprintf(w, "INTERRUPTED: %s\n", s.Interrupted)
	}
	s.writeLastVerify(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYER\tKEY/FILE\tORIGINAL\tSET\tLIVE\tAT BOOT\tOK")
	for _, it := range s.Items {
		name := Change{Key: it.Key, File: it.File, PID: it.PID}.Target()
		ok := "ok"
		switch {
		case !it.OK && it.Drift == notReached:
			ok = "PENDING: " + it.Drift
		case !it.OK:
			ok = "DRIFT: " + it.Drift
		}
		set := it.Set
		if it.Mode != "" && it.Mode != "exact" {
			set += " (" + it.Mode + ")"
		}
		atBoot := "-"
		if it.Boot != nil {
			atBoot = cell(it.Boot.Value)
			if it.Boot.File != "" {
				atBoot += fmt.Sprintf(" (%s:%d)", it.Boot.File, it.Boot.Line)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", it.Layer, name, cell(it.Original), cell(set), cell(it.Live), atBoot, ok)
	}
	tw.Flush()
	// Boot items of what has no live row above (nofile limits; every key
	// in image mode, where nothing is live) get their own table.
	live := map[string]bool{}
	for _, it := range s.Items {
		if it.Boot != nil {
			live[it.Key] = true
		}
	}
	var rest []BootItem
	for _, b := range s.Boot {
		if b.Key == "" || !live[b.Key] {
			rest = append(rest, b)
		} else if !b.OK {
			fmt.Fprintf(w, "boot: %s\n", b.Problem)
		}
	}
	if len(rest) > 0 {
		fmt.Fprintln(w, "after the next boot:")
		writeBootItems(w, rest, s.BootNotes, s.BootWarnings)
	}
	if s.BootError != "" {
		fmt.Fprintf(w, "after the next boot: %s\n", s.BootError)
	}
	if s.Drift > 0 {
		fmt.Fprintf(w, "%s drifted\n", plural.N(s.Drift, "item"))
	}
	return nil
}

// cell is a value in a text table: "" for empty, Go-quoted when it holds
// a tab or another control character (a text value such as
// kernel.core_pattern keeps its tabs, which would split the column).
func cell(s string) string {
	if s == "" || strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

// WriteText prints one line per key and limit: what hostprep applied, the
// value after the next boot and the file:line that sets it.
func (b *BootStatus) WriteText(w io.Writer) error {
	if !b.Applied {
		fmt.Fprintf(w, "nothing applied (no journal at %s)\n", b.Journal)
		return nil
	}
	writeBootItems(w, b.Items, b.Notes, b.Warnings)
	return nil
}

// writeBootItems prints boot items as a table (what hostprep persisted,
// the value after the next boot, the file:line that sets it; OK is "not
// installed" for a unit's item that fails nothing but reaches no
// service yet), then one "boot:" line per problem, and a "note:" line
// per note and a "warning:" line per warning (installNotes).
func writeBootItems(w io.Writer, items []BootItem, notes, warnings []string) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY/LIMIT\tAPPLIED\tAT BOOT\tSET BY\tOK")
	for _, it := range items {
		name := it.Key
		if name == "" {
			name = it.Limit
		}
		by := "default"
		if it.Boot.File != "" {
			by = fmt.Sprintf("%s:%d", it.Boot.File, it.Boot.Line)
		}
		if w := it.Boot.Writer; w != "" && w != string(hostconf.SystemdSysctl) && w != string(hostconf.ProcpsSystem) {
			by += " (" + w + ")"
		}
		ok := "ok"
		switch {
		case !it.OK && it.Boot.Value == "not known":
			ok = "NOT KNOWN"
		case !it.OK:
			ok = "DIFFERS"
		case it.NotInstalled:
			ok = "not installed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", name, cell(it.Want), cell(it.Boot.Value), by, ok)
	}
	tw.Flush()
	for _, it := range items {
		if !it.OK {
			fmt.Fprintf(w, "boot: %s\n", it.Problem)
		}
	}
	for _, s := range notes {
		fmt.Fprintf(w, "note: %s\n", s)
	}
	for _, s := range warnings {
		fmt.Fprintf(w, "warning: %s\n", s)
	}
}
