package checks

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/shellquote"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/profiles"
)

// File descriptor checks: every socket is one fd of the process that holds
// it, limited by its RLIMIT_NOFILE (soft, then hard), by fs.nr_open (the
// highest hard limit any process may get) and by fs.file-max (all open
// files of the host).

func init() {
	register(CheckDef{ID: "fd.soft", Doc: "soft RLIMIT_NOFILE of the target process >= sockets + headroom", Func: checkFDSoft})
	register(CheckDef{ID: "fd.hard", Doc: "hard RLIMIT_NOFILE of the target process >= sockets + headroom", Func: checkFDHard})
	register(CheckDef{ID: "fd.raise", Doc: "the hard limit can be raised where it is too low (CAP_SYS_RESOURCE or systemd)", Func: checkFDRaise})
	register(CheckDef{ID: "fd.nr_open", Doc: "fs.nr_open >= sockets + headroom (ceiling of any hard nofile)", Func: checkFDNrOpen})
	register(CheckDef{ID: "fd.file_max", Doc: "fs.file-max minus allocated files (fs.file-nr) >= sockets", Func: checkFDFileMax})
}

// DescribeTarget names the process that will hold the sockets, as the
// fd checks' observed lines show it.
func DescribeTarget(p facts.ProcessFacts) string {
	switch {
	case p.Self && p.Unit != "":
		return "hostprep itself, run by " + p.Unit
	case p.Self:
		return "hostprep itself"
	case p.Apart != nil:
		return fmt.Sprintf("pid %d, not %s's", p.PID, p.Apart.Unit)
	case p.Unit != "" && p.UnitMissing:
		return p.Unit + " (not installed)"
	case p.Unit != "" && p.ManagedBy != "systemd":
		return p.Unit + " started without systemd"
	case p.Unit != "":
		return p.Unit
	case p.PID > 0:
		return fmt.Sprintf("pid %d", p.PID)
	}
	return "a process started from a login shell"
}

// limitsDSummary says what limits.conf and limits.d give: a login's
// values with their file:line (Facts.Login), else a host file's domains.
func limitsDSummary(f *facts.Facts) string {
	if l := f.Login; l != nil && (l.Soft != nil || l.Hard != nil) {
		return "a login of " + l.Describe()
	}
	if len(f.LimitsD) == 0 {
		return ""
	}
	doms := make([]string, 0, len(f.LimitsD))
	for d := range f.LimitsD {
		doms = append(doms, d)
	}
	sort.Strings(doms)
	var parts []string
	for _, d := range doms {
		l := f.LimitsD[d]
		parts = append(parts, fmt.Sprintf("%q soft %s hard %s", d, facts.FmtNofile(l.Soft), facts.FmtNofile(l.Hard)))
	}
	return strings.Join(parts, ", ")
}

// systemdRemedy points at hostprep tune, which owns the unit's drop-in
// (/etc/systemd/system/UNIT.d/60-hostprep.conf), with a number: never
// infinity, which systemd clamps to its own hard limit. A profile whose
// systemd.services has the unit with a LimitNOFILE of need or more is
// applied as it is; else the profile's systemd section (which has no
// --set key) gets the limit first, never below what it has.
func systemdRemedy(f *facts.Facts, t facts.Target, unit string, need uint64) string {
	restart := "systemctl daemon-reload && systemctl restart " + shellquote.Quote(unit)
	pl := t.ProfileUnitNofile
	if t.Profile != "" && ProfileUnit(t, unit) && pl.Soft >= need && pl.Hard >= need {
		return fmt.Sprintf("%s, whose LimitNOFILE for %s is %d:%d (hostprep writes it into its own drop-in /etc/systemd/system/%s.d/60-hostprep.conf), then %s; if it is applied already, %s names the file that overrides it",
			tuneApply(t, HardSets(f, t, pl.Hard)...), unit, pl.Soft, pl.Hard, unit, restart, verifyBoot)
	}
	soft, hard := max(need, pl.Soft), max(need, pl.Hard)
	return fmt.Sprintf("give the profile systemd.limit_nofile {soft: %d, hard: %d} (a number <= fs.nr_open, not infinity: systemd clamps infinity to its own hard limit) and %s in systemd.services, then %s and %s",
		soft, hard, unit, tuneApply(t, HardSets(f, t, hard)...), restart)
}

