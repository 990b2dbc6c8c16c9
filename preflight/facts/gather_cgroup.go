package facts

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
)

// cgroupDir is the directory of pid's cgroup in controller ctrl ("pids",
// "memory"): cgroup v1 "N:ctrl:/path" under /sys/fs/cgroup/CTRL, else v2
// "0::/path" under /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid
// host; base is the root of that hierarchy (its mount) and v2 says which
// of the two it is. dir is "" when /proc/PID/cgroup names none, err
// non-nil when it cannot be read. Whether the v2 hierarchy has ctrl at
// all is for the caller to ask (cgroupControllers).
func (g *Gatherer) cgroupDir(pid int, ctrl string) (dir, base string, v2 bool, err error) {
	b, err := os.ReadFile(g.path(fmt.Sprintf("/proc/%d/cgroup", pid)))
	if err != nil {
		return "", "", false, err
	}
	var unified string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == ctrl {
				base = "/sys/fs/cgroup/" + ctrl
				return path.Join(base, f[2]), base, false, nil
			}
		}
		if f[0] == "0" && f[1] == "" {
			unified = f[2]
		}
	}
	if unified == "" {
		return "", "", false, nil
	}
	base = "/sys/fs/cgroup"
	if _, err := os.Stat(g.path("/sys/fs/cgroup/cgroup.controllers")); err != nil {
		base = "/sys/fs/cgroup/unified"
	}
	return path.Join(base, unified), base, true, nil
}

// cgroupOf is cgroupDir for the lookups of one controller's limits: a
// cgroup that cannot be found is named in unseen ("memory cgroup of pid
// 42 (...)"), and ok is false then and when the controller is not
// mounted.
func (g *Gatherer) cgroupOf(pid int, ctrl string, unseen *[]string, what string) (dir, base string, v2, ok bool) {
	dir, base, v2, err := g.cgroupDir(pid, ctrl)
	if err != nil {
		*unseen = append(*unseen, fmt.Sprintf("%s of pid %d (%v)", what, pid, err))
		return "", "", false, false
	}
	return dir, base, v2, dir != ""
}

// cgroupControllers says whether the v2 cgroup d has controller ctrl
// (its cgroup.controllers names it: the parent enabled it for d, or d is
// the root and the controller is bound to v2); err when that file cannot
// be read (d absent, or not readable).
func (g *Gatherer) cgroupControllers(d, ctrl string) (bool, error) {
	b, err := os.ReadFile(g.path(path.Join(d, "cgroup.controllers")))
	if err != nil {
		return false, err
	}
	for _, c := range strings.Fields(string(b)) {
		if c == ctrl {
			return true, nil
		}
	}
	return false, nil
}

// cgroupFiles name one controller's limit and usage files, as the walk
// up a hierarchy (leastRoom) reads them.
type cgroupFiles struct {
	limit, usage string // "pids.max", "pids.current"
	// none says a limit file's value is no limit ("max").
	none func(v string) bool
	// absent says whether a limit file missing from cgroup d is unseen
	// (the controller is there, its file is not); nil: never (no file is
	// no limit there).
	absent func(d string) bool
	// counts says whether cgroup parent's limit counts the usage of its
	// children (cgroup v1 memory.use_hierarchy 0 does not); nil: always.
	counts func(parent string) bool
	// reclaim is the part of cgroup d's usage the kernel takes back
	// before it reaches the limit (memory: inactive page cache), taken off
	// the usage; nil: none.
	reclaim func(d string) uint64
}

// cgroupLimit is one cgroup's limit and usage (tasks, bytes) and its
// limit file.
type cgroupLimit struct {
	limit, usage uint64
	from         string // "" when no cgroup limits
	// slice is, for a unit that is not running, the slice setting that
	// sets the limit; nil for the unit's own or a cgroup file's.
	slice *SliceRef
}

// room is what the limit leaves (negative when usage is above it).
func (l cgroupLimit) room() int64 { return int64(l.limit) - int64(l.usage) }

