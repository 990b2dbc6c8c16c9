package checks

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// TestUnitMemoryMax: a broker unit that is not running is judged on the
// memory limit its next start gets from its unit file, drop-ins and
// slice, as a running one is on its memory cgroup. Field shape: a unit
// with MemoryMax=64M passed mem.available for 100000 sockets (about 390
// MiB of kernel memory) on the host's MemAvailable, and its broker would
// be OOM-killed after some 16000. Values systemd ignores keep the one
// before, an empty MemoryMax= is no limit again, MemoryLimit= counts
// only without MemoryMax=/MemoryHigh= (systemd's
// unit_has_unified_memory_config), MemoryHigh= warns, a percentage is of
// MemTotal (16000 MiB here) rounded down to a page, and a slice's limit
// counts with what the slice's cgroup uses now.
func TestUnitMemoryMax(t *testing.T) {
	const unit = "lib/systemd/system/mosquitto.service"
	const v1 = "sys/fs/cgroup/memory/"
	const mem64 = 64 << 20
	for _, c := range []struct {
		name     string
		files    map[string]string
		dirs     []string // in place of a file: cannot be read
		want     verdict.Status
		from     string // in Target.Memory's From (or the summary when warn)
		capSocks int64  // 0: MemAvailable's
	}{
		{"no MemoryMax: MemAvailable", nil, nil, verdict.Pass, "", 0},
		{"MemoryMax=64M in the unit", map[string]string{unit: "[Service]\nExecStart=/usr/sbin/mosquitto\nMemoryMax=64M\n"}, nil, verdict.Fail, "MemoryMax=64M (/lib/systemd/system/mosquitto.service:3) of mosquitto.service (not running)", mem64 / 4096},
		{"in a drop-in, bytes", map[string]string{"etc/systemd/system/mosquitto.service.d/50-mem.conf": "[Service]\nMemoryMax=67108864\n"}, nil, verdict.Fail, "50-mem.conf:2", mem64 / 4096},
		{"an empty MemoryMax= is no limit again", map[string]string{unit: "[Service]\nMemoryMax=64M\n",
			"etc/systemd/system/mosquitto.service.d/50-mem.conf": "[Service]\nMemoryMax=\n"}, nil, verdict.Pass, "", 0},
		{"values systemd ignores keep the one before", map[string]string{unit: "[Service]\nMemoryMax=64M\n",
			"etc/systemd/system/mosquitto.service.d/50-mem.conf": "[Service]\nMemoryMax=lots\nMemoryMax=64m\nMemoryMax=0\nMemoryMax=101%\n"}, nil, verdict.Fail, "mosquitto.service:2", mem64 / 4096},
		{"legacy MemoryLimit=", map[string]string{unit: "[Service]\nMemoryLimit=0.0625G\n"}, nil, verdict.Fail, "MemoryLimit=0.0625G", mem64 / 4096},
		{"MemoryLimit= does not count beside MemoryHigh=", map[string]string{unit: "[Service]\nMemoryLimit=64M\nMemoryHigh=1G\n"}, nil, verdict.Pass, "", 0},
		{"MemoryHigh= below the need warns", map[string]string{unit: "[Service]\nMemoryHigh=100M\n"}, nil, verdict.Warn, "MemoryHigh=100M", 0},
		{"a percentage of MemTotal", map[string]string{unit: "[Service]\nMemoryMax=1%\n"}, nil, verdict.Fail, "MemoryMax=1%", 16384000 * 1024 / 100 / 4096},
		{"infinity", map[string]string{unit: "[Service]\nMemoryMax=infinity\n"}, nil, verdict.Pass, "", 0},
		{"system.slice's limit less its usage", map[string]string{
			"etc/systemd/system/system.slice.d/50-mem.conf": "[Slice]\nMemoryMax=128M\n",
			v1 + "memory.limit_in_bytes":                    "9223372036854771712\n",
			v1 + "system.slice/memory.usage_in_bytes":       "100663296\n", // 96 MiB, 32 of them inactive page cache
			v1 + "system.slice/memory.stat":                 "cache 1\ntotal_inactive_file 33554432\n",
		}, nil, verdict.Fail, "MemoryMax=128M (/etc/systemd/system/system.slice.d/50-mem.conf:2) of system.slice (usage: /sys/fs/cgroup/memory/system.slice/memory.usage_in_bytes)", mem64 / 4096},
		{"its own Slice=, not running either", map[string]string{
			unit:                                  "[Service]\nSlice=brokers.slice\n",
			"etc/systemd/system/brokers.slice":    "[Slice]\nMemoryMax=64M\n",
			"etc/systemd/system/system.slice.d/x": "[Slice]\nMemoryMax=1M\n", // not its slice
		}, nil, verdict.Fail, "of brokers.slice (Slice= at /lib/systemd/system/mosquitto.service:2) (usage: none now", mem64 / 4096},
		{"a slice's usage that cannot be read warns", map[string]string{
			"etc/systemd/system/system.slice.d/50-mem.conf": "[Slice]\nMemoryMax=8G\n",
			v1 + "memory.limit_in_bytes":                    "9223372036854771712\n",
		}, []string{v1 + "system.slice/memory.usage_in_bytes"}, verdict.Warn, "not seen: the memory usage of system.slice", 0},
	} {
		files := map[string]string{unit: "[Service]\nExecStart=/usr/sbin/mosquitto\n"}
		for k, v := range c.files {
			files[k] = v
		}
		root := factstest.FixtureRoot(t, files)
		for _, d := range c.dirs {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "mosquitto"})
		if err != nil {
			t.Fatal(err)
		}
		if f.Target.PID != 0 || f.Target.Unit != "mosquitto.service" {
			t.Fatalf("%s: target %+v, want the unit not running", c.name, f.Target)
		}
		m := f.Target.Memory
		if c.want != verdict.Warn && !strings.Contains(m.From, c.from) {
			t.Errorf("%s: memory %+v, want the limit from %q", c.name, m, c.from)
		}
		tg := facts.Target{Sockets: 100000, Role: facts.Broker, ConnRate: 10}
		if err := tg.Validate(); err != nil {
			t.Fatal(err)
		}
		got := testenv.CheckByID(t, Evaluate(f, tg), "mem.available")
		if got.Status != c.want || c.want != verdict.Pass && !strings.Contains(got.Summary, c.from) {
			t.Errorf("%s: mem.available %s: %s (observed %s); want %s naming %q", c.name, got.Status, got.Summary, got.Observed, c.want, c.from)
		}
		cp := CapacityOf(f, tg)
		i := slices.IndexFunc(cp.Limits, func(l CapacityLimit) bool { return l.Check == "mem.available" })
		want := c.capSocks
		if want == 0 {
			want = 12000000 * 1024 / 4096
		}
		if i < 0 || cp.Limits[i].Sockets != want || c.capSocks != 0 && !strings.Contains(cp.Limits[i].Resource, c.from) {
			t.Errorf("%s: capacity %+v, want mem.available at %d sockets", c.name, cp.Limits, want)
		}
	}
}

