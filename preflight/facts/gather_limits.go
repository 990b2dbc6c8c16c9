package facts

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hostprep/hostprep/internal/unitname"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/proclimits"
	"github.com/hostprep/hostprep/profiles"
	"github.com/prometheus/procfs"
)

// capSysResource is CAP_SYS_RESOURCE's bit in CapEff (linux/capability.h).
const CapSysResource = 24

// systemd records whether systemd is PID 1 and its DefaultLimitNOFILE
// (see systemdDefault).
func (g *Gatherer) systemd() {
	_, err := os.Stat(g.path("/run/systemd/system"))
	g.F.Systemd.Running = err == nil
	installed := g.F.Systemd.Running
	for _, p := range []string{"/etc/systemd/system.conf", "/lib/systemd/systemd", "/usr/lib/systemd/systemd"} {
		if _, err := os.Stat(g.path(p)); err == nil {
			installed = true
		}
	}
	if installed {
		g.systemdDefault()
	}
}

// parseSystemdLimit parses LimitNOFILE syntax ("N", "soft:hard",
// "infinity") by systemd's rules (tune/hostconf.ParseNofile).
func parseSystemdLimit(v string) (profiles.Limit, error) {
	soft, hard, ok := hostconf.ParseNofile(strings.TrimSpace(v))
	if !ok {
		return profiles.Limit{}, fmt.Errorf("want N, SOFT:HARD (soft <= hard) or infinity")
	}
	return profiles.Limit{Soft: soft, Hard: hard}, nil
}

// target finds the limits of the process that will hold the sockets.
func (g *Gatherer) target(ctx context.Context, pid int, service string, fromProfile bool) error {
	switch {
	case pid > 0:
		return g.targetPID(pid, fmt.Sprintf("/proc/%d/limits", pid))
	case service != "":
		return g.targetService(ctx, service, fromProfile)
	}
	return g.targetLogin()
}

// targetPID reads /proc/PID/limits and CapEff of /proc/PID/status.
func (g *Gatherer) targetPID(pid int, source string) error {
	soft, hard, err := readNofile(g.path(fmt.Sprintf("/proc/%d/limits", pid)))
	if os.IsNotExist(err) {
		return exitcode.BadInputf("--pid %d: no such process (/proc/%d does not exist); pass the PID of the running broker or loadgen", pid, pid)
	}
	if err != nil {
		return exitcode.Environmentf("--pid %d: cannot read its limits: %v (run as the same user or root)", pid, err)
	}
	t := &g.F.Target
	t.PID, t.NofileSoft, t.NofileHard, t.Source = pid, soft, hard, source
	if t.ManagedBy == "" {
		t.ManagedBy = "shell"
		if u := serviceOfPID(g.path(fmt.Sprintf("/proc/%d/cgroup", pid))); u != "" && g.F.Systemd.Running {
			t.ManagedBy, t.Unit = "systemd", u
		}
	}
	g.tasks(pid)
	g.memCgroup(pid)
	t.HeldFDs = g.heldFDs(pid)
	g.netNS(pid)
	t.CapSysResource, err = g.hasCap(pid, "CapEff", CapSysResource)
	if err != nil {
		g.note("capabilities of pid %d: %v", pid, err)
	}
	// Without CAP_SYS_RESOURCE in the bounding set here, not even root can
	// raise the process's hard limit (prlimit), nor start it again with
	// a higher one: see hostCeiling.
	bnd, err := g.hasCap(g.selfPID(), "CapBnd", CapSysResource)
	t.NoRaiseBound = err == nil && !bnd
	return nil
}

