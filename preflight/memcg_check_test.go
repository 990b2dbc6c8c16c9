package preflight

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// TestMemAvailableJudgesTheCgroup: mem.available and the capacity judge
// the sockets' memory against the smaller of MemAvailable and the room
// the target's memory cgroup leaves, naming the cgroup file; memory.high
// below the need warns (throttling), and a cgroup file that cannot be
// read warns and is an unknown ceiling. Field case: mosquitto in a v1
// memory cgroup of 10 MiB passed mem.available for 8000 sockets on
// MemAvailable 22346 MiB, with a capacity of ~19800, and was OOM-killed
// after 4101 CONNACKs.
func TestMemAvailableJudgesTheCgroup(t *testing.T) {
	const v1, v2 = "sys/fs/cgroup/memory/", "sys/fs/cgroup/"
	const v2Leaf = v2 + "system.slice/mosquitto.service/"
	for _, c := range []struct {
		name     string
		files    map[string]string
		dirs     []string // in place of a limit file: cannot be read
		want     verdict.Status
		summary  string // in mem.available's summary
		capFrom  string // in capacity's mem.available resource; "" = MemAvailable
		capSocks int64
		unknown  string // in an unknown mem.available ceiling
	}{
		{"v1 10 MiB: 8000 sockets do not fit", map[string]string{
			"proc/4242/cgroup":                  "4:memory:/broker\n0::/\n",
			v1 + "memory.limit_in_bytes":        "9223372036854771712\n",
			v1 + "memory.usage_in_bytes":        "5000000000\n",
			v1 + "broker/memory.limit_in_bytes": "10485760\n",
			v1 + "broker/memory.usage_in_bytes": "1572864\n",
		}, nil, verdict.Fail, "/sys/fs/cgroup/memory/broker/memory.limit_in_bytes", "/sys/fs/cgroup/memory/broker/memory.limit_in_bytes", (10485760 - 1572864) / 4096, ""},
		{"v2 memory.max of the slice above", map[string]string{
			"proc/4242/cgroup":                     "0::/system.slice/mosquitto.service\n",
			v2 + "cgroup.controllers":              "memory pids\n",
			v2 + "system.slice/cgroup.controllers": "memory\n",
			v2 + "system.slice/memory.max":         "16777216\n",
			v2 + "system.slice/memory.current":     "8388608\n",
			v2Leaf + "cgroup.controllers":          "memory\n",
			v2Leaf + "memory.max":                  "max\n",
			v2Leaf + "memory.current":              "1048576\n",
		}, nil, verdict.Fail, "/sys/fs/cgroup/system.slice/memory.max", "/sys/fs/cgroup/system.slice/memory.max", 8388608 / 4096, ""},
		{"v2 memory.high below the need throttles", map[string]string{
			"proc/4242/cgroup":                     "0::/system.slice/mosquitto.service\n",
			v2 + "cgroup.controllers":              "memory pids\n",
			v2 + "system.slice/cgroup.controllers": "memory\n",
			v2 + "system.slice/memory.max":         "max\n",
			v2Leaf + "cgroup.controllers":          "memory\n",
			v2Leaf + "memory.max":                  "1073741824\n",
			v2Leaf + "memory.high":                 "20971520\n",
			v2Leaf + "memory.current":              "1048576\n",
		}, nil, verdict.Warn, "memory.high", "/sys/fs/cgroup/system.slice/mosquitto.service/memory.max", (1073741824 - 1048576) / 4096, ""},
		{"v1 limit unreadable", map[string]string{
			"proc/4242/cgroup":           "4:memory:/broker\n",
			v1 + "memory.limit_in_bytes": "9223372036854771712\n",
		}, []string{v1 + "broker/memory.limit_in_bytes"}, verdict.Warn, "not seen: /sys/fs/cgroup/memory/broker/memory.limit_in_bytes", "", 12000000 * 1024 / 4096, "/sys/fs/cgroup/memory/broker/memory.limit_in_bytes"},
		{"no limit: MemAvailable as before", map[string]string{
			"proc/4242/cgroup":                  "4:memory:/broker\n",
			v1 + "memory.limit_in_bytes":        "9223372036854771712\n",
			v1 + "broker/memory.limit_in_bytes": "9223372036854771712\n",
			v1 + "broker/memory.usage_in_bytes": "1572864\n",
		}, nil, verdict.Pass, "MemAvailable 11719 MiB", "", 12000000 * 1024 / 4096, ""},
	} {
		c.files["proc/4242/limits"] = strings.Replace(factstest.LimitsFile, "1024                 524288", "1048576              1048576", 1)
		root := factstest.FixtureRoot(t, c.files)
		for _, d := range c.dirs {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		f, err := Gather(t.Context(), GatherOptions{Root: root, PID: 4242})
		if err != nil {
			t.Fatal(err)
		}
		tg := facts.Target{Sockets: 8000, Role: facts.Broker, ConnRate: 10}
		if err := tg.Validate(); err != nil {
			t.Fatal(err)
		}
		got := testenv.CheckByID(t, checks.Evaluate(f, tg), "mem.available")
		if got.Status != c.want || !strings.Contains(got.Summary, c.summary) {
			t.Errorf("%s: mem.available %s: %s (observed %s); want %s naming %q", c.name, got.Status, got.Summary, got.Observed, c.want, c.summary)
		}
		cp := checks.CapacityOf(f, tg)
		i := slices.IndexFunc(cp.Limits, func(l checks.CapacityLimit) bool { return l.Check == "mem.available" })
		if i < 0 {
			t.Errorf("%s: no mem.available in the capacity %+v", c.name, cp)
			continue
		}
		l := cp.Limits[i]
		wantRes := "MemAvailable"
		if c.capFrom != "" {
			wantRes = c.capFrom
		}
		if !strings.Contains(l.Resource, wantRes) || l.Sockets != c.capSocks {
			t.Errorf("%s: capacity's mem.available %+v, want %d sockets naming %q", c.name, l, c.capSocks, wantRes)
		}
		if c.want == verdict.Fail && (cp.LimitedBy != "mem.available" || !strings.Contains(capacityLine(cp), "mem.available")) {
			t.Errorf("%s: capacity %s, want limited by mem.available", c.name, capacityLine(cp))
		}
		named := slices.ContainsFunc(cp.Unknown, func(u checks.UnknownLimit) bool {
			return u.Check == "mem.available" && c.unknown != "" && strings.Contains(u.Resource, c.unknown)
		})
		if named != (c.unknown != "") {
			t.Errorf("%s: capacity's unknown ceilings %+v, want one naming %q", c.name, cp.Unknown, c.unknown)
		}
	}
}
