package tune

import (
	"fmt"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/tune/sysval"
)

// BootWriter is one program after the sysctl.d loader that sets a key
// hostprep persists (hostconf.Writers: ufw, tuned, rc.local, a service
// that runs sysctl), as the boot model reads its configuration.
type BootWriter struct {
	// Writer names it ("ufw", "tuned", "rc.local", "service").
	Writer string `json:"writer"`
	// File and Line say where its value comes from.
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	// Value it writes; "" when it cannot be known offline.
	Value string `json:"value,omitempty"`
	// When it runs, relative to systemd-sysctl and the services.
	When string `json:"when"`
	// Verdict is "overrides" (a value that does not satisfy hostprep's),
	// "may override" (such a value from a line that may not run: a
	// script, a conditional write), "not known" (the value cannot be
	// known offline) or "agrees". A value the kernel refuses changes
	// nothing: the writer's write before it counts, or none.
	Verdict string `json:"verdict"`
	// Why says what else decides whether it writes the value.
	Why string `json:"why,omitempty"`
	// Fix says how to make it agree with hostprep; hostprep never
	// edits a file it does not own.
	Fix string `json:"fix,omitempty"`
}

// Where is "FILE:LINE".
func (b BootWriter) Where() string {
	if b.Line == 0 {
		return b.File
	}
	return fmt.Sprintf("%s:%d", b.File, b.Line)
}

// checkWriters judges the writers after the loader that set key k (of
// it, hostprep's item, wanting want by mode) and records them in
// it.Writers. Where one overrides hostprep's value, may do so, or writes
// a value not known offline, the item is not OK: its Boot is that
// writer's value and line (or "not known") and its Problem names the
// writer, FILE:LINE, the value, when it runs and the fix. An item that
// already fails on the loader's files keeps that problem and gains the
// writers' after it.
func checkWriters(it *BootItem, k, want, mode string, key hostconf.KeyAtBoot) {
	var problems []string
	for _, w := range key.Later {
		bw := BootWriter{Writer: w.Writer.Name, File: w.File, Line: w.Line, Value: w.Value, When: w.Writer.When, Why: w.Why, Fix: w.Fix}
		if w.Key == "*" {
			bw.Why = strings.TrimSpace(bw.Why + " (it may set any key)")
		}
		kept, _ := kernelKeeps(k, w.Value, want)
		switch {
		case w.Value == "":
			bw.Verdict = "not known"
		case sysval.SatisfiesKey(k, kept, want, mode):
			bw.Verdict = "agrees"
		case w.Sure:
			bw.Verdict = "overrides"
		default:
			bw.Verdict = "may override"
		}
		it.Writers = append(it.Writers, bw)
		switch bw.Verdict {
		case "overrides", "may override":
			verb := "sets"
			if bw.Verdict == "may override" {
				verb = "may set"
			}
			p := fmt.Sprintf("sysctl %s: %s %s %s at %s after hostprep's file is applied (%s), so the host runs with %s, not %s", k, w.Writer.Name, verb, sysval.Normalize(w.Value), bw.Where(), w.Writer.When, sysval.Normalize(w.Value), want)
			if w.Why != "" {
				p += " (" + w.Why + ")"
			}
			problems = append(problems, p+"; "+w.Fix)
			if w.Sure || it.OK {
				it.Boot = BootValue{Value: sysval.Normalize(w.Value), File: w.File, Line: w.Line, Writer: w.Writer.Name}
			}
		case "not known":
			why := w.Why
			if why == "" {
				why = "its value is not known offline"
			}
			problems = append(problems, fmt.Sprintf("sysctl %s: not known: %s at %s may set it after hostprep's file is applied (%s): %s; %s", k, w.Writer.Name, bw.Where(), w.Writer.When, why, w.Fix))
			if it.OK {
				it.Boot = BootValue{Value: "not known", File: w.File, Line: w.Line, Writer: w.Writer.Name}
			}
		}
	}
	if len(problems) == 0 {
		return
	}
	if it.OK {
		it.OK = false
		it.Problem = strings.Join(problems, "; ")
		return
	}
	it.Problem += "; " + strings.Join(problems, "; ")
}