// TestUnitMemoryLoadedOrFiles: where systemd has the unit loaded, what
// it has loaded (systemctl show) is what the next start uses until
// `systemctl daemon-reload`, its files what it gets after it and at the
// next boot: mem.available judges the lower and names both, as for
// TasksMax= (a recorded systemctl show answer). A recording from before
// hostprep asked for the memory properties is judged on the files.
func TestUnitMemoryLoadedOrFiles(t *testing.T) {
	const unlimited = "MemoryHigh=infinity\nMemoryLimit=infinity\nMemorySwapMax=infinity\nMemoryMin=0\nMemoryLow=0\n"
	for _, c := range []struct {
		name, dropin, show string
		limit              uint64
		from               []string
	}{
		{"loaded lower", "", "MemoryMax=67108864\n" + unlimited, 64 << 20,
			[]string{"MemoryMax=67108864 (systemctl show emqx.service, not running); systemd has MemoryMax=67108864 loaded but the files say no limit", "daemon-reload"}},
		{"files lower", "[Service]\nMemoryMax=64M\n", "MemoryMax=infinity\n" + unlimited, 64 << 20,
			[]string{"MemoryMax=64M (/etc/systemd/system/emqx.service.d/60-hostprep.conf:2) of emqx.service (not running); systemd has MemoryMax=infinity loaded", "judged on the lower"}},
		{"same", "[Service]\nMemoryMax=64M\n", "MemoryMax=67108864\n" + unlimited, 64 << 20,
			[]string{"MemoryMax=64M (/etc/systemd/system/emqx.service.d/60-hostprep.conf:2) of emqx.service (not running)"}},
		{"a recording without them", "[Service]\nMemoryMax=64M\n", "", 64 << 20,
			[]string{"MemoryMax=64M (/etc/systemd/system/emqx.service.d/60-hostprep.conf:2) of emqx.service (not running)"}},
	} {
		manifest := fmt.Sprintf(`{"format": 1, "page_size_bytes": 4096, "systemctl_show": {"emqx.service": %q}}`,
			"MainPID=0\nLimitNOFILE=65536\nLimitNOFILESoft=65536\nUser=\nLoadState=loaded\n"+c.show)
		root := factstest.FixtureRoot(t, map[string]string{"etc/systemd/system/emqx.service.d/60-hostprep.conf": c.dropin, facts.RecordManifest: manifest})
		f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "emqx"})
		if err != nil {
			t.Fatal(err)
		}
		m := f.Target.Memory
		if m.Limit != c.limit {
			t.Errorf("%s: memory %+v, want limit %d", c.name, m, c.limit)
		}
		for _, s := range c.from {
			if !strings.Contains(m.From, s) {
				t.Errorf("%s: from %q does not say %q", c.name, m.From, s)
			}
		}
		if differ := c.name == "loaded lower" || c.name == "files lower"; strings.Contains(m.From, "daemon-reload") != differ {
			t.Errorf("%s: from %q", c.name, m.From)
		}
	}
}

