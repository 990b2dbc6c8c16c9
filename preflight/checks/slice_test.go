package checks

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// TestSliceLimitsNotRunning: a unit that is not running is judged on the
// limits of the slice its next start puts it in, that slice found as
// systemd 252 finds it. Field cases (a tester, against the real
// systemd): brk.service with Slice=brk.slice and a drop-in's `Slice=`
// (or `Slice=brk .slice`, or `Slice=%i.slice` in a unit that is no
// instance) stays in brk.slice, whose MemoryMax=64M holds far fewer than
// 100000 sockets, and preflight passed it (it took those for a reset or
// a slice's name); brk-tpl@a.service with Slice=brk-%i.slice goes in
// brk-a.slice; a slice's TasksMax=100 bounds iotdb.threads below the
// unit's own TasksMax=20000. The remedy names the slice, its setting and
// the file and line that set it. A Slice= with a specifier taken from
// the host leaves the slice unknown: a warning naming it, never a pass.
func TestSliceLimitsNotRunning(t *testing.T) {
	const unit, dropin = "lib/systemd/system/brk.service", "etc/systemd/system/brk.service.d/50-slice.conf"
	const brkSlice = "etc/systemd/system/brk.slice"
	for _, c := range []struct {
		name, service string
		files         map[string]string
		role          facts.Role
		check         string
		want          verdict.Status
		says          []string // in the summary, observed and remedy
	}{
		{"an empty Slice= in a drop-in keeps brk.slice", "brk", map[string]string{unit: "[Service]\nSlice=brk.slice\n", dropin: "[Service]\nSlice=\n", brkSlice: "[Slice]\nMemoryMax=64M\n"},
			facts.Broker, "mem.available", verdict.Fail, []string{"of brk.slice (Slice= at /lib/systemd/system/brk.service:2)", "systemctl set-property brk.slice MemoryMax=", "MemoryMax=64M at /etc/systemd/system/brk.slice:2"}},
		{"Slice=brk .slice is no slice's name", "brk", map[string]string{unit: "[Service]\nSlice=brk.slice\n", dropin: "[Service]\nSlice=brk .slice\n", brkSlice: "[Slice]\nMemoryMax=64M\n"},
			facts.Broker, "mem.available", verdict.Fail, []string{"of brk.slice", "systemctl set-property brk.slice MemoryMax="}},
		{"Slice=%i.slice in a unit that is no instance is .slice", "brk", map[string]string{unit: "[Service]\nSlice=brk.slice\n", dropin: "[Service]\nSlice=%i.slice\n", brkSlice: "[Slice]\nMemoryMax=64M\n"},
			facts.Broker, "mem.available", verdict.Fail, []string{"of brk.slice"}},
		{"Slice=brk-%i.slice of a template's instance", "brk-tpl@a", map[string]string{"lib/systemd/system/brk-tpl@.service": "[Service]\nSlice=brk-%i.slice\n", "etc/systemd/system/brk-a.slice": "[Slice]\nMemoryMax=64M\n"},
			facts.Broker, "mem.available", verdict.Fail, []string{"of brk-a.slice (Slice= at /lib/systemd/system/brk-tpl@.service:2)", "systemctl set-property brk-a.slice MemoryMax=", "/etc/systemd/system/brk-a.slice:2"}},
		{"a slice above the slice", "brk", map[string]string{unit: "[Service]\nSlice=brk-x.slice\nMemoryMax=1G\n", brkSlice: "[Slice]\nMemoryMax=64M\n"},
			facts.Broker, "mem.available", verdict.Fail, []string{"of brk.slice (usage", "systemctl set-property brk.slice MemoryMax="}},
		{"Slice=%H.slice is not read", "brk", map[string]string{unit: "[Service]\nSlice=brk.slice\n", dropin: "[Service]\nSlice=%H.slice\n", brkSlice: "[Slice]\nMemoryMax=64M\n"},
			facts.Broker, "mem.available", verdict.Warn, []string{"Slice=%H.slice (/etc/systemd/system/brk.service.d/50-slice.conf:2) takes %H from the host", "hostprep preflight --pid PID), whose cgroup names its slice"}},
		{"the slice's TasksMax=100 below the unit's 20000", "brk", map[string]string{unit: "[Service]\nSlice=brk.slice\nTasksMax=20000\n", brkSlice: "[Slice]\nTasksMax=100\n"},
			facts.IoTDB, "iotdb.threads", verdict.Fail, []string{"TasksMax=100 (/etc/systemd/system/brk.slice:2) of brk.slice", "systemctl set-property brk.slice TasksMax=1000 or more", "TasksMax=100 at /etc/systemd/system/brk.slice:2"}},
		{"the tasks the slice's cgroup holds count", "brk", map[string]string{unit: "[Service]\nSlice=brk.slice\nTasksMax=20000\n", brkSlice: "[Slice]\nTasksMax=1500\n",
			"sys/fs/cgroup/cgroup.controllers": "memory pids\n", "sys/fs/cgroup/brk.slice/pids.current": "600\n"},
			facts.IoTDB, "iotdb.threads", verdict.Fail, []string{"with 600 tasks there now", "/sys/fs/cgroup/brk.slice/pids.current", "systemctl set-property brk.slice TasksMax=1600 or more"}},
		{"a slice's TasksMax= above the unit's does not bind", "brk", map[string]string{unit: "[Service]\nSlice=brk.slice\nTasksMax=100\n", brkSlice: "[Slice]\nTasksMax=20000\n"},
			facts.IoTDB, "iotdb.threads", verdict.Fail, []string{"TasksMax=100 (/lib/systemd/system/brk.service:3)", "hostprep tune apply"}},
	} {
		files := map[string]string{"proc/sys/kernel/pid_max": "4194304\n", "proc/sys/kernel/threads-max": "192730\n"}
		for k, v := range c.files {
			files[k] = v
		}
		f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: factstest.FixtureRoot(t, files), Service: c.service})
		if err != nil {
			t.Fatal(err)
		}
		tg := facts.Target{Sockets: 100000, Role: c.role, ConnRate: 10}
		if c.role == facts.IoTDB {
			tg.Sockets = 1000
		}
		if err := tg.Validate(); err != nil {
			t.Fatal(err)
		}
		got := testenv.CheckByID(t, Evaluate(f, tg), c.check)
		all := got.Summary + " | " + got.Observed + " | " + got.Remedy
		if got.Status != c.want {
			t.Errorf("%s: %s %s: %s", c.name, c.check, got.Status, all)
			continue
		}
		for _, s := range c.says {
			if !strings.Contains(all, s) {
				t.Errorf("%s: %s %s does not say %q: %s", c.name, c.check, got.Status, s, all)
			}
		}
	}
}

