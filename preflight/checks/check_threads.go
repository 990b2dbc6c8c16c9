package checks

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/unitname"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/profiles"
)

// reservedPIDs are the PIDs below which the kernel never wraps around
// (RESERVED_PIDS in kernel/pid.c): kernel.pid_max less these is what
// tasks can be numbered with.
const reservedPIDs = 300

func init() {
	register(CheckDef{ID: "iotdb.threads", Doc: "one thread per client session fits kernel.pid_max, kernel.threads-max, the DataNode's RLIMIT_NPROC and its cgroup pids.max (systemd TasksMax)",
		Roles: iotdbOnly, Func: checkIoTDBThreads})
}

// threadRoom is one bound on the threads a process can still start.
type threadRoom struct {
	name   string // "kernel.pid_max", "RLIMIT_NPROC", ...
	room   int64  // tasks it can still start
	obs    string
	remedy string
}

// tasksMaxRemedy is the remedy for a pids.max (cgroup file) or TasksMax=
// (from: "TasksMax of UNIT"; slice set when it is the TasksMax= of a
// slice above a unit that is not running) that leaves too little room
// for need tasks.
// The unit's own TasksMax= is persistent and hostprep tune owns a drop-in
// for it (systemd.tasks_max, written next to LimitNOFILE in
// /etc/systemd/system/UNIT.d/60-hostprep.conf, never lowering a higher
// one), so that is the remedy for a limit of the DataNode's own unit (or
// its not yet running unit's files); systemctl set-property only for a
// cgroup above it (a slice), whose TasksMax= tune does not write (naming
// the file and line that set it when known), and the container runtime's
// pids limit for a process no unit runs.
func tasksMaxRemedy(t facts.Target, p facts.ProcessFacts, from string, slice *facts.SliceRef, need uint64) string {
	unit := p.Unit
	if unit != "" {
		unit = unitname.Service(unit)
	}
	cg := path.Base(path.Dir(from)) // ".../system.slice/iotdb.service/pids.max": iotdb.service
	switch {
	case slice != nil:
		return sliceRemedy(*slice, fmt.Sprint(need), cmp.Or(unit, "the DataNode"), "hostprep tune writes only the service's own TasksMax=")
	case unit != "" && (from == "TasksMax of "+unit || cg == unit):
		own := fmt.Sprintf("(tune writes TasksMax= into its own drop-in /etc/systemd/system/%s.d/60-hostprep.conf and never lowers a higher one), then systemctl daemon-reload && systemctl restart %s", unit, unit)
		if t.Profile != "" && t.ProfileTasksMax >= need && ProfileUnit(t, unit) {
			return fmt.Sprintf("raise the unit's TasksMax= to at least %d: %s, whose systemd.tasks_max is %s %s; if it is applied already, %s names the file that overrides it",
				need, tuneApply(t), profiles.TasksMax(t.ProfileTasksMax), own, verifyBoot)
		}
		return fmt.Sprintf("raise the unit's TasksMax= to at least %d: give the profile systemd.tasks_max: %d (or infinity) and %s in systemd.services (the iotdb profile sets 16384), then %s %s",
			need, need, unit, tuneApply(t), own)
	case strings.HasSuffix(cg, ".slice"):
		return fmt.Sprintf("raise the TasksMax= of %s, the slice above the DataNode (hostprep tune writes only the service's own TasksMax=): systemctl set-property %s TasksMax=%d or more, or DefaultTasksMax= in /etc/systemd/system.conf", cg, cg, need)
	}
	return fmt.Sprintf("raise the pids.max of the cgroup that sets it (%s) to at least %d where it is set: the container's pids limit (docker run --pids-limit), or TasksMax= of the systemd unit or slice that owns it", from, need)
}

// profileUnit says whether unit (with its ".service") is one of the
// systemd.services of the target's profile (Service, AltServices).
func ProfileUnit(t facts.Target, unit string) bool {
	for _, s := range append([]string{t.Service}, t.AltServices...) {
		if unitname.Service(s) == unit {
			return true
		}
	}
	return false
}

