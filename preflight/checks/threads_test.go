package checks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/profiles"
)

// TestIoTDBThreads: IoTDB's DataNode runs one thread per client session,
// so a target of N sessions needs N more threads under every bound on
// them. Field case: 40000 sessions passed every check on a host with
// kernel.pid_max 32768, where the JVM fails with "unable to create
// native thread" long before.
func TestIoTDBThreads(t *testing.T) {
	dataNode := func(extra string) string {
		return "host_tasks: 250\ntarget_process: {pid: 3022, nofile_soft: 1048576, nofile_hard: 1048576, threads: 70" + extra + "}\n"
	}
	for _, c := range []struct {
		name     string
		host     string
		sessions int
		want     verdict.Status
		limiting string // capacity's iotdb.threads resource names it
	}{
		{"pid_max 32768 cannot number 40000 threads", "sysctl: {kernel.pid_max: \"32768\"}\n" + dataNode(""), 40000, verdict.Fail, "kernel.pid_max"},
		{"systemd's old DefaultTasksMax 4915", dataNode(", pids_max: 4915, pids_current: 70"), 5000, verdict.Fail, "pids.max"},
		{"RLIMIT_NPROC of the DataNode's user", "capabilities_missing: [CAP_SYS_RESOURCE]\n" + dataNode(", nproc_soft: 4096"), 5000, verdict.Fail, "RLIMIT_NPROC"},
		{"RLIMIT_NPROC does not bind root", "capabilities_missing: [CAP_SYS_RESOURCE]\n" + dataNode(", nproc_soft: 4096, root_user: true"), 5000, verdict.Pass, "kernel.threads-max"},
		{"threads-max of a small host", "mem_total_bytes: 1073741824\n" + dataNode(""), 10000, verdict.Fail, "kernel.threads-max"},
		{"room everywhere", dataNode(", nproc_soft: unlimited, pids_max: max"), 10000, verdict.Pass, "kernel.threads-max"},
		{"RLIMIT_NPROC counts every task of the user", "capabilities_missing: [CAP_SYS_RESOURCE]\n" + dataNode(", nproc_soft: 4096, user_tasks: 4000"), 200, verdict.Fail, "RLIMIT_NPROC"},
		{"no DataNode found: its own bounds unseen", "", 100, verdict.Warn, ""},
	} {
		f := host(t, c.host)
		tg := facts.Target{Sockets: c.sessions, Role: facts.IoTDB, ConnRate: 10}
		if err := tg.Validate(); err != nil {
			t.Fatal(err)
		}
		got := testenv.CheckByID(t, Evaluate(f, tg), "iotdb.threads")
		if got.Status != c.want {
			t.Errorf("%s: %s: %s (observed %s)", c.name, got.Status, got.Summary, got.Observed)
		}
		if c.limiting == "" {
			if cp := CapacityOf(f, tg); !slices.ContainsFunc(cp.Unknown, func(u UnknownLimit) bool { return u.Check == "iotdb.threads" }) {
				t.Errorf("%s: capacity does not name the unseen thread bounds: %+v", c.name, cp.Unknown)
			}
			continue
		}
		var found bool
		for _, l := range CapacityOf(f, tg).Limits {
			if l.Check == "iotdb.threads" {
				found = true
				if !strings.Contains(l.Resource, c.limiting) || (c.want == verdict.Fail) != (l.Sockets < int64(c.sessions)) {
					t.Errorf("%s: capacity %+v, want limited by %s", c.name, l, c.limiting)
				}
			}
		}
		if !found {
			t.Errorf("%s: no iotdb.threads in the capacity", c.name)
		}
	}
}