// TestMemoryLimitUnderDefaultMemoryLow: systemd 252 takes the legacy
// MemoryLimit= for the hard limit only where no cgroup v2 style setting
// is in force (unit_has_unified_memory_config), and a MemoryLow= or
// MemoryMin= in force counts whether the unit sets it or inherits it as
// the DefaultMemoryLow=/DefaultMemoryMin= of a slice above it
// (unit_get_ancestor_memory_low/min): MemoryLimit=64M under such a slice
// is no limit, and preflight failed it. A MemoryLow= of the unit's own
// (even 0) wins over the slice's default; a slice's own MemoryLimit=
// goes by the slices above it the same way.
func TestMemoryLimitUnderDefaultMemoryLow(t *testing.T) {
	const unit, brkSlice = "lib/systemd/system/brk.service", "etc/systemd/system/brk.slice"
	for _, c := range []struct {
		name  string
		files map[string]string
		want  verdict.Status
	}{
		{"MemoryLimit= alone", map[string]string{unit: "[Service]\nSlice=brk.slice\nMemoryLimit=64M\n", brkSlice: "[Slice]\n"}, verdict.Fail},
		{"under DefaultMemoryLow=", map[string]string{unit: "[Service]\nSlice=brk.slice\nMemoryLimit=64M\n", brkSlice: "[Slice]\nDefaultMemoryLow=1M\n"}, verdict.Pass},
		{"under DefaultMemoryMin= two slices up", map[string]string{unit: "[Service]\nSlice=brk-x.slice\nMemoryLimit=64M\n", brkSlice: "[Slice]\nDefaultMemoryMin=1M\n"}, verdict.Pass},
		{"its own MemoryLow=0 wins", map[string]string{unit: "[Service]\nSlice=brk.slice\nMemoryLimit=64M\nMemoryLow=0\n", brkSlice: "[Slice]\nDefaultMemoryLow=1M\n"}, verdict.Fail},
		{"a slice's MemoryLimit= under its parent's DefaultMemoryLow=", map[string]string{unit: "[Service]\nSlice=brk-x.slice\n",
			"etc/systemd/system/brk-x.slice": "[Slice]\nMemoryLimit=64M\n", brkSlice: "[Slice]\nDefaultMemoryLow=1M\n"}, verdict.Pass},
		{"a slice's MemoryLimit= alone", map[string]string{unit: "[Service]\nSlice=brk-x.slice\n", "etc/systemd/system/brk-x.slice": "[Slice]\nMemoryLimit=64M\n"}, verdict.Fail},
	} {
		f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: factstest.FixtureRoot(t, c.files), Service: "brk"})
		if err != nil {
			t.Fatal(err)
		}
		tg := facts.Target{Sockets: 100000, Role: facts.Broker, ConnRate: 10}
		if err := tg.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := testenv.CheckByID(t, Evaluate(f, tg), "mem.available"); got.Status != c.want {
			t.Errorf("%s: mem.available %s, want %s: %s (observed %s)", c.name, got.Status, c.want, got.Summary, got.Observed)
		}
	}
}