// targetSelf judges this hostprep run as the process that will hold the
// sockets (GatherOptions.Self: the embedded broker runs inside it): its
// RLIMIT_NOFILE and CapEff as /proc/self/limits and /proc/self/status
// show them, with the soft limit taken at the hard one, because hostprep
// raises its own soft limit to its hard limit (the Go runtime at start;
// the MQTT probe again before it opens a socket), which needs no
// privilege. Where a systemd unit runs hostprep (its cgroup), that unit
// sets those limits. No PID is kept: the process exits with the run, so
// a remedy naming it could not be run.
func (g *Gatherer) targetSelf() error {
	pid := g.selfPID()
	soft, hard, err := readNofile(g.path(fmt.Sprintf("/proc/%d/limits", pid)))
	if err != nil {
		return exitcode.Environmentf("reading hostprep's own limits (/proc/self/limits): %v", err)
	}
	t := &g.F.Target
	t.Self, t.ManagedBy = true, "shell"
	t.NofileSoft, t.NofileHard = max(soft, hard), hard
	t.Source = "/proc/self/limits; hostprep raises its soft limit to its hard limit itself"
	if u := serviceOfPID(g.path(fmt.Sprintf("/proc/%d/cgroup", pid))); u != "" && g.F.Systemd.Running {
		t.ManagedBy, t.Unit = "systemd", u
		t.Source = "/proc/self/limits, as " + u + " sets them; hostprep raises its soft limit to its hard limit itself"
	}
	t.CapSysResource, err = g.hasCap(pid, "CapEff", CapSysResource)
	if err != nil {
		g.note("own capabilities: %v", err)
	}
	bnd, err := g.hasCap(pid, "CapBnd", CapSysResource)
	t.NoRaiseBound = err == nil && !bnd
	return nil
}

// targetService reads a unit's LimitNOFILE: from systemctl (and the
// running MainPID's /proc limits) when systemd runs, else from the unit
// file and its drop-ins. When systemd is not running (no
// /run/systemd/system) no LimitNOFILE can apply: the limits are those a
// process started from a login shell gets, and the unit's own setting is
// kept as UnitLimitNOFILE. A template ("brk@.service"), which cannot be
// started, is exitcode.BadInput. A unit with no unit file is exitcode.BadInput
// when named by --service, and a UnitMissing finding when named by a
// profile (fromProfile).
func (g *Gatherer) targetService(ctx context.Context, unit string, fromProfile bool) error {
	unit = unitname.Service(unit)
	if at := strings.Index(unit, "@"); at >= 0 && strings.HasPrefix(unit[at+1:], ".") {
		which := "--service"
		if fromProfile {
			which = "the profile's systemd.services"
		}
		return exitcode.BadInputf("%s %s: a template unit, which cannot be started; name an instance of it: %s %sNAME%s", which, unit, which, unit[:at+1], unit[at+1:])
	}
	t := &g.F.Target
	t.ManagedBy, t.Unit = "systemd", unit
	t.CapSysResource = true // a unit without User= runs as root with the full bounding set
	if out, ok, err := g.systemctlShow(ctx, unit); err != nil {
		return err
	} else if ok {
		props := parseSystemctlShow(out)
		if props["LoadState"] == "not-found" {
			if fromProfile {
				return g.unitMissing(unit, "systemctl show: LoadState=not-found")
			}
			return exitcode.BadInputf("--service %s: no such unit (systemctl show: LoadState=not-found); pass the unit that runs the server (systemctl list-units --type=service lists them) or the PID of the running process (--pid)", unit)
		}
		t.UnitActive = props["ActiveState"]
		if pid, _ := strconv.Atoi(props["MainPID"]); pid > 0 {
			return g.targetPID(pid, fmt.Sprintf("running %s, /proc/%d/limits", unit, pid))
		}
		hard, err1 := parseSystemdLimit(props["LimitNOFILE"])
		soft, err2 := parseSystemdLimit(props["LimitNOFILESoft"])
		if err1 == nil && err2 == nil {
			g.F.applyUnitLimit(g.loadedOrFiles(unit, profiles.Limit{Soft: soft.Soft, Hard: hard.Soft}))
			if u := props["User"]; u != "" && u != "root" {
				t.CapSysResource = false
			}
			if u, err := g.unitFromFiles(unit); err == nil && u.missing == "" {
				levels, unseen := g.unitSlices(unit, u.files)
				if err := g.unitTasks(unit, u, props["TasksMax"], levels, unseen); err != nil {
					return err
				}
				g.unitMemory(unit, u, props, levels, unseen)
			}
			return nil
		}
	}
	// systemd not running, or a recorded root: read the files.
	u, err := g.unitFromFiles(unit)
	if err != nil {
		return err
	}
	running := "systemd is running"
	if !g.F.Systemd.Running {
		running = "systemd is not running here either (no /run/systemd/system)"
	}
	if u.missing != "" {
		if fromProfile {
			return g.unitMissing(unit, fmt.Sprintf("%s, and %s", u.missing, strings.TrimSuffix(running, " either (no /run/systemd/system)")))
		}
		return exitcode.BadInputf("--service %s: %s, and %s; pass the unit that runs the server instead (systemctl list-units --type=service lists them) or the PID of the running process (--pid)", unit, u.missing, running)
	}
	if !g.F.Systemd.Running {
		return g.unitWithoutSystemd(unit, u)
	}
	t.UnitFile = u.file
	t.CapSysResource = u.user == "" || u.user == "root"
	levels, unseen := g.unitSlices(unit, u.files)
	if err := g.unitTasks(unit, u, "", levels, unseen); err != nil {
		return err
	}
	g.unitMemory(unit, u, nil, levels, unseen)
	if u.found {
		g.F.applyUnitLimit(u.lim, "LimitNOFILE in "+u.from+" (unit not running)")
		return nil
	}
	g.F.applyUnitLimit(u.lim, fmt.Sprintf("no LimitNOFILE for %s (%s): systemd DefaultLimitNOFILE %s (%s)", unit, u.file, FmtLimit(u.lim), u.from))
	return nil
}

