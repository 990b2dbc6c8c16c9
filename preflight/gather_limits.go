package preflight

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/prometheus/procfs"
)

// capSysResource is CAP_SYS_RESOURCE's bit in CapEff (linux/capability.h).
const capSysResource = 24

// systemdBuiltinNofile is systemd's DefaultLimitNOFILE when system.conf
// leaves it unset (systemd >= 240, NEWS v240: soft 1024 for select(),
// hard 512K).
var systemdBuiltinNofile = profiles.Limit{Soft: 1024, Hard: 524288}

// systemd records whether systemd is PID 1 and its DefaultLimitNOFILE from
// system.conf and system.conf.d drop-ins (later files win).
func (g *gatherer) systemd() {
	_, err := os.Stat(g.path("/run/systemd/system"))
	g.f.Systemd.Running = err == nil
	installed := g.f.Systemd.Running
	for _, p := range []string{"/etc/systemd/system.conf", "/lib/systemd/systemd", "/usr/lib/systemd/systemd"} {
		if _, err := os.Stat(g.path(p)); err == nil {
			installed = true
		}
	}
	if installed {
		g.systemdDefault()
	}
}

// systemdDefault reads the manager's DefaultLimitNOFILE from system.conf
// and its drop-ins (later files win), systemd's built-in default when
// none sets it.
func (g *gatherer) systemdDefault() {
	files := []string{g.path("/etc/systemd/system.conf")}
	for _, d := range []string{"/usr/lib/systemd/system.conf.d", "/run/systemd/system.conf.d", "/etc/systemd/system.conf.d"} {
		m := g.glob(d + "/*.conf")
		sort.Strings(m)
		files = append(files, m...)
	}
	lim := systemdBuiltinNofile
	for _, p := range files {
		if v, ok := iniValue(p, "DefaultLimitNOFILE"); ok {
			if l, err := parseSystemdLimit(v); err == nil {
				lim = l
			} else {
				g.note("%s: DefaultLimitNOFILE=%s: %v", p, v, err)
			}
		}
	}
	g.f.Systemd.DefaultLimitNOFILE = &lim
}

// iniValue returns the last KEY=value in a systemd-style file.
func iniValue(path, key string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	val, ok := "", false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		k, v, found := strings.Cut(line, "=")
		if found && strings.TrimSpace(k) == key {
			val, ok = strings.TrimSpace(v), true
		}
	}
	return val, ok
}

// parseSystemdLimit parses LimitNOFILE syntax: "N", "soft:hard",
// "infinity".
func parseSystemdLimit(v string) (profiles.Limit, error) {
	one := func(s string) (uint64, error) {
		s = strings.TrimSpace(s)
		if s == "infinity" || s == "unlimited" {
			return Unlimited, nil
		}
		return strconv.ParseUint(s, 10, 64)
	}
	soft, hard, pair := strings.Cut(v, ":")
	s, err := one(soft)
	if err != nil {
		return profiles.Limit{}, fmt.Errorf("want N, SOFT:HARD or infinity")
	}
	h := s
	if pair {
		if h, err = one(hard); err != nil {
			return profiles.Limit{}, fmt.Errorf("want N, SOFT:HARD or infinity")
		}
	}
	return profiles.Limit{Soft: s, Hard: h}, nil
}

// limitsD parses nofile lines of /etc/security/limits.conf and
// limits.d/*.conf (pam_limits: "domain type item value"; type soft, hard
// or - for both; later lines win for the same domain).
func (g *gatherer) limitsD() {
	files := []string{g.path("/etc/security/limits.conf")}
	m := g.glob("/etc/security/limits.d/*.conf")
	sort.Strings(m)
	files = append(files, m...)
	for _, p := range files {
		fh, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			f := strings.Fields(line)
			if len(f) != 4 || f[2] != "nofile" {
				continue
			}
			var n uint64
			if f[3] == "unlimited" || f[3] == "infinity" || f[3] == "-1" {
				n = Unlimited
			} else if n, err = strconv.ParseUint(f[3], 10, 64); err != nil {
				g.note("%s: nofile value %q is not a number", p, f[3])
				continue
			}
			if g.f.LimitsD == nil {
				g.f.LimitsD = map[string]profiles.Limit{}
			}
			l := g.f.LimitsD[f[0]]
			switch f[1] {
			case "soft":
				l.Soft = n
			case "hard":
				l.Hard = n
			case "-":
				l.Soft, l.Hard = n, n
			}
			g.f.LimitsD[f[0]] = l
		}
		fh.Close()
	}
}

