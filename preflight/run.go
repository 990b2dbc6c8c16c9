package preflight

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/remedies"
)

// Options are the inputs of Run.
type Options struct {
	// Target is the load to check (validated and defaulted by Run).
	Target facts.Target
	// Root is the procfs/sysfs/etc root ("" = live host).
	Root string
	// PID is the process that will hold the sockets (--pid).
	PID int
	// Service is the systemd unit that will hold them (--service); when
	// empty, Target.Service (from a profile) is used.
	Service string
	// Active runs the loopback measurement (--active).
	Active        bool
	ActiveOptions facts.ActiveOptions
	// Ignore lists check IDs whose failures become warnings (--ignore).
	// Empty items ("fd.soft,,") are dropped and spaces trimmed; an unknown
	// ID is an exitcode.BadInput error.
	Ignore []string
	// Facts, when set, are used instead of gathering (a recorded host).
	Facts *facts.Facts
	// IoTDBHome is an IoTDB release directory whose configuration the
	// iotdb checks read (--iotdb-home); "" = none.
	IoTDBHome string
	// Record copies what preflight reads of the live host into this
	// directory (--record; replay it with Root).
	Record string
}

// HostSummary is the host the report is about.
type HostSummary struct {
	Kernel       string `json:"kernel"`
	CPUs         int    `json:"cpus"`
	MemTotal     uint64 `json:"mem_total_bytes"`
	MemAvailable uint64 `json:"mem_available_bytes"`
	PageSize     int64  `json:"page_size_bytes"`
}

// Report is the outcome of a preflight run; text, JSON, JUnit and
// Prometheus outputs are all rendered from it. It is JSON-serialisable.
type Report struct {
	// Verdict is the worst status of Checks (skip counts as pass).
	Verdict verdict.Status `json:"verdict"`
	Target  facts.Target   `json:"target"`
	Host    HostSummary    `json:"host"`
	// TargetProcess is whose limits the fd checks used.
	TargetProcess facts.ProcessFacts `json:"target_process"`
	// Listeners are the target's listeners (on Target.ListenerPorts) with
	// their listen() backlog and accept queue; ListenersKnown is false
	// when sock_diag could not be read.
	Listeners      []facts.Listener `json:"listeners"`
	ListenersKnown bool             `json:"listeners_known"`
	// IoTDB is the --iotdb-home configuration read, nil without it.
	IoTDB *facts.IoTDBConfig `json:"iotdb,omitempty"`
	// TargetJVM are a running Java target's memory flags.
	TargetJVM *facts.JVMFlags `json:"target_jvm,omitempty"`
	// Checks in report order (registry order; writers may sort).
	Checks   []verdict.Check `json:"checks"`
	Capacity checks.Capacity `json:"capacity"`
	// Ignored are the --ignore IDs.
	Ignored []string `json:"ignored,omitempty"`
	// Notes are facts that could not be gathered.
	Notes []string `json:"notes,omitempty"`
	// Remedies are the proofs of the remedies: the changes each stands
	// for and the checks that pass after them (see remedy.go).
	Remedies []remedies.Proof `json:"remedies,omitempty"`
}