// TestUnitSlice: a unit without Slice= goes in system.slice, an instance
// of a template in the template's own slice below it, named with
// systemd's escaping (systemd 252 --test prints "Slice:
// system-foo\x2dbar.slice" for foo-bar@x.y.service); each dash of a
// slice's name is a level, whose cgroup is below its parent's. A Slice=
// systemd ignores keeps the one before (config_parse_unit_slice logs
// and ignores an empty value, a name that is not a slice's, and a
// specifier it does not know: %I, %P, %J), the unit's own specifiers are
// expanded (%i is "" for a unit that is no instance), and a specifier
// from the host, or a slice systemd cannot load, leaves the slice
// unknown, said why (TestSliceOracle checks these against systemd).
func TestUnitSlice(t *testing.T) {
	for _, c := range []struct {
		unit, file, slice, cgroup string
		chain                     []string
		why                       string
	}{
		{"mosquitto.service", "[Service]\nExecStart=/bin/true\n", "system.slice", "/system.slice", []string{"system.slice"}, ""},
		{"foo-bar@x.y.service", "[Service]\n", `system-foo\x2dbar.slice`, `/system.slice/system-foo\x2dbar.slice`, []string{`system-foo\x2dbar.slice`, "system.slice"}, ""},
		{"emqx.service", "[Service]\nSlice=brokers-mqtt.slice\nSlice=nonsense\n", "brokers-mqtt.slice", "/brokers.slice/brokers-mqtt.slice", []string{"brokers-mqtt.slice", "brokers.slice"}, ""},
		{"emqx.service", "[Service]\nSlice=-.slice\n", "-.slice", "/", nil, ""},
		{"brk.service", "[Service]\nSlice=brk.slice\nSlice=\n", "brk.slice", "/brk.slice", []string{"brk.slice"}, ""},
		{"brk.service", "[Service]\nSlice=brk.slice\nSlice=brk .slice\nSlice=foo@bar.slice\nSlice=foo@.slice\nSlice=brk.service\n", "brk.slice", "/brk.slice", []string{"brk.slice"}, ""},
		{"brk.service", "[Service]\nSlice=brk.slice\nSlice=%i.slice\nSlice=%I.slice\nSlice=%P.slice\nSlice=%z.slice\n", "brk.slice", "/brk.slice", []string{"brk.slice"}, ""},
		{"brk-tpl@a.service", "[Service]\nSlice=brk-%i.slice\n", "brk-a.slice", "/brk.slice/brk-a.slice", []string{"brk-a.slice", "brk.slice"}, ""},
		{"brk-tpl@a.service", "[Service]\nSlice=%p-%j-x%%.slice\nSlice=%p-%j.slice\n", "brk-tpl-tpl.slice", "/brk.slice/brk-tpl.slice/brk-tpl-tpl.slice", []string{"brk-tpl-tpl.slice", "brk-tpl.slice", "brk.slice"}, ""},
		{"brk-x.service", "[Service]\nSlice=%N.slice\n", "brk-x.slice", "/brk.slice/brk-x.slice", []string{"brk-x.slice", "brk.slice"}, ""},
		{"brk.service", "[Service]\nSlice=brk.slice\nSlice=%H.slice\n", "", "/", nil, "Slice=%H.slice (/etc/systemd/system/brk.service:3) takes %H from the host"},
		{"brk.service", "[Service]\nSlice=%H.slice\nSlice=brk.slice\n", "brk.slice", "/brk.slice", []string{"brk.slice"}, ""},
		{"brk.service", "[Service]\nSlice=a--b.slice\n", "a--b.slice", "", nil, "Slice=a--b.slice (/etc/systemd/system/brk.service:2) names a slice systemd cannot load"},
	} {
		name := c.unit
		if tmpl, ok := hostconf.TemplateOf(c.unit); ok {
			name = tmpl
		}
		root := factstest.FixtureRoot(t, map[string]string{"etc/systemd/system/" + name: c.file})
		_, files, err := hostconf.UnitNofile(root, c.unit)
		if err != nil {
			t.Fatal(err)
		}
		slice, _, why, err := hostconf.UnitSliceIn(root, c.unit, files, nil)
		if c.why != "" {
			// a slice that cannot be judged: only why counts
			if err != nil || slice != c.slice || !strings.Contains(why, c.why) {
				t.Errorf("%s %q: slice %q (%v; %q); want %q (%q)", c.unit, c.file, slice, err, why, c.slice, c.why)
			}
			continue
		}
		if err != nil || slice != c.slice || facts.SliceCgroup(slice) != c.cgroup || !slices.Equal(hostconf.SliceChain(slice), c.chain) || why != "" {
			t.Errorf("%s %q: slice %q (%v; %q), cgroup %s, chain %q; want %s, %s, %q (%q)", c.unit, c.file, slice, err, why, facts.SliceCgroup(slice), hostconf.SliceChain(slice), c.slice, c.cgroup, c.chain, c.why)
		}
	}
}