// pidMaxLimit is the largest kernel.pid_max a 64-bit kernel accepts
// (PID_MAX_LIMIT, 4 * 1024 * 1024 in include/linux/threads.h).
const pidMaxLimit = 4194304

// threadRooms lists every bound on the threads the target can still start
// that preflight can see: host-wide kernel.pid_max (every thread takes a
// PID) and kernel.threads-max against the tasks on the host now, and for
// a process that was read its RLIMIT_NPROC against every task of its user
// (not enforced for root, CAP_SYS_RESOURCE or CAP_SYS_ADMIN) and the
// least room its cgroups' pids.max leave; for a systemd unit not running,
// the TasksMax= its next start gets. unseen names the bounds that could
// not be read.
func threadRooms(f *facts.Facts, t facts.Target) (rooms []threadRoom, unseen []string) {
	tasks := int64(f.HostTasks)
	if v, ok := f.SysInt("kernel.pid_max"); ok {
		fix := "raise kernel.pid_max (at most 4194304 on 64-bit): " + tuneApply(t, AtLeast(t, "kernel.pid_max", pidMaxLimit))
		if most := pidMaxLimit - reservedPIDs - tasks; most < int64(t.Sockets) {
			fix += fmt.Sprintf(" (even then it leaves room for only %s on this host)", plural.N(max(most, 0), "thread"))
		}
		rooms = append(rooms, threadRoom{"kernel.pid_max", v - reservedPIDs - tasks, fmt.Sprintf("kernel.pid_max %d with %s on the host", v, plural.N(tasks, "task")), fix})
	} else {
		unseen = append(unseen, "kernel.pid_max")
	}
	if v, ok := f.SysInt("kernel.threads-max"); ok {
		rooms = append(rooms, threadRoom{"kernel.threads-max", v - tasks, fmt.Sprintf("kernel.threads-max %d", v),
			"raise kernel.threads-max (its default is RAM / 128 KiB; each thread also needs its stack): " + tuneApply(t, AtLeast(t, "kernel.threads-max", tasks+int64(t.Sockets)))})
	} else {
		unseen = append(unseen, "kernel.threads-max")
	}
	p := f.Target
	ts := p.Tasks
	if p.PID == 0 && ts.UnitTasksMax != "" {
		// A unit not running: its TasksMax= is known, the threads the
		// JVM starts for itself and the limits of its user are not.
		switch {
		case ts.PidsSlice != nil:
			rooms = append(rooms, threadRoom{"TasksMax", int64(ts.PidsMax) - int64(ts.PidsCurrent), fmt.Sprintf("%s; the slice above it: %s with %s there now", ts.UnitTasksMax, ts.PidsFrom, plural.N(ts.PidsCurrent, "task")),
				tasksMaxRemedy(t, p, ts.PidsFrom, ts.PidsSlice, ts.PidsCurrent+uint64(t.Sockets))})
		case ts.PidsFrom != "":
			rooms = append(rooms, threadRoom{"TasksMax", int64(ts.PidsMax), ts.UnitTasksMax, tasksMaxRemedy(t, p, ts.PidsFrom, nil, uint64(t.Sockets))})
		}
		unseen = append(unseen, ts.Unseen...)
		return rooms, append(unseen, fmt.Sprintf("the DataNode's own threads and its RLIMIT_NPROC (%s is not running)", p.Unit))
	}
	if p.PID == 0 {
		why, _ := unseenWhy(f, t)
		return rooms, append(unseen, "the DataNode's RLIMIT_NPROC and cgroup pids.max ("+why+")")
	}
	unseen = append(unseen, ts.Unseen...)
	exempt := ts.RootUser || p.CapSysResource || ts.CapSysAdmin
	if !exempt && ts.NprocSoft != 0 && ts.NprocSoft != facts.Unlimited {
		used := max(ts.UserTasks, ts.Threads)
		rooms = append(rooms, threadRoom{"RLIMIT_NPROC", int64(ts.NprocSoft) - int64(used), fmt.Sprintf("soft RLIMIT_NPROC %d of pid %d, whose user runs %s (pid %d itself %s)", ts.NprocSoft, p.PID, plural.N(used, "task"), p.PID, plural.N(ts.Threads, "thread")),
			"raise the DataNode's RLIMIT_NPROC: LimitNPROC= in its unit, or an nproc line in /etc/security/limits.d for its user, and restart it"})
	}
	if ts.PidsFrom != "" && ts.PidsMax != facts.Unlimited {
		rooms = append(rooms, threadRoom{"pids.max", int64(ts.PidsMax) - int64(ts.PidsCurrent), fmt.Sprintf("pids.max %d with %s (%s and pids.current there)", ts.PidsMax, plural.N(ts.PidsCurrent, "task"), ts.PidsFrom),
			tasksMaxRemedy(t, p, ts.PidsFrom, nil, ts.PidsCurrent+uint64(t.Sockets))})
	}
	return rooms, unseen
}