// loginLimit returns the limits.d entry pam_limits would apply to user:
// the user's own line beats a @group line beats "*" ("*" never applies to
// root).
func loginLimit(d map[string]profiles.Limit, username string, groups []string) (profiles.Limit, string, bool) {
	if l, ok := d[username]; ok {
		return l, username, true
	}
	for _, gname := range groups {
		if l, ok := d["@"+gname]; ok {
			return l, "@" + gname, true
		}
	}
	if username != "root" {
		if l, ok := d["*"]; ok {
			return l, "*", true
		}
	}
	return profiles.Limit{}, "", false
}

// target finds the limits of the process that will hold the sockets.
func (g *gatherer) target(ctx context.Context, pid int, service string, fromProfile bool) error {
	switch {
	case pid > 0:
		return g.targetPID(pid, fmt.Sprintf("/proc/%d/limits", pid))
	case service != "":
		return g.targetService(ctx, service, fromProfile)
	}
	return g.targetLogin()
}

// targetPID reads /proc/PID/limits and CapEff of /proc/PID/status.
func (g *gatherer) targetPID(pid int, source string) error {
	soft, hard, err := readNofile(g.path(fmt.Sprintf("/proc/%d/limits", pid)))
	if os.IsNotExist(err) {
		return exitcode.BadInputf("--pid %d: no such process (/proc/%d does not exist); pass the PID of the running broker or loadgen", pid, pid)
	}
	if err != nil {
		return exitcode.Environmentf("--pid %d: cannot read its limits: %v (run as the same user or root)", pid, err)
	}
	t := &g.f.Target
	t.PID, t.NofileSoft, t.NofileHard, t.Source = pid, soft, hard, source
	if t.ManagedBy == "" {
		t.ManagedBy = "shell"
		if u := serviceOfPID(g.path(fmt.Sprintf("/proc/%d/cgroup", pid))); u != "" && g.f.Systemd.Running {
			t.ManagedBy, t.Unit = "systemd", u
		}
	}
	t.CapSysResource, err = g.hasCap(pid, "CapEff", capSysResource)
	if err != nil {
		g.note("capabilities of pid %d: %v", pid, err)
	}
	return nil
}

// unitDirs are where unit files live, lowest priority first (a file in
// /etc/systemd/system overrides the packaged one).
var unitDirs = []string{"/usr/lib/systemd/system", "/lib/systemd/system", "/run/systemd/system", "/etc/systemd/system"}

// unitDirList names unitDirs for messages, highest priority first.
const unitDirList = "/etc/systemd/system, /run/systemd/system, /lib/systemd/system or /usr/lib/systemd/system"