// loadedOrFiles picks, for a unit systemd has loaded but is not running,
// the LimitNOFILE to judge it on, and says where it comes from: what
// systemd has loaded (systemctl show) applies at the next start until
// `systemctl daemon-reload`, what its files say (hostconf) after it and
// at the next boot. When they differ the lower, as systemd resolves it,
// is returned, and the source names both.
func (g *Gatherer) loadedOrFiles(unit string, loaded profiles.Limit) (profiles.Limit, string) {
	src := "systemctl show " + unit + " (not running)"
	u, err := g.unitFromFiles(unit)
	if err != nil || u.missing != "" || u.lim == loaded {
		return loaded, src
	}
	nr, _ := g.F.SysInt("fs.nr_open")
	l, _ := ResolveNofile(loaded, nr, g.F.Pid1Nofile, g.F.Pid1NoRaise)
	d, _ := ResolveNofile(u.lim, nr, g.F.Pid1Nofile, g.F.Pid1NoRaise)
	setting := "LimitNOFILE"
	if !u.found {
		setting = "DefaultLimitNOFILE"
	}
	differ := fmt.Sprintf("systemd has LimitNOFILE=%s loaded but the files say %s=%s (%s): the next start uses the loaded one until `systemctl daemon-reload`, the next boot the files; judged on the lower",
		FmtLimit(loaded), setting, FmtLimit(u.lim), u.from)
	if d.Soft < l.Soft || (d.Soft == l.Soft && d.Hard < l.Hard) {
		return u.lim, fmt.Sprintf("%s in %s (unit not running); %s", setting, u.from, differ)
	}
	return loaded, src + "; " + differ
}

// unitWithoutSystemd reports a unit on a host where systemd is not
// running: nothing applies the unit, whoever starts the program passes on
// its own limits. It reports those, and the unit's setting beside them.
func (g *Gatherer) unitWithoutSystemd(unit string, u unitNofile) error {
	if err := g.targetLogin(); err != nil {
		return err
	}
	t := &g.F.Target
	unitSays := "it sets no LimitNOFILE anyway"
	if u.found {
		t.UnitLimitNOFILE = fmt.Sprintf("%s (%s)", FmtLimit(u.lim), u.from)
		unitSays = "its LimitNOFILE=" + t.UnitLimitNOFILE + " cannot apply"
	}
	t.Unit, t.UnitFile, t.Assumed = unit, u.file, false
	t.Source = fmt.Sprintf("systemd is not running here (no /run/systemd/system), so nothing starts %s from its unit (%s) and %s; a process started from a login shell gets: %s", unit, u.file, unitSays, t.Source)
	return nil
}

// unitMissing records that the profile's unit is not installed: the
// limits shown are those a login shell gets, and fd.soft fails.
func (g *Gatherer) unitMissing(unit, why string) error {
	if err := g.targetLogin(); err != nil {
		return err
	}
	t := &g.F.Target
	t.Unit, t.UnitMissing, t.Assumed = unit, true, false
	t.Source = fmt.Sprintf("named by the profile but not installed: %s; shown instead: what a process started from a login shell gets, %s", why, t.Source)
	return nil
}