// apartRemedy is fd.soft's and fd.hard's remedy for a process that holds
// the target's port outside the unit that was named (ProcessFacts.Apart):
// stop it and start the service through its unit, which gives the unit's
// LimitNOFILE; where that is short too, raise it first.
func apartRemedy(f *facts.Facts, t facts.Target, need uint64) string {
	p := f.Target
	a := p.Apart
	r := fmt.Sprintf("stop pid %d (%s), which holds port %d outside %s, then start the service through its unit: `systemctl restart %s`",
		p.PID, cmp.Or(a.Process, "its comm not read"), a.Port, a.Unit, shellquote.Quote(strings.TrimSuffix(a.Unit, ".service")))
	if a.Nofile.Soft >= need && a.Nofile.Hard >= need {
		return r + fmt.Sprintf(", which gives it nofile %s (%s)", facts.FmtLimit(a.Nofile), a.From)
	}
	return r + fmt.Sprintf("; the unit's own nofile %s (%s) is short too: %s", facts.FmtLimit(a.Nofile), a.From, systemdRemedy(f, t, a.Unit, need))
}

// unseenServer says whether the target is a broker or iotdb whose process
// was not named or found (no --pid, --service, profile unit, or owner of
// its listener): the limits at hand are only what a login shell here would
// get, which says nothing either way about the service's own.
func UnseenServer(p facts.ProcessFacts, t facts.Target) bool {
	return p.Assumed && t.Role != facts.Loadgen
}

// unitWithoutManager says whether the target is a unit on a host where
// systemd is not running, and no process of it was read: its limits are
// what a login shell here passes on. That fails fairly when it falls
// short, but is no promise when it suffices: whatever starts the program
// may pass on less.
func unitWithoutManager(f *facts.Facts) bool {
	p := f.Target
	return p.Unit != "" && !p.UnitMissing && !f.Systemd.Running && p.PID == 0
}

// shellStandsIn says whether the limits at hand are a login shell's
// standing in for a unit's: a unit on a host where systemd is not
// running (unitWithoutManager), or a profile's unit that is not
// installed (UnitMissing, which fails fd.soft). Too little there fails
// fairly (nothing started here gets more without raising it), but
// enough is no promise: fd.hard and fd.raise warn instead of passing
// and the capacity marks it assumed.
func ShellStandsIn(f *facts.Facts) bool {
	return unitWithoutManager(f) || f.Target.UnitMissing && f.Target.PID == 0
}

const nameTheTarget = "name the process that will hold the sockets: hostprep preflight --service UNIT or --pid PID, or the unit in the profile's systemd.services (what ready reads); or start it so its listener is found (hostprep preflight --port PORT names another port)"

// ownerHidden returns the target's listener ports that something listens
// on (sock_diag, or /proc/net/tcp and tcp6) while its owning process was
// not found: run without root, the owner's /proc/PID/fd cannot be read
// (procfs lets only the owner and CAP_SYS_PTRACE/root list another user's
// fds), so a listener shows "owner unknown".
func ownerHidden(f *facts.Facts, t facts.Target) []int {
	var out []int
	for _, p := range t.ListenerPorts() {
		if slices.Contains(f.ListeningPorts, p) {
			out = append(out, p)
		}
	}
	return out
}

// unseenWhy is why an unseen server's limits are not known: the
// profile's unit is not installed, systemd is not running, none listens
// on its ports, or one does whose owner this user cannot see; and the fix.
func unseenWhy(f *facts.Facts, t facts.Target) (why, fix string) {
	if p := f.Target; p.UnitMissing {
		return fmt.Sprintf("%s is not installed here (no unit file), so there is no service whose limits could be read", p.Unit),
			fmt.Sprintf("install the service first, or name the process that will hold the sockets: hostprep preflight --service UNIT (an installed unit) or --pid PID; drop-ins for %s do nothing without its unit file", p.Unit)
	}
	if p := f.Target; p.Unit != "" && !p.UnitMissing && !f.Systemd.Running {
		prog := strings.TrimSuffix(p.Unit, ".service")
		return fmt.Sprintf("systemd is not running here, so %s's unit sets nothing and whatever starts %s passes on its own limits", p.Unit, prog),
			fmt.Sprintf("name the running process: hostprep preflight --pid PID (e.g. --pid $(pidof %s)), or --port PORT for its listener", prog)
	}
	if ports := ownerHidden(f, t); len(ports) > 0 {
		return fmt.Sprintf("a process listens on port %s but its owner is not visible to this user (another user's /proc/PID/fd needs root)", facts.PortList(ports)),
			fmt.Sprintf("run hostprep preflight as root (sudo) so the owner of port %s is found, or name it: hostprep preflight --pid PID (e.g. --pid $(pidof mosquitto)) or --service UNIT", facts.PortList(ports))
	}
	return fmt.Sprintf("no process named for the %s and none listens on port %s", t.Role, facts.PortList(t.ListenerPorts())), nameTheTarget
}