// targetService reads a unit's LimitNOFILE: from systemctl (and the
// running MainPID's /proc limits) when systemd runs, else from the unit
// file and its drop-ins. When systemd is not running (no
// /run/systemd/system) no LimitNOFILE can apply: the limits are those a
// process started from a login shell gets, and the unit's own setting is
// kept as UnitLimitNOFILE. A unit with no unit file is exitcode.BadInput
// when named by --service, and a UnitMissing finding when named by a
// profile (fromProfile).
func (g *gatherer) targetService(ctx context.Context, unit string, fromProfile bool) error {
	if !strings.Contains(unit, ".") {
		unit += ".service"
	}
	t := &g.f.Target
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
			return exitcode.BadInputf("--service %s: no such unit (systemctl show: LoadState=not-found); pass the unit that runs the broker, e.g. --service mosquitto", unit)
		}
		if pid, _ := strconv.Atoi(props["MainPID"]); pid > 0 {
			return g.targetPID(pid, fmt.Sprintf("running %s, /proc/%d/limits", unit, pid))
		}
		hard, err1 := parseSystemdLimit(props["LimitNOFILE"])
		soft, err2 := parseSystemdLimit(props["LimitNOFILESoft"])
		if err1 == nil && err2 == nil {
			g.f.applyUnitLimit(profiles.Limit{Soft: soft.Soft, Hard: hard.Soft}, "systemctl show "+unit+" (not running)")
			if u := props["User"]; u != "" && u != "root" {
				t.CapSysResource = false
			}
			return nil
		}
	}
	// systemd not running, or a recorded root: read the files.
	var files []string
	for _, d := range unitDirs {
		if _, err := os.Stat(g.path(d + "/" + unit)); err == nil {
			files = append(files, g.path(d+"/"+unit))
		}
	}
	running := "systemd is running"
	if !g.f.Systemd.Running {
		running = "systemd is not running here either (no /run/systemd/system)"
	}
	if len(files) == 0 {
		if fromProfile {
			return g.unitMissing(unit, fmt.Sprintf("no unit file in %s, and %s", unitDirList, strings.TrimSuffix(running, " either (no /run/systemd/system)")))
		}
		return exitcode.BadInputf("--service %s: no such unit: no unit file in %s (drop-ins alone do not make a unit), and %s; pass the unit that runs the broker (--service mosquitto) or the PID of the running process (--pid)", unit, unitDirList, running)
	}
	unitFile := files[len(files)-1]
	var dropins []string
	for _, d := range unitDirs {
		m := g.glob(d + "/" + unit + ".d/*.conf")
		dropins = append(dropins, m...)
	}
	// drop-ins apply in lexical order of their file names, whatever the directory
	sort.SliceStable(dropins, func(i, j int) bool { return filepath.Base(dropins[i]) < filepath.Base(dropins[j]) })
	files = append(files, dropins...)
	var reader unitNofileReader = fileUnitReader{g}
	lim, limSrc, user, found := reader.UnitNofile(unit, files)
	if !g.f.Systemd.Running {
		// Nothing applies the unit: whoever starts the program passes on
		// its own limits. Report those, and the unit's setting beside them.
		if err := g.targetLogin(); err != nil {
			return err
		}
		unitSays := "it sets no LimitNOFILE anyway"
		if found {
			t.UnitLimitNOFILE = fmt.Sprintf("%s (%s)", fmtLimit(lim), limSrc)
			unitSays = "its LimitNOFILE=" + t.UnitLimitNOFILE + " cannot apply"
		}
		t.Unit, t.UnitFile, t.Assumed = unit, unitFile, false
		t.Source = fmt.Sprintf("systemd is not running here (no /run/systemd/system), so nothing starts %s from its unit (%s) and %s; a process started from a login shell gets: %s", unit, unitFile, unitSays, t.Source)
		return nil
	}
	t.UnitFile = unitFile
	t.CapSysResource = user == "" || user == "root"
	if found {
		g.f.applyUnitLimit(lim, "LimitNOFILE in "+limSrc+" (unit not running)")
		return nil
	}
	d := systemdBuiltinNofile
	if g.f.Systemd.DefaultLimitNOFILE != nil {
		d = *g.f.Systemd.DefaultLimitNOFILE
	}
	g.f.applyUnitLimit(d, fmt.Sprintf("no LimitNOFILE for %s (%s): systemd DefaultLimitNOFILE %s", unit, unitFile, fmtLimit(d)))
	return nil
}

