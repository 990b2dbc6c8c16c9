package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/proclimits"
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
		}
		t.RootUser = uid == "0"
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
	dir, base, err := g.pidsCgroup(pid)
	if err != nil {
		t.Unseen = append(t.Unseen, fmt.Sprintf("cgroup of pid %d (%v)", pid, err))
		return
	}
	if dir == "" {
		return
	}
	read := func(p string) (string, bool, error) {
		b, err := os.ReadFile(g.path(p))
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		return strings.TrimSpace(string(b)), err == nil, err
	}
	for d := dir; ; d = path.Dir(d) {
		v, ok, err := read(path.Join(d, "pids.max"))
		switch {
		case err != nil:
			t.Unseen = append(t.Unseen, fmt.Sprintf("%s (%v)", path.Join(d, "pids.max"), err))
		case ok && v != "max":
			lim, perr := strconv.ParseUint(v, 10, 64)
			cur, cok, cerr := read(path.Join(d, "pids.current"))
			n, nerr := strconv.ParseUint(cur, 10, 64)
			if perr != nil || cerr != nil || !cok || nerr != nil {
				t.Unseen = append(t.Unseen, fmt.Sprintf("%s or pids.current there", path.Join(d, "pids.max")))
				break
			}
			if t.PidsFrom == "" || int64(lim)-int64(n) < int64(t.PidsMax)-int64(t.PidsCurrent) {
				t.PidsMax, t.PidsCurrent, t.PidsFrom = lim, n, path.Join(d, "pids.max")
			}
		}
		if d == base || d == "/" {
			break
		}
	}
}

// pidsCgroup is the directory of pid's cgroup in the pids controller
// (cgroup v1 "N:pids:/path" under /sys/fs/cgroup/pids, else v2 "0::/path"
// under /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host) and
// the controller's mount; "" when /proc/PID/cgroup names none, an error
// when it cannot be read.
func (g *gatherer) pidsCgroup(pid int) (dir, base string, err error) {
	b, err := os.ReadFile(g.path(fmt.Sprintf("/proc/%d/cgroup", pid)))
	if err != nil {
		return "", "", err
	}
	var v2 string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "pids" {
				return path.Join("/sys/fs/cgroup/pids", f[2]), "/sys/fs/cgroup/pids", nil
			}
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
		}
	}
	if v2 == "" {
		return "", "", nil
	}
	base = "/sys/fs/cgroup"
	if _, err := os.Stat(g.path("/sys/fs/cgroup/cgroup.controllers")); err != nil {
		base = "/sys/fs/cgroup/unified"
	}
	return path.Join(base, v2), base, nil
}