// unnamedServer is the finding of fd.soft and fd.hard for an unseen server
// (unseenServer): they neither pass nor fail on a login shell's limits but
// warn, saying what a login shell would get and that the service's own
// limits are not known.
func unnamedServer(f *facts.Facts, t facts.Target, which string, n, need uint64, obs, exp string) verdict.Check {
	cmp := fmt.Sprintf("< %s", plural.N(need, "file descriptor"))
	if n >= need {
		cmp = fmt.Sprintf(">= %s", plural.N(need, "file descriptor"))
	}
	why, fix := unseenWhy(f, t)
	return warn(fmt.Sprintf("%s: a process started from a login shell here would get %s nofile %s %s for %s, but the service's own limits are not known",
		why, which, facts.FmtNofile(n), cmp, plural.N(t.Sockets, "socket")), obs, exp, fix)
}

// underSystemd says whether systemd (running as PID 1) sets the target's
// limits from its unit.
func UnderSystemd(f *facts.Facts) bool { return f.Target.ManagedBy == "systemd" && f.Systemd.Running }

// hostCeiling is the highest hard nofile any process on this host can
// have when none can raise one: CAP_SYS_RESOURCE is not in the capability
// bounding set (a container, a sandbox), so not pam_limits, not systemd,
// not root. Every process descends from PID 1 and keeps the hard limit it
// inherits, so the ceiling is the higher of the target's own and PID 1's.
// blocked is false when a hard limit can still be raised on this host;
// from says where the numbers come from.
func HostCeiling(f *facts.Facts) (ceiling uint64, from string, blocked bool) {
	p := f.Target
	ceiling, from = p.NofileHard, fmt.Sprintf("hard nofile %d here (%s)", p.NofileHard, p.Source)
	if h := f.HereNofileHard; h > ceiling {
		ceiling = h
		from += fmt.Sprintf(", hard nofile %d where hostprep was started (/proc/self/limits)", h)
	}
	if f.Pid1Nofile != nil && f.Pid1Nofile.Hard > ceiling {
		ceiling = f.Pid1Nofile.Hard
		from += fmt.Sprintf(", hard nofile %d for PID 1 (/proc/1/limits)", f.Pid1Nofile.Hard)
	}
	return ceiling, from, p.NoRaiseBound
}

// canRaise says whether the target's hard nofile can be raised where it
// runs now: systemd sets a unit's, a process with CAP_SYS_RESOURCE sets
// its own, and root can set another's (prlimit) where the bounding set
// has the capability. false means the hard limit is the target's ceiling
// until it is started again from elsewhere (fd.raise says where).
func CanRaise(f *facts.Facts) bool {
	return UnderSystemd(f) || f.Target.CapSysResource
}

// splitRemedy is the remedy when no process on this host can get a hard
// nofile of need (hostCeiling below need).
func splitRemedy(t facts.Target, need, ceiling uint64) string {
	return fmt.Sprintf("run where a hard limit >= %d can be set (a host or container with CAP_SYS_RESOURCE in its bounding set, docker run --ulimit nofile=%d:%d), or split the load over %d processes/hosts of at most %d file descriptors each",
		need, need, need, CeilDiv(int64(t.Sockets), max(UsableFDs(ceiling), 1)), ceiling)
}

// fdNeed is the nofile the target needs (file descriptors): one per
// socket, fdHeadroom, and the files it holds now (ProcessFacts.HeldFDs);
// and the expectation spelled out.
func FdNeed(p facts.ProcessFacts, t facts.Target) (uint64, string) {
	need := uint64(t.Sockets) + fdHeadroom(t.Sockets) + p.HeldFDs
	exp := fmt.Sprintf(">= %s (%s + %d headroom", plural.N(need, "file descriptor"), plural.N(t.Sockets, "socket"), fdHeadroom(t.Sockets))
	if p.HeldFDs > 0 {
		exp += fmt.Sprintf(" + %s pid %d holds now", plural.N(p.HeldFDs, "other file"), p.PID)
	}
	return need, exp + ")"
}