// parseSystemctlShow parses `systemctl show -p A,B UNIT` output (A=value
// lines) into a map.
func parseSystemctlShow(out string) map[string]string {
	props := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			props[k] = v
		}
	}
	return props
}

// targetLogin estimates the limits a process started from a login shell
// gets: the limits.d entry for the current user if any (pam_limits), else
// what the session inherits — systemd's DefaultLimitNOFILE when systemd
// runs, else the limits of the process that started hostprep (its parent
// shell; never hostprep's own, which the Go runtime raised).
func (g *Gatherer) targetLogin() error {
	t := &g.F.Target
	t.ManagedBy, t.Assumed = "shell", true
	ppid := os.Getppid()
	if g.rep != nil {
		ppid = g.rep.ParentPID
	} else if g.rec != nil {
		g.rec.m.ParentPID = ppid
	}
	soft, hard, err := readNofile(g.path(fmt.Sprintf("/proc/%d/limits", ppid)))
	t.Source = fmt.Sprintf("inherited from the parent shell (/proc/%d/limits)", ppid)
	// hostprep's own hard limit is what it was started with (the Go
	// runtime raises only the soft one): below the parent's, hostprep was
	// exec'd from a shell that lowered it (`ulimit -Hn`, then exec), and
	// that shell, not the parent process, is the one a program started
	// the same way gets its limit from.
	if own := g.selfPID(); err == nil {
		if _, selfHard, serr := readNofile(g.path(fmt.Sprintf("/proc/%d/limits", own))); serr == nil && selfHard < hard {
			hard, soft = selfHard, min(soft, selfHard)
			t.Source = fmt.Sprintf("the shell that started hostprep: hard %s as hostprep itself got it (/proc/%d/limits), below its parent's (/proc/%d/limits)", FmtNofile(selfHard), own, ppid)
		}
	}
	parentRead, parentHard := err == nil, hard
	if err != nil {
		soft, hard = hostconf.SystemdDefaultNofile.Soft, hostconf.SystemdDefaultNofile.Hard
		t.Source = "assumed 1024:524288, the usual login-session default (no parent shell to read)"
	}
	if g.F.Systemd.Running && g.F.Systemd.DefaultLimitNOFILE != nil {
		soft, hard = g.F.Systemd.DefaultLimitNOFILE.Soft, g.F.Systemd.DefaultLimitNOFILE.Hard
		t.Source = fmt.Sprintf("systemd DefaultLimitNOFILE %s (login sessions inherit it)", FmtLimit(*g.F.Systemd.DefaultLimitNOFILE))
		if from := g.F.Systemd.DefaultLimitNOFILEFrom; from != "" {
			t.Source = fmt.Sprintf("systemd DefaultLimitNOFILE %s (%s; login sessions inherit it)", FmtLimit(*g.F.Systemd.DefaultLimitNOFILE), from)
		}
	}
	if l := g.F.Login; l != nil && (l.Soft != nil || l.Hard != nil) {
		if l.Soft != nil {
			soft = l.Soft.Value
		}
		if l.Hard != nil {
			hard = l.Hard.Value
		}
		t.Source = "pam_limits at login: " + l.Describe()
	}
	soft = min(soft, hard) // pam_limits lowers a soft above the hard (setup_limits)
	// Without CAP_SYS_RESOURCE in the bounding set (a container, this
	// sandbox) no process here can ever raise a hard limit: not pam_limits
	// at login, not systemd. A login gets at most the hard limit the
	// processes above it have, which the parent shell shows.
	bnd, err := g.hasCap(g.selfPID(), "CapBnd", CapSysResource)
	t.NoRaiseBound = err == nil && !bnd
	if t.NoRaiseBound && parentRead && hard > parentHard {
		// Said once, briefly: the fd checks repeat the source in each
		// observed line, and fd.raise explains the bounding set.
		t.Source += fmt.Sprintf("; capped at the hard %s inherited here (no CAP_SYS_RESOURCE in CapBnd)", FmtNofile(parentHard))
		hard = parentHard
		soft = min(soft, hard)
	}
	t.NofileSoft, t.NofileHard = soft, hard
	t.CapSysResource, err = g.hasCap(g.selfPID(), "CapEff", CapSysResource)
	if err != nil {
		g.note("own capabilities: %v", err)
	}
	return nil
}

