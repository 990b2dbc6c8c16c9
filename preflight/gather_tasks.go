package preflight

import (
	"fmt"
	"os"
	"path"
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

// tasks reads what bounds the threads of process pid: its thread count
// (/proc/PID/status), its RLIMIT_NPROC (/proc/PID/limits) and the pids
// controller of its cgroup (pids.max of its cgroup and every cgroup
// above it, which all apply; Documentation/admin-guide/cgroup-v2.rst,
// "PID"). What cannot be read is noted and left 0 (not known).
func (g *gatherer) tasks(pid int) {
	t := &g.f.Target.Tasks
	if b, err := os.ReadFile(g.path(fmt.Sprintf("/proc/%d/status", pid))); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Threads:"); ok {
				t.Threads, _ = strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			}
			if v, ok := strings.CutPrefix(line, "Uid:"); ok {
				f := strings.Fields(v)
				t.RootUser = len(f) > 0 && f[0] == "0"
			}
		}
	} else {
		g.note("threads of pid %d: %v", pid, err)
	}
	if soft, _, err := proclimits.Nproc(g.path(fmt.Sprintf("/proc/%d/limits", pid))); err == nil {
		t.NprocSoft = soft
	} else {
		g.note("RLIMIT_NPROC of pid %d: %v", pid, err)
	}
	dir, base := g.pidsCgroup(pid)
	if dir == "" {
		return
	}
	if b, err := os.ReadFile(g.path(path.Join(dir, "pids.current"))); err == nil {
		t.PidsCurrent, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	}
	for d := dir; ; d = path.Dir(d) {
		if b, err := os.ReadFile(g.path(path.Join(d, "pids.max"))); err == nil {
			n := uint64(proclimits.Unlimited)
			if v := strings.TrimSpace(string(b)); v != "max" {
				n, _ = strconv.ParseUint(v, 10, 64)
			}
			if t.PidsFrom == "" || n < t.PidsMax {
				t.PidsMax, t.PidsFrom = n, path.Join(d, "pids.max")
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
// the controller's mount; "" when /proc/PID/cgroup names none.
func (g *gatherer) pidsCgroup(pid int) (dir, base string) {
	b, err := os.ReadFile(g.path(fmt.Sprintf("/proc/%d/cgroup", pid)))
	if err != nil {
		g.note("cgroup of pid %d: %v", pid, err)
		return "", ""
	}
	var v2 string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "pids" {
				return path.Join("/sys/fs/cgroup/pids", f[2]), "/sys/fs/cgroup/pids"
			}
		}
		if f[0] == "0" && f[1] == "" {
			v2 = f[2]
		}
	}
	if v2 == "" {
		return "", ""
	}
	base = "/sys/fs/cgroup"
	if _, err := os.Stat(g.path("/sys/fs/cgroup/cgroup.controllers")); err != nil {
		base = "/sys/fs/cgroup/unified"
	}
	return path.Join(base, v2), base
}