// TestGatherTasks reads the bounds on a process's threads from a recorded
// tree: its thread count, real user and RLIMIT_NPROC from /proc/PID, the
// tasks of that user (every process's status), the host's tasks from
// /proc/loadavg, and the cgroup that leaves the least room, its own or one
// above it (field case: a parent with pids.max 20000 and 19000 tasks left
// room for 1000, and preflight counted the leaf's 5 against it), under
// cgroup v2 and under v1's pids controller. What cannot be read is named.
func TestGatherTasks(t *testing.T) {
	status := "Name:\tjava\nUid:\t107\t107\t107\t107\nThreads:\t70\nCapEff:\t0000000000000000\n"
	limits := factstest.LimitsFile + "Max processes             4096                 96365                processes \n"
	for _, c := range []struct {
		name      string
		files     map[string]string
		pidsMax   uint64
		pidsFrom  string
		pidsCurNo uint64
		unseen    int
	}{
		{"cgroup v2: the parent slice leaves less room", map[string]string{
			"proc/4242/cgroup":                                      "0::/system.slice/iotdb.service\n",
			"sys/fs/cgroup/cgroup.controllers":                      "cpu pids\n",
			"sys/fs/cgroup/system.slice/iotdb.service/pids.max":     "4915\n",
			"sys/fs/cgroup/system.slice/iotdb.service/pids.current": "71\n",
			"sys/fs/cgroup/system.slice/pids.max":                   "20000\n",
			"sys/fs/cgroup/system.slice/pids.current":               "19000\n",
		}, 20000, "/sys/fs/cgroup/system.slice/pids.max", 19000, 0},
		{"cgroup v1 pids controller", map[string]string{
			"proc/4242/cgroup":                      "9:pids:/iotdb\n8:memory:/iotdb\n0::/\n",
			"sys/fs/cgroup/pids/iotdb/pids.max":     "max\n",
			"sys/fs/cgroup/pids/iotdb/pids.current": "72\n",
		}, 0, "", 0, 0},
		{"no pids controller", map[string]string{"proc/4242/cgroup": "0::/\n"}, 0, "", 0, 0},
		{"cgroup file missing", map[string]string{"proc/4242/cgroup": ""}, 0, "", 0, 1},
	} {
		files := map[string]string{"proc/4242/status": status, "proc/4242/limits": limits, "proc/loadavg": "0.10 0.20 0.30 2/237 4300\n",
			"proc/4300/status": "Name:\tjava\nUid:\t107\t107\t107\t107\nThreads:\t30\n"}
		for k, v := range c.files {
			files[k] = v
		}
		f := gatherPID4242(t, factstest.FixtureRoot(t, files), c.files["proc/4242/cgroup"] == "")
		got := f.Target.Tasks
		if got.Threads != 70 || got.NprocSoft != 4096 || got.UserTasks != 100 || got.PidsMax != c.pidsMax || got.PidsFrom != c.pidsFrom || got.PidsCurrent != c.pidsCurNo || len(got.Unseen) != c.unseen || f.HostTasks != 237 {
			t.Errorf("%s: tasks %+v, host tasks %d; want pids %d/%d from %q, 100 tasks of the user, %d unseen", c.name, got, f.HostTasks, c.pidsCurNo, c.pidsMax, c.pidsFrom, c.unseen)
		}
	}
}