// readNofile returns the "Max open files" soft and hard limits of a
// /proc/PID/limits file (proclimits.Nofile).
func readNofile(path string) (soft, hard uint64, err error) { return proclimits.Nofile(path) }

// hasCap reports whether bit is set in a capability set (CapEff, CapBnd)
// of /proc/PID/status under the root, parsed by prometheus/procfs.
func (g *Gatherer) hasCap(pid int, set string, bit uint) (bool, error) {
	status := g.path(fmt.Sprintf("/proc/%d/status", pid)) // named for --record
	fs, err := procfs.NewFS(g.path("/proc"))
	if err != nil {
		return false, err
	}
	p, err := fs.Proc(pid)
	if err != nil {
		return false, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return false, fmt.Errorf("%s: %w", status, err)
	}
	v := st.CapEff
	if set == "CapBnd" {
		v = st.CapBnd
	}
	return v&(1<<bit) != 0, nil
}

// hasCap reports whether bit is set in CapEff of a /proc/PID/status file
// on the live host (tests).
func HasCap(statusPath string, bit uint) (bool, error) {
	return HasCapIn(statusPath, "CapEff", bit)
}

// hasCapIn reports whether bit is set in the field line (CapEff, CapBnd)
// of a live /proc/PID/status file.
func HasCapIn(statusPath, field string, bit uint) (bool, error) {
	dir := filepath.Dir(statusPath)
	pid, err := strconv.Atoi(filepath.Base(dir))
	if filepath.Base(dir) == "self" {
		pid, err = os.Getpid(), nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: not /proc/PID/status", statusPath)
	}
	g := &Gatherer{Root: filepath.Dir(filepath.Dir(dir)), F: &Facts{}}
	return g.hasCap(pid, field, bit)
}

// selfPID is hostprep's own PID, or the recorded one when replaying.
func (g *Gatherer) selfPID() int {
	if g.rep != nil {
		return g.rep.SelfPID
	}
	if g.rec != nil {
		g.rec.m.SelfPID = os.Getpid()
	}
	return os.Getpid()
}

// serviceOfPID returns the systemd unit ("x.service") in a
// /proc/PID/cgroup file, "" if none.
func serviceOfPID(cgroupPath string) string {
	b, err := os.ReadFile(cgroupPath)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		for _, part := range strings.Split(line, "/") {
			if strings.HasSuffix(part, ".service") {
				return part
			}
		}
	}
	return ""
}

func FmtLimit(l profiles.Limit) string {
	return FmtNofile(l.Soft) + ":" + FmtNofile(l.Hard)
}

func FmtNofile(n uint64) string {
	if n == Unlimited {
		return "infinity"
	}
	return strconv.FormatUint(n, 10)
}

// systemctlShow asks systemd for a unit's limits and main PID when systemd
// runs the live host (or replays the recorded answer); ok is false when
// there is no answer to use and the unit files are read instead.
func (g *Gatherer) systemctlShow(ctx context.Context, unit string) (string, bool, error) {
	if g.rep != nil {
		out, ok := g.rep.SystemctlShow[unit]
		return out, ok && g.F.Systemd.Running, nil
	}
	if !g.F.Systemd.Running || !g.live() {
		return "", false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, "systemctl", "show", "-p", "MainPID,ActiveState,LimitNOFILE,LimitNOFILESoft,User,LoadState,TasksMax,MemoryMax,MemoryHigh,MemoryLimit,MemorySwapMax,MemoryMin,MemoryLow", unit).Output()
	if err != nil {
		return "", false, exitcode.Environmentf("--service %s: systemctl show failed: %v", unit, err)
	}
	if g.rec != nil {
		if g.rec.m.SystemctlShow == nil {
			g.rec.m.SystemctlShow = map[string]string{}
		}
		g.rec.m.SystemctlShow[unit] = string(b)
	}
	return string(b), true, nil
}

