package preflight

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
)

// Options are the inputs of Run.
type Options struct {
	// Target is the load to check (validated and defaulted by Run).
	Target Target
	// Root is the procfs/sysfs/etc root ("" = live host).
	Root string
	// PID is the process that will hold the sockets (--pid).
	PID int
	// Service is the systemd unit that will hold them (--service); when
	// empty, Target.Service (from a profile) is used.
	Service string
	// Active runs the loopback measurement (--active).
	Active        bool
	ActiveOptions ActiveOptions
	// Ignore lists check IDs whose failures become warnings (--ignore).
	// Empty items ("fd.soft,,") are dropped and spaces trimmed; an unknown
	// ID is an exitcode.BadInput error.
	Ignore []string
	// Facts, when set, are used instead of gathering (a recorded host).
	Facts *Facts
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

// CapacityLimit is one resource's ceiling in sockets.
type CapacityLimit struct {
	// Check is the check ID that covers the resource.
	Check string `json:"check"`
	// Resource names it ("soft nofile", "ephemeral ports", ...).
	Resource string `json:"resource"`
	// Sockets this resource allows.
	Sockets int64 `json:"sockets"`
	// Assumed is true when the number is not the target's own: the soft
	// nofile a login shell here gets, for a server whose process was not
	// named or found (its owner not visible without root).
	Assumed bool `json:"assumed,omitempty"`
}

// UnknownLimit is a ceiling that could not be read.
type UnknownLimit struct {
	// Check is the check ID that covers the resource.
	Check string `json:"check"`
	// Resource names what could not be read ("MemAvailable (/proc/meminfo)").
	Resource string `json:"resource"`
}

// Capacity is how many sockets the host (for this role and target
// process) can hold, and what limits it.
type Capacity struct {
	// Sockets is the smallest of Limits: the estimated number of sockets
	// the target process can hold on this host.
	Sockets int64 `json:"sockets"`
	// LimitedBy is the check ID of the smallest limit.
	LimitedBy string `json:"limited_by"`
	// Limits are the per-resource ceilings considered.
	Limits []CapacityLimit `json:"limits"`
	// Unknown are the ceilings that could not be read (meminfo, a sysctl,
	// the conntrack table): Sockets is the smallest of the known ones, and
	// may be lower still.
	Unknown []UnknownLimit `json:"unknown,omitempty"`
	// BytesPerSocket is the kernel memory per idle socket used, and
	// BytesPerSocketSource says whether it was measured or estimated (and
	// why a --active run did not count); BytesPerSocketMeasured is true
	// only for a significant --active measurement.
	BytesPerSocket         float64 `json:"bytes_per_socket"`
	BytesPerSocketSource   string  `json:"bytes_per_socket_source"`
	BytesPerSocketMeasured bool    `json:"bytes_per_socket_measured"`
	// Measured is the --active result, nil when not run.
	Measured *ActiveResult `json:"measured,omitempty"`
}

// Report is the outcome of a preflight run; text, JSON, JUnit and
// Prometheus outputs are all rendered from it. It is JSON-serialisable.
type Report struct {
	// Verdict is the worst status of Checks (skip counts as pass).
	Verdict verdict.Status `json:"verdict"`
	Target  Target         `json:"target"`
	Host    HostSummary    `json:"host"`
	// TargetProcess is whose limits the fd checks used.
	TargetProcess ProcessFacts `json:"target_process"`
	// Listeners are the target's listeners (on Target.ListenerPorts) with
	// their listen() backlog and accept queue; ListenersKnown is false
	// when sock_diag could not be read.
	Listeners      []Listener `json:"listeners"`
	ListenersKnown bool       `json:"listeners_known"`
	// IoTDB is the --iotdb-home configuration read, nil without it.
	IoTDB *IoTDBConfig `json:"iotdb,omitempty"`
	// TargetJVM are a running Java target's memory flags.
	TargetJVM *JVMFlags `json:"target_jvm,omitempty"`
	// Checks in report order (registry order; writers may sort).
	Checks   []verdict.Check `json:"checks"`
	Capacity Capacity        `json:"capacity"`
	// Ignored are the --ignore IDs.
	Ignored []string `json:"ignored,omitempty"`
	// Notes are facts that could not be gathered.
	Notes []string `json:"notes,omitempty"`
	// Remedies are the proofs of the remedies: the changes each stands
	// for and the checks that pass after them (see remedy.go).
	Remedies []Proof `json:"remedies,omitempty"`
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
	if f != nil && t.Role != Loadgen {
		// a recorded host's listeners carry their owners' limits
		f.judgePortOwner(t.ListenerPorts())
	}
	if f == nil {
		svc, fromProfile, alt := opts.Service, false, []string(nil)
		if svc == "" && opts.PID == 0 {
			svc, fromProfile, alt = t.Service, t.Service != "", t.AltServices
		}
		var err error
		f, err = Gather(ctx, GatherOptions{Root: opts.Root, PID: opts.PID, Service: svc, ServiceFromProfile: fromProfile, AltServices: alt, SourceIPs: t.SourceIPs,
			Role: t.Role, Ports: t.ListenerPorts(), IoTDBHome: opts.IoTDBHome, Record: opts.Record})
		if err != nil {
			return nil, err
		}
	}
	if opts.Active {
		k := opts.ActiveOptions.Sockets
		if k <= 0 {
			k = defaultActiveSockets(t.Sockets, f.Target.NofileSoft)
			slog.Debug("preflight --active: default K", "sockets", k, "target_sockets", t.Sockets, "nofile_soft", fmtNofile(f.Target.NofileSoft))
			// Never let the measurement itself take more than half of
			// MemAvailable (at the estimated cost per socket).
			if memCap := int(float64(f.MemAvailable)/2/EstimatedBytesPerSocket) &^ 1; f.MemAvailable > 0 && k > memCap {
				f.Notes = append(f.Notes, fmt.Sprintf("--active opens %s, not %d: more would take over half of MemAvailable", plural.N(memCap, "socket"), k))
				k = memCap
			}
		} else if k%2 == 1 {
			f.Notes = append(f.Notes, fmt.Sprintf("--active-sockets %d rounded down to %d: sockets come in pairs, the two ends of a loopback connection", k, k-1))
			k--
		}
		if k < 2 {
			return nil, exitcode.BadInputf("--active: the target process's soft nofile %s leaves room for %s: want at least 2 (one loopback connection); pass --active-sockets or a process with a higher limit", fmtNofile(f.Target.NofileSoft), plural.N(k, "socket"))
		}
		m, err := measureActive(ctx, opts.ActiveOptions, k, f.Target)
		if err != nil {
			return nil, err
		}
		m.CostMeasured, m.CostNote = m.CostSignificance()
		slog.Debug("preflight --active: cost per socket", "measured", m.CostMeasured, "note", m.CostNote)
		f.Measured = m
	}
	checks := Evaluate(f, t)
	proofs := proveRemedies(f, t, checks)
	applyIgnore(checks, opts.Ignore)
	for _, c := range checks {
		slog.Debug("preflight: check", "id", c.ID, "status", c.Status, "ignored", c.Ignored, "summary", c.Summary)
	}
	r := &Report{
		Verdict:        verdict.Worst(checks),
		Target:         t,
		Host:           HostSummary{Kernel: f.Kernel, CPUs: f.CPUs, MemTotal: f.MemTotal, MemAvailable: f.MemAvailable, PageSize: f.PageSize},
		TargetProcess:  f.Target,
		Listeners:      targetListeners(f, t),
		ListenersKnown: f.ListenersKnown,
		IoTDB:          f.IoTDB,
		TargetJVM:      f.TargetJVM,
		Checks:         checks,
		Capacity:       capacityOf(f, t),
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
	if err := checkRecordedRoot(o.Root); err != nil {
		return err
	}
	if o.Record != "" {
		if err := checkRecordDir(o.Record); err != nil {
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
		return exitcode.BadInputf("--active-sockets %d: want at least 2 sockets (one loopback connection is 2 sockets; %d or more to measure kernel memory per socket), or leave it out for the default", k, MinMeasuredSockets)
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
	valid := CheckIDs()
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

// softNofileLimit is the capacity the target's soft nofile leaves, less
// headroom and the files it holds now; marked Assumed when it is not the
// service's own but a login shell's. ok is false for an unlimited one.
func softNofileLimit(f *Facts, t Target) (CapacityLimit, bool) {
	s := f.Target.NofileSoft
	if s == Unlimited {
		return CapacityLimit{}, false
	}
	if unseenServer(f.Target, t) || shellStandsIn(f) {
		// not the service's own limit: say so, in the limit and the text
		why, _ := unseenWhy(f, t)
		return CapacityLimit{Check: "fd.soft", Assumed: true, Sockets: usableFDs(s),
			Resource: "soft nofile a login shell here gets, less headroom, assumed: " + why}, true
	}
	res := "soft nofile of the target process, less headroom"
	if h := f.Target.HeldFDs; h > 0 {
		res += fmt.Sprintf(" and the %s it holds now", plural.N(h, "other file"))
	}
	return CapacityLimit{Check: "fd.soft", Resource: res, Sockets: max(usableFDs(s)-int64(f.Target.HeldFDs), 0)}, true
}

// capacityOf is the smallest per-resource ceiling, in sockets: every
// ceiling a check judges (soft nofile, fs.nr_open, fs.file-max, ports,
// conntrack, memory), with those that could not be read named in Unknown
// rather than dropped.
func capacityOf(f *Facts, t Target) Capacity {
	var c Capacity
	add := func(check, res string, n int64) {
		c.Limits = append(c.Limits, CapacityLimit{Check: check, Resource: res, Sockets: max(n, 0)})
	}
	unknown := func(check, res string) {
		c.Unknown = append(c.Unknown, UnknownLimit{Check: check, Resource: res})
	}
	if l, ok := softNofileLimit(f, t); ok {
		c.Limits = append(c.Limits, l)
	}
	if u := f.Target.HeldFDsUnseen; u != "" && f.Target.PID > 0 {
		unknown("fd.soft", "the files the target holds ("+u+")")
	}
	if nr, ok := f.SysInt("fs.nr_open"); ok {
		add("fd.nr_open", "fs.nr_open (the highest nofile any process gets), less headroom", usableFDs(uint64(max(nr, 0))))
	} else {
		unknown("fd.nr_open", "fs.nr_open")
	}
	if fm, ok := f.SysInt("fs.file-max"); ok {
		var alloc int64
		if nr, ok := f.SysFields("fs.file-nr"); ok {
			alloc = nr[0]
		}
		add("fd.file_max", "free file handles (fs.file-max - fs.file-nr)", fm-alloc)
	} else {
		unknown("fd.file_max", "fs.file-max")
	}
	if ns := f.Target.netNSApart(); t.Role == Loadgen && ns != "" {
		unknown("ports.ephemeral", "the ephemeral ports of the target's network namespace ("+ns+")")
	} else if t.Role == Loadgen {
		if pc, ok := loadgenCapacity(f, t); ok {
			add("ports.ephemeral", "ephemeral ports: "+pc.formula, pc.total)
		} else {
			unknown("ports.ephemeral", "net.ipv4.ip_local_port_range")
		}
	}
	if ct, ns := f.Conntrack, f.Target.netNSApart(); ns != "" && ct.Loaded {
		unknown("conntrack", "the nf_conntrack table of the target's network namespace ("+ns+")")
	} else if ct.Loaded && conntrackUnknown(ct) != "" {
		unknown("conntrack", conntrackUnknown(ct))
	} else if ct.Loaded && conntrackTracking(ct) {
		// a full table (count >= max) allows no new connection
		add("conntrack", "free nf_conntrack entries", int64(ct.Max)-int64(min(ct.Count, ct.Max)))
	}
	if t.Role == IoTDB {
		rooms, unseen := threadRooms(f, t)
		for _, u := range unseen {
			unknown("iotdb.threads", u)
		}
		if len(rooms) > 0 {
			least := rooms[0]
			for _, r := range rooms {
				if r.room < least.room {
					least = r
				}
			}
			add("iotdb.threads", "threads the DataNode can still start, one per session ("+least.name+")", least.room)
		}
	}
	c.BytesPerSocket, c.BytesPerSocketSource = perSocketCost(f)
	c.BytesPerSocketMeasured, _ = measuredCost(f)
	lim, unk := memCapacity(f, c.BytesPerSocket)
	c.Limits, c.Unknown = append(c.Limits, lim...), append(c.Unknown, unk...)
	c.Sockets = math.MaxInt64
	for _, l := range c.Limits {
		if l.Sockets < c.Sockets {
			c.Sockets, c.LimitedBy = l.Sockets, l.Check
		}
	}
	if len(c.Limits) == 0 {
		c.Sockets = 0
	}
	c.Measured = f.Measured
	return c
}

// memCapacity is mem.available's ceiling for sockets of per bytes each:
// the smaller of MemAvailable and the room the target's memory cgroup
// leaves (memCeilingOf), naming the cgroup's limit file; and, as
// unknown, MemAvailable when not read and each cgroup file that could
// not be.
func memCapacity(f *Facts, per float64) (lim []CapacityLimit, unknown []UnknownLimit) {
	mc, ok, unseen := memCeilingOf(f)
	for _, u := range unseen {
		unknown = append(unknown, UnknownLimit{Check: "mem.available", Resource: "the target's memory cgroup: " + u})
	}
	if f.MemAvailable == 0 {
		unknown = append(unknown, UnknownLimit{Check: "mem.available", Resource: "MemAvailable (/proc/meminfo)"})
	}
	res := "MemAvailable / kernel bytes per socket"
	if mc.cgroup {
		res = "room in the target's memory cgroup (limit - usage, " + f.Target.Memory.From + ") / kernel bytes per socket"
	}
	if ok {
		lim = append(lim, CapacityLimit{Check: "mem.available", Resource: res, Sockets: max(int64(mc.bytes/per), 0)})
	}
	return lim, unknown
}