func checkFDSoft(f *facts.Facts, t facts.Target) verdict.Check {
	p := f.Target
	need, exp := FdNeed(p, t)
	obs := fmt.Sprintf("soft nofile %s for %s (%s)", facts.FmtNofile(p.NofileSoft), DescribeTarget(p), p.Source)
	if p.UnitMissing {
		return fail(fmt.Sprintf("%s is not installed here (no unit file): there is no service whose limits could carry %s", p.Unit, plural.N(t.Sockets, "socket")), obs, exp,
			fmt.Sprintf("install the service first, or say which process will hold the sockets: hostprep preflight --service UNIT (an installed unit) or --pid PID (the running process), or an installed unit in the profile's systemd.services; drop-ins for %s do nothing without its unit file", p.Unit))
	}
	if c, judged := fdCovered(f, t, "soft", p.NofileSoft, need, obs, exp); judged {
		return c
	}
	if a := p.Apart; a != nil {
		return fail(fmt.Sprintf("the process on port %d (pid %d, not %s's: the unit %s) has soft nofile %s < %s: it stops accepting with EMFILE (\"too many open files\") near %s",
			a.Port, p.PID, a.Unit, a.State(), facts.FmtNofile(p.NofileSoft), plural.N(need, "file descriptor"), plural.N(max(int64(p.NofileSoft)-int64(p.HeldFDs), 0), "socket")),
			obs, exp, apartRemedy(f, t, need))
	}
	left := int64(p.NofileSoft) - int64(p.HeldFDs)
	summary := fmt.Sprintf("target process soft nofile %d < %s: it stops accepting/connecting with EMFILE (\"too many open files\") near %d", p.NofileSoft, plural.N(t.Sockets, "socket"), p.NofileSoft)
	if p.HeldFDs > 0 {
		summary = fmt.Sprintf("target process soft nofile %d, less the %s it holds now, leaves %d for %s: it stops accepting/connecting with EMFILE (\"too many open files\") near %s", p.NofileSoft, plural.N(p.HeldFDs, "other file"), max(left, 0), plural.N(t.Sockets, "socket"), plural.N(max(left, 0), "socket"))
	}
	if p.Unit != "" && !UnderSystemd(f) {
		summary += fmt.Sprintf("; systemd is not running here, so %s's LimitNOFILE cannot apply: the limit is what the starting shell passes on", p.Unit)
	}
	if UnderSystemd(f) {
		unit := p.Unit
		if unit == "" {
			unit = "the unit"
		}
		summary = fmt.Sprintf("target process soft nofile %d < %s: %s runs under systemd, which sets its limit from LimitNOFILE", p.NofileSoft, plural.N(t.Sockets, "socket"), unit)
		if p.Requested != "" {
			summary += fmt.Sprintf(" (it asks for LimitNOFILE=%s; setrlimit() refuses that and systemd sets the closest it can, %s: see observed)", p.Requested, facts.FmtLimit(profiles.Limit{Soft: p.NofileSoft, Hard: p.NofileHard}))
		} else if d := f.Systemd.DefaultLimitNOFILE; d != nil && d.Soft == p.NofileSoft && d.Hard == p.NofileHard {
			summary += fmt.Sprintf(" (none set: systemd's DefaultLimitNOFILE %s applies)", facts.FmtLimit(*d))
		} else {
			summary += fmt.Sprintf(" (%s)", facts.FmtLimit(profiles.Limit{Soft: p.NofileSoft, Hard: p.NofileHard}))
		}
		if s := limitsDSummary(f); s != "" {
			summary += fmt.Sprintf("; limits.conf and limits.d give %s, but limits.conf does not apply to systemd services (pam_limits only runs for login sessions)", s)
		} else {
			summary += "; limits.conf does not apply to systemd services"
		}
		return fail(summary, obs, exp, systemdRemedy(f, t, unit, need))
	}
	return fail(summary, obs, exp, softRemedy(f, t, need))
}