// checkIoTDBThreads: IoTDB's DataNode serves each client session on a
// thread of its own (its Thrift RPC server: 20 connections to port 6667
// of IoTDB 2.0.10 added 20 threads to the DataNode, /proc/PID/status), so
// N sessions need N more threads than it runs now. A bound it cannot
// start them under fails the JVM's thread creation ("unable to create
// native thread"), whatever the fd limits allow.
func checkIoTDBThreads(f *facts.Facts, t facts.Target) verdict.Check {
	rooms, unseen := threadRooms(f, t)
	need := int64(t.Sockets)
	exp := fmt.Sprintf(">= %s more (one per session)", plural.N(need, "thread"))
	var obs []string
	least := -1
	for i, r := range rooms {
		obs = append(obs, r.obs)
		if least < 0 || r.room < rooms[least].room {
			least = i
		}
	}
	if least >= 0 && rooms[least].room < need {
		r := rooms[least]
		// Every bound short of the need, the tightest first: raising
		// only the tightest leaves the next one to fail.
		fixes := []string{r.remedy}
		for _, o := range rooms {
			if o.room < need && !slices.Contains(fixes, o.remedy) {
				fixes = append(fixes, o.remedy)
			}
		}
		return fail(fmt.Sprintf("%s leaves room for %s, fewer than the %s one per session needs: the DataNode cannot start their threads", r.name, plural.N(max(r.room, 0), "thread"), plural.N(need, "thread")),
			strings.Join(obs, "; "), exp, strings.Join(fixes, "; and ")+"; or spread the sessions over more DataNodes")
	}
	if len(unseen) > 0 {
		return warn(fmt.Sprintf("room for %s one per session as far as seen, but not seen: %s", plural.N(need, "thread"), strings.Join(unseen, ", ")),
			strings.Join(obs, "; "), exp, "run as root with the DataNode running (or hostprep preflight --pid PID) so its limits can be read")
	}
	return pass(fmt.Sprintf("room for %s more (one per session; least room: %s, %d)", plural.N(need, "thread"), rooms[least].name, rooms[least].room),
		strings.Join(obs, "; "), exp)
}

// sliceRemedy raises the setting s of a slice above a unit that is not
// running (unit names it for the message) to at least need (as written:
// tasks, or a size such as "512 MiB"): systemctl set-property on the
// slice, or the file and line that set it; why says why hostprep tune
// does not.
func sliceRemedy(s facts.SliceRef, need, unit, why string) string {
	return fmt.Sprintf("raise the %s= of %s, the slice above %s (%s=%s at %s; %s): systemctl set-property %s %s=%s or more, or edit %s and run systemctl daemon-reload",
		s.Key, s.Slice, unit, s.Key, s.Value, s.At, why, s.Slice, s.Key, need, s.At)
}