// user returns who runs hostprep and their groups (the pam_limits
// domains that apply), or the recorded ones.
func (g *Gatherer) user() (string, []string) {
	if g.rep != nil {
		return g.rep.User, g.rep.Groups
	}
	var groups []string
	name := "root"
	if u, err := user.Current(); err == nil {
		name = u.Username
		if ids, err := u.GroupIds(); err == nil {
			for _, id := range ids {
				if gr, err := user.LookupGroupId(id); err == nil {
					groups = append(groups, gr.Name)
				}
			}
		}
	}
	if g.rec != nil {
		g.rec.m.User, g.rec.m.Groups = name, groups
	}
	return name, groups
}

// heldFDs counts the file descriptors pid holds now that are not sockets
// (/proc/PID/fd links other than socket:[N]), live or from the
// recording; 0, with Target.HeldFDsUnseen saying why, when its fd
// directory cannot be read (another user's, without root).
func (g *Gatherer) heldFDs(pid int) uint64 {
	t := &g.F.Target
	if g.rep != nil { // the fd links are not copied
		t.HeldFDsUnseen = g.rep.HeldFDsUnseen
		return g.rep.HeldFDs
	}
	dir := g.path(fmt.Sprintf("/proc/%d/fd", pid))
	fds, err := os.ReadDir(dir)
	var n uint64
	if err != nil && (g.live() || !os.IsNotExist(err)) { // a hand-made tree may leave it out
		t.HeldFDsUnseen = fmt.Sprintf("/proc/%d/fd: %v", pid, unwrapPath(err))
	}
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && !strings.HasPrefix(link, "socket:") {
			n++
		}
	}
	if g.rec != nil {
		g.rec.m.HeldFDs, g.rec.m.HeldFDsUnseen = n, t.HeldFDsUnseen
	}
	return n
}

// netNSApart says why the network checks cannot judge the process in
// hostprep's namespace: the other namespace it is in (NetNS), or why
// that could not be told (NetNSUnseen); "" when it shares hostprep's.
func (p ProcessFacts) NetNSApart() string { return p.NetNS + p.NetNSUnseen }

// netNS fills the target's NetNS (its network namespace when it is not
// hostprep's) or NetNSUnseen (why that could not be read: another user's
// /proc/PID/ns/net needs root), live or from the recording.
func (g *Gatherer) netNS(pid int) {
	t := &g.F.Target
	switch {
	case g.rep != nil:
		t.NetNS, t.NetNSUnseen = g.rep.NetNS, g.rep.NetNSUnseen
	case g.live():
		theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		ours, err2 := os.Readlink("/proc/self/ns/net")
		switch {
		case err == nil && err2 == nil && theirs != ours:
			t.NetNS = fmt.Sprintf("%s, hostprep's %s", theirs, ours)
		case err != nil:
			t.NetNS, t.NetNSUnseen = NetNSByProcNet(pid, err)
		}
	}
	if g.rec != nil {
		g.rec.m.NetNS, g.rec.m.NetNSUnseen = t.NetNS, t.NetNSUnseen
	}
}

// netNSByProcNet tells, where /proc/PID/ns/net cannot be read (another
// user's process, without root: it needs ptrace access), whether pid
// shares hostprep's network namespace another way: /proc/PID/net is
// readable by anyone and each namespace has its own proc entries, so
// /proc/PID/net/dev has another inode in another namespace (measured: the
// same inode for every process of one namespace, another in a namespace
// made with unshare --net). It returns NetNS or, when neither can be
// read, NetNSUnseen naming nsErr.
func NetNSByProcNet(pid int, nsErr error) (netNS, unseen string) {
	var theirs, ours syscall.Stat_t
	if syscall.Stat(fmt.Sprintf("/proc/%d/net/dev", pid), &theirs) != nil || syscall.Stat("/proc/self/net/dev", &ours) != nil {
		return "", fmt.Sprintf("/proc/%d/ns/net: %v", pid, unwrapPath(nsErr))
	}
	if theirs.Ino != ours.Ino {
		return fmt.Sprintf("/proc/%d/net/dev is inode %d, hostprep's %d", pid, theirs.Ino, ours.Ino), ""
	}
	return "", ""
}