// softRemedy is fd.soft's remedy for a target started from a shell or
// named by --pid. Above the hard limit it never suggests more than fd.hard
// and fd.raise allow: where the hard limit cannot be raised (canRaise),
// the soft limit goes at most up to it, and more is fd.raise's remedy.
func softRemedy(f *facts.Facts, t facts.Target, need uint64) string {
	p := f.Target
	live := func(soft, hard uint64) string {
		if p.PID > 0 && hard > p.NofileHard && p.NoRaiseBound {
			// prlimit raising another process's hard limit needs the
			// caller's CAP_SYS_RESOURCE (do_prlimit), which nothing here has.
			return fmt.Sprintf("have pid %d raise its own limit to %d:%d (it has CAP_SYS_RESOURCE; prlimit from here cannot: CAP_SYS_RESOURCE is not in this host's bounding set)", p.PID, soft, hard)
		}
		if ts := p.Tasks; p.PID > 0 && p.NoRaiseBound && ts.UID != "" && ts.GID != "" && !(ts.UID == "0" && ts.GID == "0") {
			// prlimit on another process needs CAP_SYS_RESOURCE, or the
			// caller's uid and gid equal to the target's real, effective
			// and saved ones (check_prlimit_permission); nothing here has
			// the capability, so run it with the process's own IDs.
			return fmt.Sprintf("raise it live with the process's own user and group (%s, gid %s; from root prlimit fails with EPERM: CAP_SYS_RESOURCE is not in this host's bounding set): setpriv --reuid=%s --regid=%s --clear-groups prlimit --pid %d --nofile=%d:%d", ts.User, ts.GID, ts.UID, ts.GID, p.PID, soft, hard)
		}
		if p.PID > 0 {
			return fmt.Sprintf("raise it live: prlimit --pid %d --nofile=%d:%d", p.PID, soft, hard)
		}
		return fmt.Sprintf("`ulimit -n %d` in the shell that starts the process", soft)
	}
	if ceiling, _, blocked := HostCeiling(f); blocked && need > ceiling && p.CapSysResource && !UnderSystemd(f) {
		// No login or restart here gets it (the bounding set); only the
		// process itself can, with its own CAP_SYS_RESOURCE.
		return live(need, need)
	}
	if need <= p.NofileHard || CanRaise(f) {
		hard := max(need, p.NofileHard)
		return fmt.Sprintf("%s (it writes its own /etc/security/limits.d/60-hostprep.conf, for * and root) and start the process from a new login, or %s",
			tuneApply(t, NofileSets(f, t, need, hard)...), live(need, hard))
	}
	if p.NofileSoft < p.NofileHard {
		return fmt.Sprintf("up to the hard limit %d (the most this process can get; more is fd.hard and fd.raise): %s gives about %s", p.NofileHard, live(p.NofileHard, p.NofileHard), plural.N(UsableFDs(p.NofileHard), "socket"))
	}
	return fmt.Sprintf("the soft limit is already at the hard limit %d, the most this process can get: more needs a higher hard limit (fd.hard and fd.raise say how)", p.NofileHard)
}

