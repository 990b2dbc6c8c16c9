package preflight

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/proclimits"
	"github.com/hostprep/hostprep/tune/boot"
)

// hostTasks reads the number of tasks (threads) on the host now from
// /proc/loadavg ("0.00 0.01 0.05 2/237 4242": 237; proc(5)).
func (g *gatherer) hostTasks() {
	b, err := os.ReadFile(g.path("/proc/loadavg"))
	if err != nil {
		g.note("/proc/loadavg: %v", err)
		return
	}
	if f := strings.Fields(string(b)); len(f) >= 4 {
		if _, total, ok := strings.Cut(f[3], "/"); ok {
			g.f.HostTasks, _ = strconv.ParseUint(total, 10, 64)
		}
	}
}

// tasks reads what bounds the threads of process pid: its thread count,
// real user and CAP_SYS_ADMIN (/proc/PID/status), its RLIMIT_NPROC
// (/proc/PID/limits), the tasks of its user (RLIMIT_NPROC counts them all:
// is_rlimit_overlimit on the user's ucounts in copy_process,
// kernel/fork.c), and the pids controller of its cgroup: each cgroup
// from its own up to the root of the hierarchy limits every task below
// it, so the room is the least pids.max - pids.current of any of them
// (Documentation/admin-guide/cgroup-v2.rst, "PID"). What cannot be read
// is named in Unseen.
func (g *gatherer) tasks(pid int) {
	t := &g.f.Target.Tasks
	uid := ""
	if b, err := os.ReadFile(g.path(fmt.Sprintf("/proc/%d/status", pid))); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				t.Threads, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			}
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					uid = f[0]
				}
			}
			if v, ok := strings.CutPrefix(line, "Gid:"); ok {
				if f := strings.Fields(v); len(f) > 0 {
					t.GID = f[0]
				}
			}
		}
		t.RootUser, t.User, t.UID = uid == "0", uid, uid
		if u, err := user.LookupId(uid); err == nil && g.root == "/" {
			t.User = u.Username
		}
	} else {
		t.Unseen = append(t.Unseen, fmt.Sprintf("threads of pid %d (%v)", pid, err))
	}
	t.CapSysAdmin, _ = g.hasCap(pid, "CapEff", capSysAdmin)
	if soft, _, err := proclimits.Nproc(g.path(fmt.Sprintf("/proc/%d/limits", pid))); err == nil {
		t.NprocSoft = soft
	} else if !t.RootUser {
		t.Unseen = append(t.Unseen, fmt.Sprintf("RLIMIT_NPROC of pid %d (%v)", pid, err))
	}
	if uid != "" && !t.RootUser {
		t.UserTasks = g.userTasks(uid)
	}
	g.pidsRoom(pid)
}

// capSysAdmin is CAP_SYS_ADMIN's bit in a capability set: like
// CAP_SYS_RESOURCE it lets a process past RLIMIT_NPROC.
const capSysAdmin = 21

// userTasks is the number of tasks (threads) of real user uid on the
// host now, summed over /proc/*/status; from the recording when
// replaying (the status files of every process are not copied).
func (g *gatherer) userTasks(uid string) uint64 {
	if g.rep != nil {
		return g.rep.UserTasks
	}
	var n uint64
	ents, _ := os.ReadDir(filepath.Join(g.root, "proc"))
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(g.root, "proc", e.Name(), "status"))
		if err != nil {
			continue // ended meanwhile
		}
		var threads uint64
		mine := false
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				f := strings.Fields(v)
				mine = len(f) > 0 && f[0] == uid
			}
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				threads, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			}
		}
		if mine {
			n += threads
		}
	}
	if g.rec != nil {
		g.rec.m.UserTasks = n
	}
	return n
}

// pidsRoom fills the Pids fields of pid's tasks with the cgroup that
// leaves the least room (pids.max - pids.current), from its own up.
func (g *gatherer) pidsRoom(pid int) {
	t := &g.f.Target.Tasks
	dir, base, _, err := g.cgroupDir(pid, "pids")
	if err != nil {
		t.Unseen = append(t.Unseen, fmt.Sprintf("cgroup of pid %d (%v)", pid, err))
		return
	}
	if dir == "" {
		return
	}
	least, unseen := g.leastRoom(dir, base, cgroupFiles{limit: "pids.max", usage: "pids.current", none: isMax})
	t.Unseen = append(t.Unseen, unseen...)
	if least.from != "" {
		t.PidsMax, t.PidsCurrent, t.PidsFrom = least.limit, least.usage, least.from
	}
}

// systemdDefaultTasksMax is DefaultTasksMax= when no system.conf file sets
// it: 15% of the host's task ceiling, 4915 tasks with the kernel's default
// kernel.pid_max 32768 (systemd-system.conf(5)).
const systemdDefaultTasksMax = "15%"

// systemdTasksCeiling is systemd's TASKS_MAX, the most its task ceiling
// can be (the kernel's PID_MAX_LIMIT - 1, tasks).
const systemdTasksCeiling = 4194303

