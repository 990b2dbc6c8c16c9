package checks

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// v1Unlimited is what cgroup v1 prints for a memory limit never set:
// PAGE_COUNTER_MAX pages of 4 KiB in bytes.
const v1Unlimited = "9223372036854771712\n"

// TestGatherMemCgroup reads the memory cgroup bound of a running target
// from a recorded tree: the cgroup, its own or one above it, that leaves
// the least room under its hard limit (v2 memory.max - memory.current,
// v1 memory.limit_in_bytes - memory.usage_in_bytes), v2's memory.high
// apart, no limit ("max", v1's PAGE_COUNTER_MAX) as none, and what cannot
// be read named. Field case: mosquitto in a v1 memory cgroup of 10 MiB
// was OOM-killed after 4101 connections while preflight judged 8000
// against the host's MemAvailable of 22346 MiB.
func TestGatherMemCgroup(t *testing.T) {
	const v1 = "sys/fs/cgroup/memory/"
	const v2 = "sys/fs/cgroup/"
	for _, c := range []struct {
		name         string
		files        map[string]string
		dirs         []string // made directories: a limit file that cannot be read
		limit, usage uint64
		from         string
		high         uint64
		highFrom     string
		unseen       int
	}{
		{"v1: the broker's own 10 MiB", map[string]string{
			"proc/4242/cgroup":                  "4:memory:/broker\n9:pids:/\n0::/\n",
			v1 + "memory.limit_in_bytes":        v1Unlimited,
			v1 + "memory.usage_in_bytes":        "5000000000\n",
			v1 + "broker/memory.limit_in_bytes": "10485760\n",
			v1 + "broker/memory.usage_in_bytes": "1572864\n",
			v1 + "broker/memory.use_hierarchy":  "1\n",
			v1 + "memory.use_hierarchy":         "1\n",
		}, nil, 10485760, 1572864, "/sys/fs/cgroup/memory/broker/memory.limit_in_bytes", 0, "", 0},
		{"v1: the parent leaves less room", map[string]string{
			"proc/4242/cgroup":                      "4:memory:/docker/abc\n",
			v1 + "memory.limit_in_bytes":            v1Unlimited,
			v1 + "docker/memory.limit_in_bytes":     "536870912\n",
			v1 + "docker/memory.usage_in_bytes":     "524288000\n",
			v1 + "docker/abc/memory.limit_in_bytes": "1073741824\n",
			v1 + "docker/abc/memory.usage_in_bytes": "10485760\n",
		}, nil, 536870912, 524288000, "/sys/fs/cgroup/memory/docker/memory.limit_in_bytes", 0, "", 0},
		{"v1: a parent with use_hierarchy 0 does not count its children (before 5.11)", map[string]string{
			"proc/4242/cgroup":                      "4:memory:/docker/abc\n",
			v1 + "memory.limit_in_bytes":            v1Unlimited,
			v1 + "docker/memory.limit_in_bytes":     "104857600\n",
			v1 + "docker/memory.usage_in_bytes":     "103809024\n",
			v1 + "docker/memory.use_hierarchy":      "0\n",
			v1 + "docker/abc/memory.limit_in_bytes": v1Unlimited,
			v1 + "docker/abc/memory.usage_in_bytes": "10485760\n",
		}, nil, 0, 0, "", 0, "", 0},
		{"v1: no limit anywhere", map[string]string{
			"proc/4242/cgroup":                  "4:memory:/broker\n",
			v1 + "memory.limit_in_bytes":        v1Unlimited,
			v1 + "broker/memory.limit_in_bytes": v1Unlimited,
			v1 + "broker/memory.usage_in_bytes": "1572864\n",
		}, nil, 0, 0, "", 0, "", 0},
		{"v1: limit file unreadable", map[string]string{
			"proc/4242/cgroup":           "4:memory:/broker\n",
			v1 + "memory.limit_in_bytes": v1Unlimited,
		}, []string{v1 + "broker/memory.limit_in_bytes"}, 0, 0, "", 0, "", 1},
		{"v1: the cgroup is not where the controller is mounted", map[string]string{
			"proc/4242/cgroup":           "4:memory:/elsewhere\n",
			v1 + "memory.limit_in_bytes": v1Unlimited,
		}, nil, 0, 0, "", 0, "", 1},
		{"v2: the service's own memory.max, memory.high lower", map[string]string{
			"proc/4242/cgroup":                                       "0::/system.slice/mosquitto.service\n",
			v2 + "cgroup.controllers":                                "cpu io memory pids\n",
			v2 + "system.slice/cgroup.controllers":                   "memory pids\n",
			v2 + "system.slice/memory.max":                           "max\n",
			v2 + "system.slice/memory.high":                          "max\n",
			v2 + "system.slice/memory.current":                       "2147483648\n",
			v2 + "system.slice/mosquitto.service/cgroup.controllers": "memory pids\n",
			v2 + "system.slice/mosquitto.service/memory.max":         "10485760\n",
			v2 + "system.slice/mosquitto.service/memory.high":        "8388608\n",
			v2 + "system.slice/mosquitto.service/memory.current":     "1048576\n",
		}, nil, 10485760, 1048576, "/sys/fs/cgroup/system.slice/mosquitto.service/memory.max", 8388608, "/sys/fs/cgroup/system.slice/mosquitto.service/memory.high", 0},
		{"v2: the slice above leaves less room", map[string]string{
			"proc/4242/cgroup":                                       "0::/system.slice/mosquitto.service\n",
			v2 + "cgroup.controllers":                                "memory pids\n",
			v2 + "system.slice/cgroup.controllers":                   "memory pids\n",
			v2 + "system.slice/memory.max":                           "1073741824\n",
			v2 + "system.slice/memory.current":                       "1063256064\n",
			v2 + "system.slice/mosquitto.service/cgroup.controllers": "memory pids\n",
			v2 + "system.slice/mosquitto.service/memory.max":         "104857600\n",
			v2 + "system.slice/mosquitto.service/memory.current":     "1048576\n",
		}, nil, 1073741824, 1063256064, "/sys/fs/cgroup/system.slice/memory.max", 0, "", 0},
		{"v2: max everywhere", map[string]string{
			"proc/4242/cgroup":                                       "0::/system.slice/mosquitto.service\n",
			v2 + "cgroup.controllers":                                "memory\n",
			v2 + "system.slice/cgroup.controllers":                   "memory\n",
			v2 + "system.slice/memory.max":                           "max\n",
			v2 + "system.slice/memory.current":                       "1\n",
			v2 + "system.slice/mosquitto.service/cgroup.controllers": "memory\n",
			v2 + "system.slice/mosquitto.service/memory.max":         "max\n",
			v2 + "system.slice/mosquitto.service/memory.high":        "max\n",
			v2 + "system.slice/mosquitto.service/memory.current":     "1\n",
		}, nil, 0, 0, "", 0, "", 0},
		{"v2: the controller not enabled for the cgroup", map[string]string{
			"proc/4242/cgroup":                                       "0::/system.slice/mosquitto.service\n",
			v2 + "cgroup.controllers":                                "memory pids\n",
			v2 + "system.slice/cgroup.controllers":                   "pids\n",
			v2 + "system.slice/mosquitto.service/cgroup.controllers": "pids\n",
		}, nil, 0, 0, "", 0, "", 0},
		{"v2: memory.max missing where the controller is", map[string]string{
			"proc/4242/cgroup":                                       "0::/system.slice/mosquitto.service\n",
			v2 + "cgroup.controllers":                                "memory pids\n",
			v2 + "system.slice/cgroup.controllers":                   "memory\n",
			v2 + "system.slice/memory.max":                           "max\n",
			v2 + "system.slice/mosquitto.service/cgroup.controllers": "memory\n",
		}, nil, 0, 0, "", 0, "", 1},
		{"v2: memory.max unreadable", map[string]string{
			"proc/4242/cgroup":                                       "0::/system.slice/mosquitto.service\n",
			v2 + "cgroup.controllers":                                "memory pids\n",
			v2 + "system.slice/cgroup.controllers":                   "memory\n",
			v2 + "system.slice/memory.max":                           "max\n",
			v2 + "system.slice/mosquitto.service/cgroup.controllers": "memory\n",
		}, []string{v2 + "system.slice/mosquitto.service/memory.max"}, 0, 0, "", 0, "", 1},
		{"hybrid: memory on v1, v2 mounted at unified", map[string]string{
			"proc/4242/cgroup":                  "4:memory:/broker\n0::/broker\n",
			v1 + "memory.limit_in_bytes":        v1Unlimited,
			v1 + "broker/memory.limit_in_bytes": "20971520\n",
			v1 + "broker/memory.usage_in_bytes": "0\n",
			v2 + "unified/cgroup.controllers":   "\n",
		}, nil, 20971520, 0, "/sys/fs/cgroup/memory/broker/memory.limit_in_bytes", 0, "", 0},
		{"hybrid: no memory controller on either", map[string]string{
			"proc/4242/cgroup":                "0::/broker\n",
			v2 + "unified/cgroup.controllers": "\n",
		}, nil, 0, 0, "", 0, "", 0},
		{"/proc/PID/cgroup missing", map[string]string{"proc/4242/cgroup": ""}, nil, 0, 0, "", 0, "", 1},
	} {
		root := factstest.FixtureRoot(t, c.files)
		for _, d := range c.dirs {
			// root reads a file of mode 000; a directory in its place
			// cannot be read by anyone
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f := gatherPID4242(t, root, c.files["proc/4242/cgroup"] == "")
		m := f.Target.Memory
		if m.Limit != c.limit || m.Usage != c.usage || m.From != c.from || m.High != c.high || m.HighFrom != c.highFrom || len(m.Unseen) != c.unseen {
			t.Errorf("%s: memory cgroup %+v; want limit %d usage %d from %q, high %d from %q, %d unseen", c.name, m, c.limit, c.usage, c.from, c.high, c.highFrom, c.unseen)
		}
	}
}

// TestListenerOwnerLeastCapacity: of two processes holding the target's
// listeners, the one judged is the one with the least capacity, not the
// least soft nofile: here the one at nofile 19000 in an 8 MiB memory
// cgroup, not the one at 7000 with no memory limit. Field case: the
// first was judged (PASS on MemAvailable) and the second was OOM-killed
// after 3127 connections.
func TestListenerOwnerLeastCapacity(t *testing.T) {
	lim := func(n int) string {
		return fmt.Sprintf("Limit                     Soft Limit           Hard Limit           Units     \nMax open files            %d                 %d                files     \n", n, n)
	}
	root := factstest.FixtureRoot(t, map[string]string{
		"proc/4242/limits": lim(7000), "proc/4242/cgroup": "4:memory:/\n",
		"proc/4243/limits": lim(19000), "proc/4243/cgroup": "4:memory:/capped\n",
		"proc/4243/status":                                  "Name:\tmosquitto\nCapEff:\t0000000000000000\n",
		"sys/fs/cgroup/memory/memory.limit_in_bytes":        v1Unlimited,
		"sys/fs/cgroup/memory/memory.usage_in_bytes":        "1048576\n",
		"sys/fs/cgroup/memory/capped/memory.limit_in_bytes": "8388608\n",
		"sys/fs/cgroup/memory/capped/memory.usage_in_bytes": "1048576\n",
	})
	g := &facts.Gatherer{Root: root, Capacity: OwnerCapacity, F: &facts.Facts{MemAvailable: 20 << 30,
		Listeners: []facts.Listener{{Address: "127.0.0.1", Port: 19101, PID: 4242, Holders: []int{4242}}, {Address: "127.0.0.2", Port: 19101, PID: 4243, Holders: []int{4243}}}}}
	if got := g.ListenerOwner([]int{19101}, facts.Broker); got != 4243 {
		t.Errorf("judged pid %d, want 4243 (8 MiB memory cgroup); notes %q", got, g.F.Notes)
	}
	if len(g.F.Notes) != 1 || !strings.Contains(g.F.Notes[0], "limited by mem.available") || g.F.Target.PID != 0 {
		t.Errorf("notes %q, target %+v: want one note naming both and the target left for the caller", g.F.Notes, g.F.Target)
	}
}

// TestMemCgroupPageCacheIsRoom: inactive page cache is reclaimed before
// the cgroup's limit is reached, so the usage judged is the working set
// (usage less inactive_file). Field case: a v1 cgroup of 64 MiB with
// 63 MiB in use, 60 MiB of it page cache, failed mem.available for 4000
// sockets (capacity 193) and then took all 4000 with no OOM kill.
func TestMemCgroupPageCacheIsRoom(t *testing.T) {
	const v1, v2 = "sys/fs/cgroup/memory/", "sys/fs/cgroup/"
	for _, c := range []struct {
		name  string
		files map[string]string
	}{
		{"v1", map[string]string{
			"proc/4242/cgroup":                  "4:memory:/broker\n",
			v1 + "memory.limit_in_bytes":        v1Unlimited,
			v1 + "broker/memory.limit_in_bytes": "67108864\n",
			v1 + "broker/memory.usage_in_bytes": "66060288\n",
			v1 + "broker/memory.stat":           "cache 62914560\ninactive_file 1\ntotal_inactive_file 62914560\n",
		}},
		{"v2", map[string]string{
			"proc/4242/cgroup":               "0::/broker\n",
			v2 + "cgroup.controllers":        "memory\n",
			v2 + "broker/cgroup.controllers": "memory\n",
			v2 + "broker/memory.max":         "67108864\n",
			v2 + "broker/memory.high":        "max\n",
			v2 + "broker/memory.current":     "66060288\n",
			v2 + "broker/memory.stat":        "anon 3145728\nfile 62914560\ninactive_file 62914560\n",
		}},
	} {
		f := gatherPID4242(t, factstest.FixtureRoot(t, c.files), false)
		if m := f.Target.Memory; m.Limit != 67108864 || m.Usage != 3145728 {
			t.Errorf("%s: memory cgroup %+v, want limit 64 MiB and the 3 MiB working set", c.name, m)
		}
		tg := facts.Target{Sockets: 4000, Role: facts.Broker, ConnRate: 10}
		_ = tg.Validate()
		if got := testenv.CheckByID(t, Evaluate(f, tg), "mem.available"); got.Status == verdict.Fail {
			t.Errorf("%s: mem.available %s: %s", c.name, got.Status, got.Summary)
		}
	}
}