// Run checks whether the host can carry opts.Target: it gathers the facts
// (or uses opts.Facts), runs the --active measurement if asked, evaluates
// every check and folds the verdict. A failing check is not an error: the
// caller decides the exit code (see Report.Err). Errors are
// exitcode.BadInput (bad target, unknown --ignore ID, --pid that does not
// exist) or exitcode.Environment (cannot read procfs, measurement child
// failed).
func Run(ctx context.Context, opts Options) (*Report, error) {
	t := opts.Target
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	opts.Ignore = cleanIgnore(opts.Ignore)
	if err := validateIgnore(opts.Ignore); err != nil {
		return nil, err
	}
	f := opts.Facts
	if f != nil && t.Role != facts.Loadgen {
		// a recorded host's listeners carry their owners' limits
		f.JudgePortOwner(t.ListenerPorts())
	}
	if f == nil {
		svc, fromProfile, alt := opts.Service, false, []string(nil)
		if svc == "" && opts.PID == 0 {
			svc, fromProfile, alt = t.Service, t.Service != "", t.AltServices
		}
		var err error
		f, err = facts.Gather(ctx, facts.GatherOptions{Capacity: checks.OwnerCapacity, Root: opts.Root, PID: opts.PID, Service: svc, ServiceFromProfile: fromProfile, AltServices: alt, Self: t.InProcess, SourceIPs: t.SourceIPs,
			Role: t.Role, Ports: t.ListenerPorts(), IoTDBHome: opts.IoTDBHome, Record: opts.Record})
		if err != nil {
			return nil, err
		}
	}
	if opts.Active {
		k := opts.ActiveOptions.Sockets
		if k <= 0 {
			k = facts.DefaultActiveSockets(t.Sockets, f.Target.NofileSoft)
			slog.Debug("preflight --active: default K", "sockets", k, "target_sockets", t.Sockets, "nofile_soft", facts.FmtNofile(f.Target.NofileSoft))
			// Never let the measurement itself take more than half of
			// MemAvailable (at the estimated cost per socket).
			if memCap := int(float64(f.MemAvailable)/2/checks.EstimatedBytesPerSocket) &^ 1; f.MemAvailable > 0 && k > memCap {
				f.Notes = append(f.Notes, fmt.Sprintf("--active opens %s, not %d: more would take over half of MemAvailable", plural.N(memCap, "socket"), k))
				k = memCap
			}
		} else if k%2 == 1 {
			f.Notes = append(f.Notes, fmt.Sprintf("--active-sockets %d rounded down to %d: sockets come in pairs, the two ends of a loopback connection", k, k-1))
			k--
		}
		if k < 2 {
			return nil, exitcode.BadInputf("--active: the target process's soft nofile %s leaves room for %s: want at least 2 (one loopback connection); pass --active-sockets or a process with a higher limit", facts.FmtNofile(f.Target.NofileSoft), plural.N(k, "socket"))
		}
		m, err := facts.MeasureActive(ctx, opts.ActiveOptions, k, f.Target)
		if err != nil {
			return nil, err
		}
		m.CostMeasured, m.CostNote = m.CostSignificance()
		slog.Debug("preflight --active: cost per socket", "measured", m.CostMeasured, "note", m.CostNote)
		f.Measured = m
	}
	results := checks.Evaluate(f, t)
	proofs := remedies.ProveRemedies(f, t, results)
	applyIgnore(results, opts.Ignore)
	for _, c := range results {
		slog.Debug("preflight: check", "id", c.ID, "status", c.Status, "ignored", c.Ignored, "summary", c.Summary)
	}
	r := &Report{
		Verdict:        verdict.Worst(results),
		Target:         t,
		Host:           HostSummary{Kernel: f.Kernel, CPUs: f.CPUs, MemTotal: f.MemTotal, MemAvailable: f.MemAvailable, PageSize: f.PageSize},
		TargetProcess:  f.Target,
		Listeners:      checks.TargetListeners(f, t),
		ListenersKnown: f.ListenersKnown,
		IoTDB:          f.IoTDB,
		TargetJVM:      f.TargetJVM,
		Checks:         results,
		Capacity:       checks.CapacityOf(f, t),
		Ignored:        opts.Ignore,
		Notes:          f.Notes,
		Remedies:       proofs,
	}
	return r, nil
}

// Err turns the verdict into the exit error: nil for pass (and warn unless
// strict), exitcode.Failed naming the failing checks otherwise.
func (r *Report) Err(strict bool) error {
	var bad []string
	for _, c := range r.Checks {
		if c.Status == verdict.Fail || (strict && c.Status == verdict.Warn) {
			bad = append(bad, c.ID)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	what := "failed"
	if strict {
		what = "failed or warned (--strict)"
	}
	return exitcode.Failedf("preflight: %s %s: %s", plural.N(len(bad), "check"), what, strings.Join(bad, ", "))
}

// validate rejects option values that cannot mean anything (a negative
// PID, time bound or socket count) instead of silently using a default.
// Errors are exitcode.BadInput naming the flag, the value and the fix.
func (o Options) validate() error {
	if err := facts.CheckRecordedRoot(o.Root); err != nil {
		return err
	}
	if o.Record != "" {
		if err := facts.CheckRecordDir(o.Record); err != nil {
			return err
		}
	}
	if o.PID < 0 {
		return exitcode.BadInputf("--pid %d: want the PID (> 0) of the running process that will hold the sockets, e.g. --pid $(pidof mosquitto)", o.PID)
	}
	if o.ActiveOptions.Timeout < 0 {
		return exitcode.BadInputf("--active-timeout %s: want a positive time bound, e.g. --active-timeout 60s", o.ActiveOptions.Timeout)
	}
	if k := o.ActiveOptions.Sockets; k < 0 || k == 1 {
		return exitcode.BadInputf("--active-sockets %d: want at least 2 sockets (one loopback connection is 2 sockets; %d or more to measure kernel memory per socket), or leave it out for the default", k, facts.MinMeasuredSockets)
	}
	return nil
}

// cleanIgnore trims the --ignore items and drops empty ones, so
// "fd.soft,," or "fd.soft, fd.hard" mean what they say.
func cleanIgnore(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id = strings.TrimSpace(id); id != "" {
			out = append(out, id)
		}
	}
	return out
}

func validateIgnore(ids []string) error {
	valid := checks.CheckIDs()
	for _, id := range ids {
		found := false
		for _, v := range valid {
			if v == id {
				found = true
			}
		}
		if !found {
			return exitcode.BadInputf("--ignore %q: no such check; valid IDs: %s", id, strings.Join(valid, ", "))
		}
	}
	return nil
}

// applyIgnore turns failures of ignored checks into warnings marked
// Ignored (JSON "ignored": true) with an "[ignored failure]" prefix.
func applyIgnore(checks []verdict.Check, ids []string) {
	for i := range checks {
		for _, id := range ids {
			if checks[i].ID == id && checks[i].Status == verdict.Fail {
				checks[i].Status = verdict.Warn
				checks[i].Ignored = true
				checks[i].Summary = "[ignored failure] " + checks[i].Summary
			}
		}
	}
}