// tasksCeiling is the host's task ceiling a TasksMax= percentage is taken
// of, as systemd's system_tasks_max computes it: the least of
// kernel.threads-max, kernel.pid_max - 1 (PID 0 is none) and 4194303
// (tasks). The root cgroup's pids.max, which systemd also takes, exists
// only inside a container's cgroup namespace and is not read.
func tasksCeiling(f *Facts) uint64 {
	c := uint64(systemdTasksCeiling)
	if v, ok := f.SysInt("kernel.threads-max"); ok && v > 0 {
		c = min(c, uint64(v))
	}
	if v, ok := f.SysInt("kernel.pid_max"); ok && v > 1 {
		c = min(c, uint64(v)-1)
	}
	return c
}

// parseTasksMax reads a TasksMax=/DefaultTasksMax= value as systemd's
// config_parse_tasks_max does: "infinity" (Unlimited), a number of tasks
// N >= 1, or a share of ceiling (tasks) written "P%" (up to two
// decimals), "P‰" (one) or "P‱", at most 100%, rounded down. ok is false
// for a value systemd logs and ignores.
func parseTasksMax(v string, ceiling uint64) (uint64, bool) {
	if v == "infinity" {
		return Unlimited, true
	}
	for _, u := range []struct {
		suffix   string
		scale    uint64 // permyriad per unit
		decimals int
	}{{"%", 100, 2}, {"‰", 10, 1}, {"‱", 1, 0}} {
		num, ok := strings.CutSuffix(v, u.suffix)
		if !ok {
			continue
		}
		whole, frac, dot := strings.Cut(num, ".")
		if !digits(whole) || dot && (!digits(frac) || len(frac) > u.decimals) {
			return 0, false
		}
		w, err := strconv.ParseUint(whole, 10, 32)
		if err != nil {
			return 0, false
		}
		p := w * u.scale
		for i, unit := 0, u.scale/10; i < len(frac); i, unit = i+1, unit/10 {
			p += uint64(frac[i]-'0') * unit
		}
		if p > 10000 {
			return 0, false
		}
		return ceiling * p / 10000, true
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil && n >= 1 && n < Unlimited
}

// digits says whether s is one or more ASCII digits.
func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// unitTasksMax reads the TasksMax= a unit that is not running gets at its
// next start from its files (the unit's, else the manager's
// DefaultTasksMax=, else systemd's 15%; an empty DefaultTasksMax= is no
// limit), resolved against tasksCeiling: the limit in tasks (Unlimited
// for infinity) and where it comes from. Errors: a file that exists but
// cannot be read.
func (g *gatherer) unitTasksMax(files []boot.ConfFile) (uint64, string, error) {
	ceiling := tasksCeiling(g.f)
	accept := func(v string) bool { _, ok := parseTasksMax(v, ceiling); return ok }
	describe := func(key, v, where string) (uint64, string) {
		n, _ := parseTasksMax(v, ceiling)
		if strings.ContainsAny(v, "%‰‱") {
			where += fmt.Sprintf(", of %s", plural.N(ceiling, "task"))
		}
		return n, key + "=" + v + " (" + where + ")"
	}
	v, where, err := boot.LastAccepted(g.root, files, "Service", "TasksMax", accept)
	if err != nil {
		return 0, "", err
	}
	if v != "" {
		n, from := describe("TasksMax", v, where)
		return n, from, nil
	}
	_, mfiles, err := boot.ManagerNofile(g.root)
	if err != nil {
		return 0, "", err
	}
	g.readConf(mfiles)
	v, where, err = boot.LastAccepted(g.root, mfiles, "Manager", "DefaultTasksMax", accept)
	switch {
	case err != nil:
		return 0, "", err
	case where == "":
		v, where = systemdDefaultTasksMax, "systemd's built-in default"
	case v == "":
		return Unlimited, "DefaultTasksMax= empty (" + where + "): no limit", nil
	}
	n, from := describe("DefaultTasksMax", v, where)
	return n, from, nil
}

// unitTasks fills Target.Tasks for a unit that is not running with the
// TasksMax= its next start gets: from its files (unitTasksMax) and, when
// systemd has it loaded, loaded (systemctl show's TasksMax, in tasks or
// "infinity"; "" when not known) — the lower of the two, naming both when
// they differ, as loadedOrFiles does for LimitNOFILE. Errors: a unit file
// that exists but cannot be read.
func (g *gatherer) unitTasks(unit string, u unitNofile, loaded string) error {
	n, from, err := g.unitTasksMax(u.files)
	if err != nil {
		return exitcode.Environmentf("--service %s: %v (run as root)", unit, err)
	}
	if l, ok := parseTasksMax(loaded, 0); ok && l != n && !strings.ContainsAny(loaded, "%‰‱") {
		differ := fmt.Sprintf("systemd has TasksMax=%s loaded but the files say %s: the next start uses the loaded one until `systemctl daemon-reload`, the next boot the files; judged on the lower", loaded, from)
		if l < n {
			n, from = l, "systemctl show "+unit+"; "+differ
		} else {
			from += "; " + differ
		}
	}
	t := &g.f.Target.Tasks
	t.UnitTasksMax = fmt.Sprintf("%s for %s (not running)", from, unit)
	if n != Unlimited {
		t.PidsMax, t.PidsCurrent, t.PidsFrom = n, 0, "TasksMax of "+unit
	}
	return nil
}