// leastRoom walks from the cgroup dir up to base, the hierarchy's root,
// and returns the cgroup whose limit leaves the least room (limit -
// usage): each cgroup limits every task below it (cgroup-v2.rst), so the
// least room of any of them bounds the process. A limit file that exists
// but cannot be read, a limit without a usage beside it, and a missing
// limit file that c.absent calls unseen are named in unseen.
func (g *Gatherer) leastRoom(dir, base string, c cgroupFiles) (least cgroupLimit, unseen []string) {
	read := func(p string) (string, bool, error) {
		b, err := os.ReadFile(g.path(p))
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		return strings.TrimSpace(string(b)), err == nil, err
	}
	for d := dir; ; d = path.Dir(d) {
		file := path.Join(d, c.limit)
		v, ok, err := read(file)
		switch {
		case err != nil:
			unseen = append(unseen, fmt.Sprintf("%s (%v)", file, err))
		case !ok && c.absent != nil && c.absent(d):
			unseen = append(unseen, fmt.Sprintf("%s (not found)", file))
		case ok && !c.none(v):
			lim, perr := strconv.ParseUint(v, 10, 64)
			cur, cok, cerr := read(path.Join(d, c.usage))
			n, nerr := strconv.ParseUint(cur, 10, 64)
			if perr != nil || cerr != nil || !cok || nerr != nil {
				unseen = append(unseen, fmt.Sprintf("%s or %s there", file, c.usage))
				break
			}
			if c.reclaim != nil {
				n -= min(n, c.reclaim(d))
			}
			if l := (cgroupLimit{limit: lim, usage: n, from: file}); least.from == "" || l.room() < least.room() {
				least = l
			}
		}
		if d == base || d == "/" || c.counts != nil && !c.counts(path.Dir(d)) {
			break
		}
	}
	return least, unseen
}

// isMax is a v2 limit file's "max": no limit.
func isMax(v string) bool { return v == "max" }

// v1NoLimit is the value cgroup v1 prints for a memory limit never set
// (or set to -1): PAGE_COUNTER_MAX pages in bytes, LONG_MAX rounded down
// to a page (9223372036854771712 with 4 KiB pages).
func v1NoLimit(pageSize int64) uint64 {
	if pageSize <= 0 {
		pageSize = 4096
	}
	return uint64(math.MaxInt64 / pageSize * pageSize)
}

// memCgroup fills Target.Memory for the running process pid: the cgroup
// of the memory controller (v1 under /sys/fs/cgroup/memory, else v2,
// where the hierarchy has the controller) that leaves the least room
// under its hard limit, from its own up, and for v2 under memory.high.
// Where the controller is there, a limit file that cannot be read is
// named in Unseen, never taken for no limit.
func (g *Gatherer) memCgroup(pid int) {
	m := &g.F.Target.Memory
	dir, base, v2, ok := g.cgroupOf(pid, "memory", &m.Unseen, "memory cgroup")
	if !ok {
		return
	}
	var files cgroupFiles
	if v2 {
		if has, err := g.cgroupControllers(base, "memory"); err != nil || !has {
			return // the memory controller is bound to v1 or not at all
		}
		files = cgroupFiles{limit: "memory.max", usage: "memory.current", none: isMax,
			absent: func(d string) bool {
				// the root has no memory.max; a cgroup without the
				// controller enabled (its parent's subtree_control) none
				has, err := g.cgroupControllers(d, "memory")
				return d != base && (err != nil || has)
			}}
	} else {
		none := v1NoLimit(g.F.PageSize)
		files = cgroupFiles{limit: "memory.limit_in_bytes", usage: "memory.usage_in_bytes",
			none: func(v string) bool { n, err := strconv.ParseUint(v, 10, 64); return err == nil && n >= none },
			// every v1 memory cgroup, the root too, has the file
			absent: func(string) bool { return true },
			// before Linux 5.11 a parent with use_hierarchy 0 does not
			// count its children (it is always 1 since)
			counts: func(parent string) bool {
				b, err := os.ReadFile(g.path(path.Join(parent, "memory.use_hierarchy")))
				return err != nil || strings.TrimSpace(string(b)) != "0"
			}}
	}
	// Page cache the kernel reclaims before the limit is not in the way:
	// the usage counted is the working set (usage less inactive_file,
	// cAdvisor's container_memory_working_set_bytes). Measured: a v1
	// cgroup of 64 MiB with 63 MiB in use, 60 MiB of it inactive page
	// cache, took 4000 MQTT connections without an OOM kill.
	stat := "inactive_file"
	if !v2 {
		stat = "total_inactive_file"
	}
	files.reclaim = func(d string) uint64 { return g.memStat(path.Join(d, "memory.stat"), stat) }
	least, unseen := g.leastRoom(dir, base, files)
	m.Unseen = append(m.Unseen, unseen...)
	m.Limit, m.Usage, m.From, m.SockCharged = least.limit, least.usage, least.from, v2
	if v2 {
		files.limit, files.absent = "memory.high", nil // named with memory.max when missing
		high, unseen := g.leastRoom(dir, base, files)
		m.Unseen = append(m.Unseen, unseen...)
		m.High, m.HighUsage, m.HighFrom = high.limit, high.usage, high.from
	}
}

// memStat reads one key of a cgroup's memory.stat (bytes); 0 when the
// file or key cannot be read, which leaves the whole usage counted.
func (g *Gatherer) memStat(file, key string) uint64 {
	b, err := os.ReadFile(g.path(file))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseUint(f[1], 10, 64)
			return n
		}
	}
	return 0
}