func checkFDHard(f *facts.Facts, t facts.Target) verdict.Check {
	p := f.Target
	need, exp := FdNeed(p, t)
	obs := fmt.Sprintf("hard nofile %s for %s (%s)", facts.FmtNofile(p.NofileHard), DescribeTarget(p), p.Source)
	if c, judged := fdCovered(f, t, "hard", p.NofileHard, need, obs, exp); judged {
		return c
	}
	summary := fmt.Sprintf("target process hard nofile %d < %s: the soft limit cannot go above it", p.NofileHard, plural.N(t.Sockets, "socket"))
	if p.Requested != "" {
		summary += fmt.Sprintf(" (the unit asks for LimitNOFILE=%s, which systemd clamps: see observed)", p.Requested)
	}
	if a := p.Apart; a != nil {
		return fail(fmt.Sprintf("the process on port %d (pid %d, not %s's: the unit %s) has hard nofile %s < %s: its soft limit cannot go above it",
			a.Port, p.PID, a.Unit, a.State(), facts.FmtNofile(p.NofileHard), plural.N(need, "file descriptor")), obs, exp, apartRemedy(f, t, need))
	}
	remedy := fmt.Sprintf("set the hard limit to %d where the process is started: %s for login sessions, prlimit, or docker --ulimit nofile=%d:%d", need, tuneApply(t, NofileSets(f, t, need, need)...), need, need)
	switch ceiling, _, blocked := HostCeiling(f); {
	case UnderSystemd(f):
		remedy = systemdRemedy(f, t, p.Unit, need)
	case p.CapSysResource && p.PID > 0 && blocked:
		// fd.raise passes: the process itself can raise it, though no
		// other process here can (prlimit from here fails with EPERM).
		remedy = fmt.Sprintf("the process has CAP_SYS_RESOURCE (fd.raise), so it can raise its own hard limit up to fs.nr_open: have pid %d set %d:%d itself (its own setting for it, or setrlimit); prlimit from here cannot: CAP_SYS_RESOURCE is not in this host's bounding set", p.PID, need, need)
	case p.CapSysResource && p.PID > 0:
		remedy = fmt.Sprintf("the process has CAP_SYS_RESOURCE (fd.raise): as root, prlimit --pid %d --nofile=%d:%d, or have it raise its own", p.PID, need, need)
	case blocked && ceiling < need:
		remedy = "no process on this host can get it (fd.raise: CAP_SYS_RESOURCE is not in the capability bounding set): " + splitRemedy(t, need, ceiling)
	case blocked && f.HereNofileHard >= need:
		remedy = fmt.Sprintf("no process can raise its own hard limit here (fd.raise), but the shell hostprep was started from has hard nofile %d: start the process again from it with the limit it needs, e.g. prlimit --nofile=%d:%d CMD", f.HereNofileHard, need, need)
	case blocked:
		remedy = "no process can raise its own hard limit here (fd.raise), but " + pid1Remedy(f, need, ceiling)
	}
	return fail(summary, obs, exp, remedy)
}

// fdCovered is fd.soft's or fd.hard's verdict (which is "soft" or
// "hard", n that limit in fds, need the fds the target needs) where no
// shortfall needs explaining: the process that will hold the sockets is
// not seen, or n covers need (a warning when the files it holds could
// not be counted). judged is false when n falls short of need.
func fdCovered(f *facts.Facts, t facts.Target, which string, n, need uint64, obs, exp string) (c verdict.Check, judged bool) {
	p := f.Target
	switch {
	case UnseenServer(p, t) || ShellStandsIn(f) && n >= need:
		return unnamedServer(f, t, which, n, need, obs, exp), true
	case n < need:
		return verdict.Check{}, false
	case p.HeldFDsUnseen != "":
		return warn(fmt.Sprintf("%s nofile %s covers %s if the process holds few other files, but those could not be counted (%s)", which, facts.FmtNofile(n), plural.N(t.Sockets, "socket"), p.HeldFDsUnseen),
			obs, exp, "run hostprep preflight as root, so the files the process holds (/proc/PID/fd) are counted"), true
	}
	return pass(fmt.Sprintf("%s nofile %s covers %s", which, facts.FmtNofile(n), plural.N(t.Sockets, "socket")), obs, exp), true
}