// TestUnitTasksMax: an IoTDB unit that is not running yet gets the
// TasksMax= of its files at its next start, else the manager's
// DefaultTasksMax=, else systemd's 15% of the host's task ceiling (4915
// with kernel.pid_max 32768: systemd-system.conf(5)). Field case: the
// DataNode was started by systemd after a preflight that could not see
// its cgroup, and stopped creating session threads at 4915 tasks.
// Values systemd ignores (0, above 100%, not a number) leave the one
// before in force; an empty TasksMax= goes back to the manager's
// default, an empty DefaultTasksMax= is no limit. A number is read as
// systemd's safe_atou64 reads it (0x4e20 is 20000; a decimal-only parser
// ignored it and judged the 15% default).
func TestUnitTasksMax(t *testing.T) {
	const unit = "lib/systemd/system/iotdb.service"
	for _, c := range []struct {
		name  string
		files map[string]string
		max   uint64 // 0: no limit
		from  string
		want  verdict.Status
	}{
		{"systemd's built-in 15%", nil, 4915, "systemd's built-in default, of 32767 tasks", verdict.Fail},
		{"DefaultTasksMax in a drop-in", map[string]string{"etc/systemd/system.conf.d/20-tasks.conf": "[Manager]\nDefaultTasksMax=12.5%\n"}, 4095, "20-tasks.conf:2", verdict.Fail},
		{"per mille", map[string]string{"etc/systemd/system.conf.d/20-tasks.conf": "[Manager]\nDefaultTasksMax=125‰\n"}, 4095, "20-tasks.conf:2", verdict.Fail},
		{"DefaultTasksMax=infinity", map[string]string{"etc/systemd/system.conf.d/20-tasks.conf": "[Manager]\nDefaultTasksMax=infinity\n"}, 0, "20-tasks.conf:2", verdict.Warn},
		{"empty DefaultTasksMax= is no limit", map[string]string{"etc/systemd/system.conf.d/20-tasks.conf": "[Manager]\nDefaultTasksMax=\n"}, 0, "no limit", verdict.Warn},
		{"the unit's own", map[string]string{unit: "[Service]\nExecStart=/bin/true\nTasksMax=20000\n"}, 20000, "iotdb.service:3", verdict.Warn},
		{"ignored values keep the one before", map[string]string{unit: "[Service]\nTasksMax=20000\n",
			"etc/systemd/system/iotdb.service.d/a.conf": "[Service]\nTasksMax=0\nTasksMax=101%\nTasksMax=lots\n"}, 20000, "iotdb.service:2", verdict.Warn},
		{"empty TasksMax= goes back to the manager's default", map[string]string{unit: "[Service]\nTasksMax=20000\n",
			"etc/systemd/system/iotdb.service.d/a.conf": "[Service]\nTasksMax=\n"}, 4915, "built-in", verdict.Fail},
		{"a percentage of the unit", map[string]string{unit: "[Service]\nTasksMax=50%\n"}, 16383, "of 32767 tasks", verdict.Warn},
		{"a number as systemd reads it (safe_atou64: 0x4e20)", map[string]string{unit: "[Service]\nTasksMax=0x4e20\n"}, 20000, "iotdb.service:2", verdict.Warn},
	} {
		files := map[string]string{unit: "[Service]\nExecStart=/bin/true\n", "proc/sys/kernel/pid_max": "32768\n", "proc/sys/kernel/threads-max": "192730\n"}
		for k, v := range c.files {
			files[k] = v
		}
		f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: factstest.FixtureRoot(t, files), Service: "iotdb"})
		if err != nil {
			t.Fatal(err)
		}
		ts := f.Target.Tasks
		if ts.PidsMax != c.max || (c.max == 0) != (ts.PidsFrom == "") || !strings.Contains(ts.UnitTasksMax, c.from) || !strings.Contains(ts.UnitTasksMax, "not running") {
			t.Errorf("%s: tasks %+v, want TasksMax %d from %q", c.name, ts, c.max, c.from)
		}
		tg := facts.Target{Sockets: 10000, Role: facts.IoTDB, ConnRate: 10}
		if err := tg.Validate(); err != nil {
			t.Fatal(err)
		}
		got := testenv.CheckByID(t, Evaluate(f, tg), "iotdb.threads")
		if got.Status != c.want || c.want == verdict.Fail && !strings.Contains(got.Summary, "TasksMax") ||
			c.want == verdict.Warn && !strings.Contains(got.Summary, "own threads") {
			t.Errorf("%s: %s: %s (observed %s)", c.name, got.Status, got.Summary, got.Observed)
		}
	}
}

