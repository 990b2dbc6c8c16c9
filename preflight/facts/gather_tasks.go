package facts

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/proclimits"
)

// hostTasks reads the number of tasks (threads) on the host now from
// /proc/loadavg ("0.00 0.01 0.05 2/237 4242": 237; proc(5)).
func (g *Gatherer) hostTasks() {
	b, err := os.ReadFile(g.path("/proc/loadavg"))
	if err != nil {
		g.note("/proc/loadavg: %v", err)
		return
	}
	if f := strings.Fields(string(b)); len(f) >= 4 {
		if _, total, ok := strings.Cut(f[3], "/"); ok {
			g.F.HostTasks, _ = strconv.ParseUint(total, 10, 64)
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
func (g *Gatherer) tasks(pid int) {
	t := &g.F.Target.Tasks
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
		if u, err := user.LookupId(uid); err == nil && g.Root == "/" {
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
func (g *Gatherer) userTasks(uid string) uint64 {
	if g.rep != nil {
		return g.rep.UserTasks
	}
	var n uint64
	ents, _ := os.ReadDir(filepath.Join(g.Root, "proc"))
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(g.Root, "proc", e.Name(), "status"))
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
func (g *Gatherer) pidsRoom(pid int) {
	t := &g.F.Target.Tasks
	dir, base, _, ok := g.cgroupOf(pid, "pids", &t.Unseen, "cgroup")
	if !ok {
		return
	}
	least, unseen := g.leastRoom(dir, base, cgroupFiles{limit: "pids.max", usage: "pids.current", none: isMax})
	t.Unseen = append(t.Unseen, unseen...)
	if least.from != "" {
		t.PidsMax, t.PidsCurrent, t.PidsFrom = least.limit, least.usage, least.from
	}
}

// tasksCeiling is the host's task ceiling a TasksMax= percentage is taken
// of (hostconf.TasksCeiling: kernel.threads-max and kernel.pid_max as read
// into f; tasks).
func tasksCeiling(f *Facts) uint64 {
	var threads, pids uint64
	if v, ok := f.SysInt("kernel.threads-max"); ok && v > 0 {
		threads = uint64(v)
	}
	if v, ok := f.SysInt("kernel.pid_max"); ok && v > 0 {
		pids = uint64(v)
	}
	return hostconf.TasksCeiling(threads, pids)
}

// unitTasksMax reads the TasksMax= a unit that is not running gets at its
// next start from its files (hostconf.TasksMaxIn: the unit's, else the
// manager's DefaultTasksMax=, else systemd's 15%; an empty
// DefaultTasksMax= is no limit), resolved against tasksCeiling: the limit
// in tasks (Unlimited for infinity) and where it comes from. Errors: a
// file that exists but cannot be read.
func (g *Gatherer) unitTasksMax(files []hostconf.ConfFile) (uint64, string, error) {
	ceiling := tasksCeiling(g.F)
	s, mfiles, err := hostconf.TasksMaxIn(g.Root, files, ceiling, nil)
	g.readConf(mfiles)
	if err != nil {
		return 0, "", err
	}
	if s.Key == "DefaultTasksMax" && s.Set && s.Text == "" {
		return hostconf.Unlimited, "DefaultTasksMax= empty (" + s.Where() + "): no limit", nil
	}
	where := s.Where()
	if strings.ContainsAny(s.Text, "%‰‱") {
		where += fmt.Sprintf(", of %s", plural.N(ceiling, "task"))
	}
	return s.Tasks, s.Key + "=" + s.Text + " (" + where + ")", nil
}

// unitTasks fills Target.Tasks for a unit that is not running with the
// TasksMax= its next start gets: from its files (unitTasksMax) and, when
// systemd has it loaded, loaded (systemctl show's TasksMax, in tasks or
// "infinity"; "" when not known) — the lower of the two, naming both when
// they differ, as loadedOrFiles does for LimitNOFILE — and the TasksMax=
// of the slices it goes in (levels, from unitSlices; unseen what of its
// Slice= could not be read) less the tasks their cgroups hold now
// (sliceTasks): the one that leaves the least room is PidsMax. Errors: a
// unit file that exists but cannot be read.
func (g *Gatherer) unitTasks(unit string, u unitNofile, loaded string, levels []sliceLevel, unseen []string) error {
	n, from, err := g.unitTasksMax(u.files)
	if err != nil {
		return exitcode.Environmentf("--service %s: %v (run as root)", unit, err)
	}
	if l, ok := hostconf.ParseTasksMax(loaded, 0); ok && l != n && !strings.ContainsAny(loaded, "%‰‱") {
		differ := fmt.Sprintf("systemd has TasksMax=%s loaded but the files say %s: the next start uses the loaded one until `systemctl daemon-reload`, the next boot the files; judged on the lower", loaded, from)
		if l < n {
			n, from = l, "systemctl show "+unit+"; "+differ
		} else {
			from += "; " + differ
		}
	}
	t := &g.F.Target.Tasks
	t.UnitTasksMax = fmt.Sprintf("%s for %s (not running)", from, unit)
	least := cgroupLimit{}
	if n != Unlimited {
		least = cgroupLimit{limit: n, from: "TasksMax of " + unit}
	}
	slice, sunseen := g.sliceTasks(levels, tasksCeiling(g.F))
	t.Unseen = append(append(t.Unseen, unseen...), sunseen...)
	if least = lessRoom(least, slice); least.from != "" {
		t.PidsMax, t.PidsCurrent, t.PidsFrom, t.PidsSlice = least.limit, least.usage, least.from, least.slice
	}
	return nil
}