func checkFDRaise(f *facts.Facts, t facts.Target) verdict.Check {
	p := f.Target
	need, _ := FdNeed(p, t)
	if UnseenServer(p, t) || ShellStandsIn(f) && p.NofileHard >= need {
		return unseenRaise(f, t, need)
	}
	if p.NofileHard >= need {
		return pass("not needed: the hard limit already covers the target", fmt.Sprintf("hard nofile %s", facts.FmtNofile(p.NofileHard)), fmt.Sprintf(">= %d", need))
	}
	if a := p.Apart; a != nil && f.Systemd.Running {
		return pass(fmt.Sprintf("started through %s, the service gets its hard limit from systemd (PID 1, with every capability), from LimitNOFILE", a.Unit),
			fmt.Sprintf("pid %d outside %s, hard nofile %s", p.PID, a.Unit, facts.FmtNofile(p.NofileHard)), "LimitNOFILE in the unit")
	}
	if UnderSystemd(f) {
		return pass("systemd (PID 1, with every capability) sets the unit's hard limit from LimitNOFILE; the service itself needs no CAP_SYS_RESOURCE",
			fmt.Sprintf("unit %s, hard nofile %s", p.Unit, facts.FmtNofile(p.NofileHard)), "LimitNOFILE in the unit")
	}
	if p.CapSysResource {
		return pass(fmt.Sprintf("hard nofile %d can be raised: the process has CAP_SYS_RESOURCE (up to fs.nr_open)", p.NofileHard),
			"CapEff includes CAP_SYS_RESOURCE (bit 24)", "CAP_SYS_RESOURCE to raise a hard limit")
	}
	summary := fmt.Sprintf("hard nofile %d < %d and cannot be raised without CAP_SYS_RESOURCE: %s (about %s) is the real ceiling for this process, whatever a profile says",
		p.NofileHard, t.Sockets, plural.N(p.NofileHard, "file descriptor"), plural.N(max(UsableFDs(p.NofileHard), 0), "socket"))
	obs := fmt.Sprintf("CapEff lacks CAP_SYS_RESOURCE (bit 24); hard nofile %d (%s)", p.NofileHard, p.Source)
	exp := fmt.Sprintf("hard nofile >= %d, or CAP_SYS_RESOURCE to raise it", need)
	ceiling, from, blocked := HostCeiling(f)
	switch {
	case blocked && ceiling < need:
		return fail(summary+fmt.Sprintf("; CAP_SYS_RESOURCE is not in the capability bounding set either, so no process on this host gets more than %d", ceiling),
			"CapBnd lacks CAP_SYS_RESOURCE (bit 24); "+from, exp, splitRemedy(t, need, ceiling))
	case blocked && f.HereNofileHard >= need:
		return fail(summary+fmt.Sprintf("; the shell hostprep was started from has hard nofile %d", f.HereNofileHard),
			"CapBnd lacks CAP_SYS_RESOURCE (bit 24); "+from, exp,
			fmt.Sprintf("start the process again from that shell with the limit it needs, e.g. prlimit --nofile=%d:%d CMD (no process can raise its own hard limit here)", need, need))
	case blocked:
		return fail(summary+fmt.Sprintf("; PID 1 has hard nofile %d", ceiling),
			"CapBnd lacks CAP_SYS_RESOURCE (bit 24); "+from, exp,
			pid1Remedy(f, need, ceiling)+" (no process can raise its own hard limit here)")
	}
	remedy := fmt.Sprintf("start it again from a context that sets a hard limit >= %d: %s (its own limits.d file) and a new login session, a systemd unit (systemd.limit_nofile in the profile), or docker run --ulimit nofile=%d:%d",
		need, tuneApply(t, NofileSets(f, t, need, need)...), need, need)
	if p.PID > 0 && !p.NoRaiseBound {
		remedy += fmt.Sprintf("; or, as root, raise it live: prlimit --pid %d --nofile=%d:%d", p.PID, need, need)
	}
	return fail(summary, obs, exp, remedy)
}

// pid1Remedy is fd.hard's and fd.raise's fix when no process can raise
// its own hard limit (CAP_SYS_RESOURCE is not in the bounding set) and
// the shell hostprep was started from has less than need, but PID 1 has
// ceiling >= need (fds): start the process from PID 1's side. When the
// process is hostprep itself (the embedded broker), that is how to start
// hostprep, not "a process".
func pid1Remedy(f *facts.Facts, need, ceiling uint64) string {
	if !f.Target.Self {
		return fmt.Sprintf("PID 1 has hard nofile %d: a process PID 1 starts itself can get up to that, if PID 1 passes it on", ceiling)
	}
	how := fmt.Sprintf("from whatever PID 1 starts with hard nofile %d (the container's --ulimit nofile=%d:%d, or a job of PID 1's own)", need, need, need)
	if f.Systemd.Running {
		how = fmt.Sprintf("as a unit of PID 1 (systemd): systemd-run --wait --pty -p LimitNOFILE=%d:%d hostprep ...", need, need)
	}
	return fmt.Sprintf("PID 1 has hard nofile %d, and hostprep itself holds the sockets (the embedded broker), started from a shell with hard nofile %d: run hostprep %s",
		ceiling, f.HereNofileHard, how)
}