// gatherPID4242 gathers the facts of pid 4242 in the recorded tree root,
// without its /proc/4242/cgroup when noCgroup.
func gatherPID4242(t *testing.T, root string, noCgroup bool) *facts.Facts {
	t.Helper()
	if noCgroup {
		if err := os.Remove(filepath.Join(root, "proc/4242/cgroup")); err != nil {
			t.Fatal(err)
		}
	}
	f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTasksMaxRemedy: iotdb.threads failing on the DataNode unit's own
// TasksMax= (its files when it is not running, or the pids.max of its own
// cgroup) points at hostprep tune, which writes TasksMax= into the
// unit's drop-in from the profile's systemd.tasks_max, naming the profile
// --profile gave (and, when that profile's systemd.tasks_max is enough,
// saying so); systemctl set-property only for a slice above it, whose
// TasksMax= tune does not write. Field case: the remedy named
// `systemctl set-property`, a runtime change hostprep tune neither
// journals nor rolls back.
func TestTasksMaxRemedy(t *testing.T) {
	p, err := profiles.Load("iotdb", nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := facts.TargetFromProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	const unit = "lib/systemd/system/iotdb-datanode.service"
	f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: factstest.FixtureRoot(t, map[string]string{unit: "[Service]\nExecStart=/bin/true\n",
		"proc/sys/kernel/pid_max": "32768\n", "proc/sys/kernel/threads-max": "192730\n"}), Service: "iotdb-datanode"})
	if err != nil {
		t.Fatal(err)
	}
	running := host(t, "host_tasks: 250\ntarget_process: {pid: 3022, managed_by: systemd, unit: iotdb-datanode.service, nofile_soft: 1048576, nofile_hard: 1048576, threads: 70, pids_max: 4915, pids_current: 70}\n")
	own := tg // a profile of the admin's without tasks_max
	own.Profile, own.ProfileTasksMax = "/srv/iotdb.yaml", 0
	for _, c := range []struct {
		name     string
		f        *facts.Facts
		tg       facts.Target
		pidsFrom string // the cgroup file gathered for a running DataNode
		want     []string
		not      string
	}{
		{"not running: the unit's files (systemd's 15%)", f, tg, "", []string{"`hostprep tune apply --profile iotdb`, whose systemd.tasks_max is 16384", "`hostprep tune verify --boot` names the file", "/etc/systemd/system/iotdb-datanode.service.d/60-hostprep.conf", "systemctl daemon-reload && systemctl restart iotdb-datanode.service"}, "set-property"},
		{"not running, a profile without tasks_max", f, own, "", []string{"give the profile systemd.tasks_max: 10000 (or infinity) and iotdb-datanode.service in systemd.services (the iotdb profile sets 16384), then `hostprep tune apply --profile /srv/iotdb.yaml`", "/etc/systemd/system/iotdb-datanode.service.d/60-hostprep.conf"}, "set-property"},
		{"running: its own cgroup", running, tg, "/sys/fs/cgroup/system.slice/iotdb-datanode.service/pids.max", []string{"at least 10070: `hostprep tune apply --profile iotdb`"}, "set-property"},
		{"running: the slice above it", running, tg, "/sys/fs/cgroup/system.slice/pids.max", []string{"systemctl set-property system.slice TasksMax=10070"}, "hostprep tune apply"},
	} {
		if c.pidsFrom != "" {
			c.f.Target.Tasks.PidsFrom = c.pidsFrom
		}
		got := testenv.CheckByID(t, Evaluate(c.f, c.tg), "iotdb.threads")
		if got.Status != verdict.Fail {
			t.Errorf("%s: iotdb.threads %s: %s", c.name, got.Status, got.Summary)
		}
		for _, w := range c.want {
			if !strings.Contains(got.Remedy, w) {
				t.Errorf("%s: iotdb.threads remedy %q does not say %q", c.name, got.Remedy, w)
			}
		}
		if strings.Contains(got.Remedy, c.not) {
			t.Errorf("%s: iotdb.threads remedy %q says %q", c.name, got.Remedy, c.not)
		}
	}
}