// TestMemBuffersChargedToCgroup: on cgroup v2 socket buffers are charged
// to the target's memory cgroup (memory.stat sock), so mem.buffers also
// holds the sockets' own kernel memory and a page of buffered data per
// socket against the room its limit leaves, for a running target and for
// a unit that is not running alike; cgroup v1 does not charge them (only
// to a kmem.tcp limit of its own). Field shape: 100000 sockets in a
// 600 MiB cgroup passed mem.available (391 MiB) and mem.buffers (tcp_mem
// against the host's 11 GiB), and about 390 MiB of queued data more
// would OOM-kill the broker.
func TestMemBuffersChargedToCgroup(t *testing.T) {
	const v2 = "sys/fs/cgroup/"
	const leaf = v2 + "system.slice/mosquitto.service/"
	running := func(max string) map[string]string {
		return map[string]string{
			"proc/4242/cgroup":                     "0::/system.slice/mosquitto.service\n",
			v2 + "cgroup.controllers":              "memory pids\n",
			v2 + "system.slice/cgroup.controllers": "memory\n",
			v2 + "system.slice/memory.max":         "max\n",
			leaf + "cgroup.controllers":            "memory\n",
			leaf + "memory.max":                    max,
			leaf + "memory.current":                "1048576\n",
		}
	}
	const unit = "lib/systemd/system/mosquitto.service"
	for _, c := range []struct {
		name  string
		files map[string]string
		pid   int
		want  verdict.Status
		says  string
	}{
		{"v2 cgroup of 600 MiB", running("629145600\n"), 4242, verdict.Warn, "/sys/fs/cgroup/system.slice/mosquitto.service/memory.max"},
		{"v2 cgroup of 2 GiB", running("2147483648\n"), 4242, verdict.Pass, "MemAvailable"},
		{"v1 does not charge buffers to memory.limit_in_bytes", map[string]string{
			"proc/4242/cgroup":                                                          "4:memory:/system.slice/mosquitto.service\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":                                "9223372036854771712\n",
			"sys/fs/cgroup/memory/memory.usage_in_bytes":                                "1048576\n",
			"sys/fs/cgroup/memory/system.slice/memory.limit_in_bytes":                   "9223372036854771712\n",
			"sys/fs/cgroup/memory/system.slice/mosquitto.service/memory.limit_in_bytes": "629145600\n",
			"sys/fs/cgroup/memory/system.slice/mosquitto.service/memory.usage_in_bytes": "1048576\n",
		}, 4242, verdict.Pass, "MemAvailable"},
		{"a unit with MemoryMax=600M", map[string]string{unit: "[Service]\nMemoryMax=600M\n"}, 0, verdict.Warn, "MemoryMax=600M (/lib/systemd/system/mosquitto.service:2)"},
		{"a unit without", map[string]string{unit: "[Service]\nExecStart=/usr/sbin/mosquitto\n"}, 0, verdict.Pass, "MemAvailable"},
	} {
		c.files["proc/4242/limits"] = strings.Replace(factstest.LimitsFile, "1024                 524288", "1048576              1048576", 1)
		o := facts.GatherOptions{Capacity: OwnerCapacity, Root: factstest.FixtureRoot(t, c.files), PID: c.pid}
		if c.pid == 0 {
			o.Service = "mosquitto"
		}
		f, err := facts.Gather(t.Context(), o)
		if err != nil {
			t.Fatal(err)
		}
		tg := facts.Target{Sockets: 100000, Role: facts.Broker, ConnRate: 10}
		if err := tg.Validate(); err != nil {
			t.Fatal(err)
		}
		checks := Evaluate(f, tg)
		if a := testenv.CheckByID(t, checks, "mem.available"); a.Status != verdict.Pass {
			t.Errorf("%s: mem.available %s: %s", c.name, a.Status, a.Summary)
		}
		got := testenv.CheckByID(t, checks, "mem.buffers")
		if got.Status != c.want || !strings.Contains(got.Summary, c.says) {
			t.Errorf("%s: mem.buffers %s: %s (observed %s); want %s naming %q", c.name, got.Status, got.Summary, got.Observed, c.want, c.says)
		}
	}
}