func checkFDNrOpen(f *facts.Facts, t facts.Target) verdict.Check {
	nr, ok := f.SysInt("fs.nr_open")
	if !ok {
		return skip("fs.nr_open not readable")
	}
	// The target's need as fd.hard counts it (the files it holds too),
	// so that the two remedies agree.
	n, _ := FdNeed(f.Target, t)
	need := int64(n)
	obs := fmt.Sprintf("fs.nr_open %d", nr)
	exp := fmt.Sprintf(">= %d (no process can have a hard nofile above fs.nr_open)", need)
	if nr >= need {
		return pass(fmt.Sprintf("fs.nr_open %d lets a process's hard nofile go up to %s, enough for %s + %d headroom (%d)", nr, plural.N(nr, "file descriptor"), plural.N(t.Sockets, "socket"), fdHeadroom(t.Sockets), need), obs, exp)
	}
	return fail(fmt.Sprintf("fs.nr_open %d < %d: no process can hold %s, and setting LimitNOFILE/limits.d higher fails (systemd logs \"Operation not permitted\")", nr, need, plural.N(t.Sockets, "socket")),
		obs, exp, tuneApply(t, FdNrOpenSet(t, uint64(need)))+" (it sets it now and in its own /etc/sysctl.d/60-hostprep.conf, before any nofile limit)")
}

func checkFDFileMax(f *facts.Facts, t facts.Target) verdict.Check {
	fmax, ok := f.SysInt("fs.file-max")
	if !ok {
		return skip("fs.file-max not readable")
	}
	var alloc int64
	if nr, ok := f.SysFields("fs.file-nr"); ok && len(nr) >= 1 {
		alloc = nr[0]
	}
	free := fmax - alloc
	obs := fmt.Sprintf("fs.file-max %d, %d allocated now (fs.file-nr): %d free", fmax, alloc, free)
	exp := ">= " + plural.N(t.Sockets, "free file handle")
	if free >= int64(t.Sockets) {
		return pass(fmt.Sprintf("%s free for %s", plural.N(free, "file handle"), plural.N(t.Sockets, "socket")), obs, exp)
	}
	return fail(fmt.Sprintf("fs.file-max leaves %s < %s: the kernel refuses new files with ENFILE (\"VFS: file-max limit reached\")", plural.N(free, "free file handle"), plural.N(t.Sockets, "socket")),
		obs, exp, tuneApply(t, AtLeast(t, "fs.file-max", WantFileMax(f, t)))+" (now and at boot, in its own /etc/sysctl.d/60-hostprep.conf)")
}

// unseenRaise is fd.raise for an unseen server (unseenServer). A login
// shell's hard limit says nothing about the service's, so it warns, unless
// the host itself sets the ceiling: with CAP_SYS_RESOURCE outside the
// capability bounding set no process started here can raise a hard nofile,
// so none gets above the higher of the hard limit inherited here and PID
// 1's (every process descends from PID 1; a PID 1 that keeps the
// capability for its children is systemd, judged with --service). Below
// need, that ceiling fails for any process started on this host.
func unseenRaise(f *facts.Facts, t facts.Target, need uint64) verdict.Check {
	p := f.Target
	ceiling, from, blocked := HostCeiling(f)
	exp := fmt.Sprintf("hard nofile >= %d for the service, or CAP_SYS_RESOURCE to raise it", need)
	if blocked && ceiling < need {
		return fail(fmt.Sprintf("hard nofile %d here and at most %d for any process on this host < %d: CAP_SYS_RESOURCE is not in the capability bounding set (CapBnd), so no process started here can raise it; %s (about %s) is the real ceiling, whatever a profile says",
			p.NofileHard, ceiling, need, plural.N(ceiling, "file descriptor"), plural.N(max(UsableFDs(ceiling), 0), "socket")),
			"CapBnd lacks CAP_SYS_RESOURCE (bit 24); "+from, exp, splitRemedy(t, need, ceiling))
	}
	why := "CAP_SYS_RESOURCE is in the bounding set, so whatever starts the service may set a higher hard limit"
	switch {
	case p.NofileHard >= need:
		why = "a login shell here already has enough"
	case p.NoRaiseBound:
		why = fmt.Sprintf("CAP_SYS_RESOURCE is not in the bounding set, but the ceiling %d leaves room: a service started with a higher hard limit than this shell's may have enough", ceiling)
	}
	unseen, fix := unseenWhy(f, t)
	return warn(fmt.Sprintf("%s: whether its hard nofile needs raising, and can be, is not known (%s)", unseen, why),
		from, exp, fix)
}

// fdNrOpenSet is fd.nr_open's --set: at least need, the kernel default
// and the profile's hard limits.
func FdNrOpenSet(t facts.Target, need uint64) string {
	return AtLeast(t, "fs.nr_open", int64(max(need, profiles.DefaultNrOpen, t.ProfileNofile.Hard, t.ProfileUnitNofile.Hard)))
}