// unitMissing records that the profile's unit is not installed: the
// limits shown are those a login shell gets, and fd.soft fails.
func (g *gatherer) unitMissing(unit, why string) error {
	if err := g.targetLogin(); err != nil {
		return err
	}
	t := &g.f.Target
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
func (g *gatherer) targetLogin() error {
	t := &g.f.Target
	t.ManagedBy, t.Assumed = "shell", true
	ppid := os.Getppid()
	if g.rep != nil {
		ppid = g.rep.ParentPID
	} else if g.rec != nil {
		g.rec.m.ParentPID = ppid
	}
	soft, hard, err := readNofile(g.path(fmt.Sprintf("/proc/%d/limits", ppid)))
	parentRead, parentHard := err == nil, hard
	t.Source = fmt.Sprintf("inherited from the parent shell (/proc/%d/limits)", ppid)
	if err != nil {
		soft, hard = systemdBuiltinNofile.Soft, systemdBuiltinNofile.Hard
		t.Source = "assumed 1024:524288, the usual login-session default (no parent shell to read)"
	}
	if g.f.Systemd.Running && g.f.Systemd.DefaultLimitNOFILE != nil {
		soft, hard = g.f.Systemd.DefaultLimitNOFILE.Soft, g.f.Systemd.DefaultLimitNOFILE.Hard
		t.Source = "systemd DefaultLimitNOFILE (login sessions inherit it)"
	}
	name, groups := g.user()
	if l, dom, ok := loginLimit(g.f.LimitsD, name, groups); ok {
		if l.Soft != 0 {
			soft = l.Soft
		}
		if l.Hard != 0 {
			hard = l.Hard
		}
		t.Source = fmt.Sprintf("limits.d entry %q for user %s (pam_limits at login)", dom, name)
	}
	// Without CAP_SYS_RESOURCE in the bounding set (a container, this
	// sandbox) no process here can ever raise a hard limit: not pam_limits
	// at login, not systemd. A login gets at most the hard limit the
	// processes above it have, which the parent shell shows.
	if bnd, err := g.hasCap(g.selfPID(), "CapBnd", capSysResource); err == nil && !bnd && parentRead && hard > parentHard {
		t.Source += fmt.Sprintf(", which asks for nofile %s but is capped at the hard limit %s inherited here (/proc/%d/limits): CAP_SYS_RESOURCE is not in this host's capability bounding set (CapBnd), so no process here can raise a hard nofile",
			fmtLimit(profiles.Limit{Soft: soft, Hard: hard}), fmtNofile(parentHard), ppid)
		hard = parentHard
		soft = min(soft, hard)
	}
	t.NofileSoft, t.NofileHard = soft, hard
	t.CapSysResource, err = g.hasCap(g.selfPID(), "CapEff", capSysResource)
	if err != nil {
		g.note("own capabilities: %v", err)
	}
	return nil
}

// readNofile returns the "Max open files" soft and hard limits of a
// /proc/PID/limits file.
func readNofile(path string) (soft, hard uint64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "Max open files") {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(line, "Max open files"))
		if len(f) < 2 {
			break
		}
		parse := func(s string) (uint64, error) {
			if s == "unlimited" {
				return Unlimited, nil
			}
			return strconv.ParseUint(s, 10, 64)
		}
		if soft, err = parse(f[0]); err == nil {
			hard, err = parse(f[1])
		}
		return soft, hard, err
	}
	return 0, 0, fmt.Errorf("%s: no \"Max open files\" line", path)
}

// hasCap reports whether bit is set in a capability set (CapEff, CapBnd)
// of /proc/PID/status under the root, parsed by prometheus/procfs.
func (g *gatherer) hasCap(pid int, set string, bit uint) (bool, error) {
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
func hasCap(statusPath string, bit uint) (bool, error) {
	return hasCapIn(statusPath, "CapEff", bit)
}

// hasCapIn reports whether bit is set in the field line (CapEff, CapBnd)
// of a live /proc/PID/status file.
func hasCapIn(statusPath, field string, bit uint) (bool, error) {
	dir := filepath.Dir(statusPath)
	pid, err := strconv.Atoi(filepath.Base(dir))
	if filepath.Base(dir) == "self" {
		pid, err = os.Getpid(), nil
	}
	if err != nil {
		return false, fmt.Errorf("%s: not /proc/PID/status", statusPath)
	}
	g := &gatherer{root: filepath.Dir(filepath.Dir(dir)), f: &Facts{}}
	return g.hasCap(pid, field, bit)
}

// selfPID is hostprep's own PID, or the recorded one when replaying.
func (g *gatherer) selfPID() int {
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

func fmtLimit(l profiles.Limit) string {
	return fmtNofile(l.Soft) + ":" + fmtNofile(l.Hard)
}

func fmtNofile(n uint64) string {
	if n == Unlimited {
		return "infinity"
	}
	return strconv.FormatUint(n, 10)
}

// systemctlShow asks systemd for a unit's limits and main PID when systemd
// runs the live host (or replays the recorded answer); ok is false when
// there is no answer to use and the unit files are read instead.
func (g *gatherer) systemctlShow(ctx context.Context, unit string) (string, bool, error) {
	if g.rep != nil {
		out, ok := g.rep.SystemctlShow[unit]
		return out, ok && g.f.Systemd.Running, nil
	}
	if !g.f.Systemd.Running || !g.live() {
		return "", false, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	b, err := exec.CommandContext(ctx, "systemctl", "show", "-p", "MainPID,LimitNOFILE,LimitNOFILESoft,User,LoadState", unit).Output()
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
func (g *gatherer) user() (string, []string) {
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