// TestServiceTemplateRefused: a template unit (brk-tpl@.service) cannot
// be started, so it has no limits to judge: --service naming one is bad
// input (exit 2) in one line naming --service and the fix, an instance
// (brk-tpl@NAME.service); preflight judged it as a unit.
func TestServiceTemplateRefused(t *testing.T) {
	root := factstest.FixtureRoot(t, map[string]string{"lib/systemd/system/brk-tpl@.service": "[Service]\nExecStart=/bin/true\n"})
	for _, service := range []string{"brk-tpl@.service", "brk-tpl@"} {
		_, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: service})
		if exitcode.Code(err) != exitcode.BadInput || err == nil || strings.Contains(err.Error(), "\n") ||
			!strings.Contains(err.Error(), "--service brk-tpl@.service") || !strings.Contains(err.Error(), "--service brk-tpl@NAME.service") {
			t.Errorf("--service %s: %v (exit %d), want exit 2 naming --service and brk-tpl@NAME.service", service, err, exitcode.Code(err))
		}
	}
}

// TestMemRemedyRunningUnderSlice: a running broker whose binding memory
// limit is the memory.max of the slice above its service's cgroup is told
// to raise that slice's MemoryMax= (systemctl set-property on the slice),
// not its unit's, which would not help.
func TestMemRemedyRunningUnderSlice(t *testing.T) {
	const v2 = "sys/fs/cgroup/"
	files := map[string]string{
		"proc/4242/cgroup":                                    "0::/brk.slice/mosquitto.service\n",
		"proc/4242/limits":                                    strings.Replace(factstest.LimitsFile, "1024                 524288", "1048576              1048576", 1),
		v2 + "cgroup.controllers":                             "memory pids\n",
		v2 + "brk.slice/cgroup.controllers":                   "memory pids\n",
		v2 + "brk.slice/memory.max":                           "67108864\n",
		v2 + "brk.slice/memory.current":                       "1048576\n",
		v2 + "brk.slice/mosquitto.service/cgroup.controllers": "memory pids\n",
		v2 + "brk.slice/mosquitto.service/memory.max":         "max\n",
		v2 + "brk.slice/mosquitto.service/memory.current":     "1048576\n",
	}
	f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: factstest.FixtureRoot(t, files), PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	tg := facts.Target{Sockets: 100000, Role: facts.Broker, ConnRate: 10}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	got := testenv.CheckByID(t, Evaluate(f, tg), "mem.available")
	if got.Status != verdict.Fail || !strings.Contains(got.Remedy, "systemctl set-property brk.slice MemoryMax=392M or more") ||
		!strings.Contains(got.Remedy, "/sys/fs/cgroup/brk.slice/memory.max") {
		t.Errorf("mem.available %s: %s; remedy %s", got.Status, got.Summary, got.Remedy)
	}
}
