package preflight

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// evalOn loads a recorded host, validates the target and returns the
// check id's result.
func evalOn(t *testing.T, hostYAML string, tg facts.Target, id string) verdict.Check {
	t.Helper()
	f := host(t, hostYAML)
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	return testenv.CheckByID(t, checks.Evaluate(f, tg), id)
}

func limitOf(c checks.Capacity, check string) (checks.CapacityLimit, bool) {
	for _, l := range c.Limits {
		if l.Check == check {
			return l, true
		}
	}
	return checks.CapacityLimit{}, false
}

// A plain connect() gets one source address per destination (the route's
// preferred source): extra global addresses count only when the load
// generator binds to them (--source-ips); bound sources hold a port for
// every destination (no IP_BIND_ADDRESS_NO_PORT assumed); one endpoint
// spelled two ways is one destination.
func TestLoadgenPortCapacity(t *testing.T) {
	four := `source_addresses: [192.0.2.20, 192.0.2.21, 192.0.2.22, 192.0.2.23]`
	for _, c := range []struct {
		name           string
		host           string
		tg             facts.Target
		sources, dests int64
		total          int64
		status         verdict.Status
	}{
		{"four host addresses, no --source-ips: one source", four,
			facts.Target{Sockets: 100000, Role: facts.Loadgen, Destinations: []string{"192.0.2.10:1883"}}, 1, 1, 28232, verdict.Fail},
		{"two destinations, plain connect", four,
			facts.Target{Sockets: 50000, Role: facts.Loadgen, Destinations: []string{"192.0.2.10:1883", "192.0.2.11:1883"}}, 1, 2, 56464, verdict.Pass},
		{"bound sources: ports x sources, not x destinations", ``,
			facts.Target{Sockets: 100000, Role: facts.Loadgen, Destinations: []string{"192.0.2.10:1883", "192.0.2.11:1883", "192.0.2.12:1883"},
				SourceIPs: []string{"192.0.2.20", "192.0.2.21"}}, 2, 3, 56464, verdict.Fail},
		{"IPv4-mapped destination is the same endpoint", ``,
			facts.Target{Sockets: 50000, Role: facts.Loadgen, Destinations: []string{"127.0.0.1:18831", "[::ffff:127.0.0.1]:18831"}}, 1, 1, 28232, verdict.Fail},
		{"whole range reserved", `sysctl: {net.ipv4.ip_local_port_range: "40000 40099", net.ipv4.ip_local_reserved_ports: "40000-40099"}`,
			facts.Target{Sockets: 10, Role: facts.Loadgen}, 1, 1, 0, verdict.Fail},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := host(t, c.host)
			tg := c.tg
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			pc, ok := checks.LoadgenCapacity(f, tg)
			if !ok || pc.Sources != c.sources || pc.Dests != c.dests || pc.Total != c.total {
				t.Fatalf("capacity %+v, want %d sources x %d destinations = %d", pc, c.sources, c.dests, c.total)
			}
			got := testenv.CheckByID(t, checks.Evaluate(f, tg), "ports.ephemeral")
			if got.Status != c.status {
				t.Fatalf("ports.ephemeral %s, want %s: %s", got.Status, c.status, message(got))
			}
			if l, ok := limitOf(checks.CapacityOf(f, tg), "ports.ephemeral"); !ok || l.Sockets != c.total {
				t.Errorf("capacity limit ports.ephemeral %+v, want %d", l, c.total)
			}
			if len(tg.SourceIPs) > 0 && !strings.Contains(got.Observed, "IP_BIND_ADDRESS_NO_PORT") {
				t.Errorf("bound sources without the assumption stated: %s", got.Observed)
			}
			if c.total == 0 {
				if strings.Contains(got.Remedy, "0 source address") || !strings.Contains(got.Remedy, "ip_local_reserved_ports") {
					t.Errorf("whole range reserved: remedy %q", got.Remedy)
				}
			}
		})
	}
}

var hashsizeRe = regexp.MustCompile(`echo (\d+) > /sys/module/nf_conntrack/parameters/hashsize`)

// A loaded nf_conntrack with no entry beside many TCP sockets tracks
// nothing (hooks are registered per namespace only when a ruleset needs
// them, Linux >= 4.10): it warns about what happens once a ruleset
// tracks, instead of failing, and is no capacity limit. A full table is a
// limit of 0, and the hashsize remedy never shrinks the hash.
func TestConntrackTrackingAndFullTable(t *testing.T) {
	for _, c := range []struct {
		name     string
		host     string
		sockets  int
		status   verdict.Status
		limit    int64 // -1: no conntrack capacity limit
		minHashB uint64
	}{
		{"loaded, 0 entries beside 50000 TCP sockets: not tracking", `conntrack: {loaded: true, max: 65536, count: 0, buckets: 16384}
sockstat: {inuse: 50000}`, 100000, verdict.Warn, -1, 0},
		{"loaded, not tracking, room enough", `conntrack: {loaded: true, max: 262144, count: 0, buckets: 65536}
sockstat: {inuse: 50000}`, 100000, verdict.Pass, -1, 0},
		{"tracking and short", `conntrack: {loaded: true, max: 65536, count: 60000, buckets: 16384}`, 100000, verdict.Fail, 5536, 16384},
		{"full table", `conntrack: {loaded: true, max: 65536, count: 70000, buckets: 16384}`, 1000, verdict.Fail, 0, 16384},
		{"hash already larger than needed", `conntrack: {loaded: true, max: 65536, count: 60000, buckets: 262144}`, 100000, verdict.Fail, 5536, 262144},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := host(t, c.host)
			tg := facts.Target{Sockets: c.sockets, Role: facts.Broker}
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			got := testenv.CheckByID(t, checks.Evaluate(f, tg), "conntrack")
			if got.Status != c.status {
				t.Fatalf("conntrack %s, want %s: %s", got.Status, c.status, message(got))
			}
			l, ok := limitOf(checks.CapacityOf(f, tg), "conntrack")
			if c.limit < 0 && ok {
				t.Errorf("not tracking, but a capacity limit %+v", l)
			}
			if c.limit >= 0 && (!ok || l.Sockets != c.limit) {
				t.Errorf("capacity limit conntrack %+v (found %v), want %d", l, ok, c.limit)
			}
			if c.minHashB > 0 {
				m := hashsizeRe.FindStringSubmatch(got.Remedy)
				if m == nil {
					t.Fatalf("remedy names no hashsize: %q", got.Remedy)
				}
				if b, _ := strconv.ParseUint(m[1], 10, 64); b < c.minHashB {
					t.Errorf("remedy shrinks the hash to %d buckets (has %d): %q", b, c.minHashB, got.Remedy)
				}
			}
		})
	}
}

// A conntrack file that exists but cannot be read is "not known", never
// 0 (a false PASS) nor "not loaded". Running as root here, a directory in
// its place stands for the EACCES a non-root user gets: any error but
// ENOENT.
func TestConntrackUnreadable(t *testing.T) {
	for _, c := range []struct {
		name, file string
	}{
		{"count unreadable", "nf_conntrack_count"},
		{"max unreadable", "nf_conntrack_max"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := fixtureRoot(t, nil)
			p := filepath.Join(root, "proc/sys/net/netfilter", c.file)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := Gather(t.Context(), GatherOptions{Root: root, PID: 4242})
			if err != nil {
				t.Fatal(err)
			}
			if !f.Conntrack.Loaded || !f.Conntrack.Unknown(c.file) {
				t.Fatalf("conntrack %+v: want loaded with %s unknown", f.Conntrack, c.file)
			}
			tg := facts.Target{Sockets: 1000, Role: facts.Broker}
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			got := testenv.CheckByID(t, checks.Evaluate(f, tg), "conntrack")
			if got.Status != verdict.Warn || !strings.Contains(got.Summary, c.file) || !strings.Contains(got.Remedy, "root") {
				t.Errorf("conntrack %s: %s", got.Status, message(got))
			}
			if _, ok := limitOf(checks.CapacityOf(f, tg), "conntrack"); ok {
				t.Errorf("an unknown conntrack table gave a capacity limit")
			}
		})
	}
	// the same, recorded
	got := evalOn(t, `conntrack: {loaded: true, max: 65536, unreadable: ["nf_conntrack_count: permission denied"]}`, facts.Target{Sockets: 10, Role: facts.Broker}, "conntrack")
	if got.Status != verdict.Warn {
		t.Errorf("recorded unreadable count: %s: %s", got.Status, message(got))
	}
}

// tcp_tw_reuse 2 is loopback only and enough when every destination is
// loopback; 1 (or 2) needs TCP timestamps to reuse a TIME_WAIT port
// (tcp_twsk_unique), does nothing for sockets bound before connect(), and
// reuses a port only after tcp_tw_reuse_delay.
func TestTimeWaitReuse(t *testing.T) {
	churn := func(dest string) facts.Target {
		return facts.Target{Sockets: 20000, Role: facts.Loadgen, ConnRate: 5000, Destinations: []string{dest}}
	}
	bound := func(t facts.Target) facts.Target {
		t.SourceIPs = []string{"192.0.2.20", "192.0.2.21"}
		return t
	}
	for _, c := range []struct {
		name   string
		host   string
		tg     facts.Target
		status verdict.Status
	}{
		{"2, loopback destination", ``, churn("127.0.0.1:18831"), verdict.Pass},
		{"2, IPv4-mapped loopback destination", ``, churn("[::ffff:127.0.0.1]:18831"), verdict.Pass},
		{"2, remote destination", ``, churn("192.0.2.10:1883"), verdict.Warn},
		{"1 with timestamps", `sysctl: {net.ipv4.tcp_tw_reuse: "1"}`, churn("192.0.2.10:1883"), verdict.Pass},
		{"1 without timestamps", `sysctl: {net.ipv4.tcp_tw_reuse: "1", net.ipv4.tcp_timestamps: "0"}`, churn("192.0.2.10:1883"), verdict.Warn},
		{"2, loopback, without timestamps", `sysctl: {net.ipv4.tcp_timestamps: "0"}`, churn("127.0.0.1:18831"), verdict.Warn},
		// bind(src, 0) takes no TIME_WAIT port over: reuse is only for
		// ports chosen at connect() (measured: 0 of 100 with reuse 1).
		{"1, bound to --source-ips", `sysctl: {net.ipv4.tcp_tw_reuse: "1"}`, bound(churn("192.0.2.10:1883")), verdict.Warn},
		// reuse waits tcp_tw_reuse_delay (1 s): 28232 - 28200 held leaves
		// 32 ports for the 2000 closed in the last second.
		{"1, too few ports for the reuse delay", `sysctl: {net.ipv4.tcp_tw_reuse: "1"}`, facts.Target{Sockets: 28200, Role: facts.Loadgen, ConnRate: 2000, Destinations: []string{"192.0.2.10:1883"}}, verdict.Warn},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := evalOn(t, c.host, c.tg, "ports.time_wait")
			if got.Status != c.status {
				t.Errorf("ports.time_wait %s, want %s: %s", got.Status, c.status, message(got))
			}
			if !strings.Contains(got.Observed, "tcp_timestamps") {
				t.Errorf("observed does not show tcp_timestamps: %s", got.Observed)
			}
		})
	}
}

// Capacity is the smallest of every ceiling checked — fs.nr_open
// included — and a ceiling that could not be read is named, not dropped.
func TestCapacityEveryCeiling(t *testing.T) {
	f := host(t, `sysctl: {fs.nr_open: "100000"}
mem_available_bytes: 17179869184
target_process: {managed_by: shell, pid: 77, nofile_soft: 1048576, nofile_hard: 1048576}`)
	tg := facts.Target{Sockets: 500000, Role: facts.Broker}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := testenv.CheckByID(t, checks.Evaluate(f, tg), "fd.nr_open"); c.Status != verdict.Fail {
		t.Fatalf("fd.nr_open %s", c.Status)
	}
	capa := checks.CapacityOf(f, tg)
	if capa.LimitedBy != "fd.nr_open" || capa.Sockets != checks.UsableFDs(100000) {
		t.Errorf("capacity %d limited by %s, want %d by fd.nr_open", capa.Sockets, capa.LimitedBy, checks.UsableFDs(100000))
	}

	// meminfo, fs.file-max and the port range unreadable (absent from a
	// recorded root): named as unknown, and the header says RAM is not known
	root := fixtureRoot(t, nil)
	for _, p := range []string{"proc/meminfo", "proc/sys/fs/file-max", "proc/sys/fs/file-nr", "proc/sys/net/ipv4/ip_local_port_range"} {
		if err := os.Remove(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Gather(t.Context(), GatherOptions{Root: root, PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	tg = facts.Target{Sockets: 1000, Role: facts.Loadgen}
	rep, err := Run(t.Context(), Options{Target: tg, Facts: g})
	if err != nil {
		t.Fatal(err)
	}
	var unknown []string
	for _, u := range rep.Capacity.Unknown {
		unknown = append(unknown, u.Check)
	}
	sort.Strings(unknown)
	if got := strings.Join(unknown, ","); got != "fd.file_max,mem.available,ports.ephemeral" {
		t.Errorf("unknown ceilings %q, want fd.file_max,mem.available,ports.ephemeral", got)
	}
	var b strings.Builder
	if err := WriteText(&b, rep, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "0.0 GiB") || !strings.Contains(b.String(), "mem.available") {
		t.Errorf("text report:\n%s", b.String())
	}
}

// Run as non-root, a listener on the broker's port shows with its owner
// unknown: fd.soft, fd.hard and fd.raise say a listener exists whose owner
// is not visible and name the fix (root, --pid), not "none listens"; the
// capacity's fd.soft ceiling is marked assumed (a login shell's limit).
func TestListenerOwnerNotVisible(t *testing.T) {
	f := host(t, `listeners: [{port: 1883, backlog: 4096}]
mem_available_bytes: 17179869184`)
	tg := facts.Target{Sockets: 500, Role: facts.Broker}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	cs := checks.Evaluate(f, tg)
	for _, id := range []string{"fd.soft", "fd.hard", "fd.raise"} {
		got := testenv.CheckByID(t, cs, id)
		if got.Status != verdict.Warn || strings.Contains(got.Summary, "none listens") || !strings.Contains(got.Remedy, "root") || !strings.Contains(got.Remedy, "--pid") {
			t.Errorf("%s %s: %s", id, got.Status, message(got))
		}
	}
	capa := checks.CapacityOf(f, tg)
	l, ok := limitOf(capa, "fd.soft")
	if !ok || !l.Assumed {
		t.Errorf("fd.soft ceiling %+v: want assumed", l)
	}
	if capa.LimitedBy == "fd.soft" && !strings.Contains(capacityLine(capa), "not known") {
		t.Errorf("capacity line takes a login shell's limit as the service's: %s", capacityLine(capa))
	}
	// with nothing on the port it still says none listens
	f = host(t, ``)
	if got := testenv.CheckByID(t, checks.Evaluate(f, tg), "fd.soft"); !strings.Contains(got.Summary, "none listens") {
		t.Errorf("no listener: %s", message(got))
	}
}

// A hash size that could not be read is "not known", never 0, and the
// hashsize remedy then says to check the current size first: written
// blindly, the suggested value can shrink a larger hash.
func TestConntrackUnknownHashSize(t *testing.T) {
	got := evalOn(t, `conntrack: {loaded: true, max: 1000, count: 900, unreadable: ["nf_conntrack_buckets: permission denied"]}`,
		facts.Target{Sockets: 1000, Role: facts.Broker}, "conntrack")
	if got.Status != verdict.Fail || !strings.Contains(got.Observed, "nf_conntrack_buckets) not known") || !strings.Contains(got.Remedy, "only if cat /sys/module/nf_conntrack/parameters/hashsize shows fewer than") {
		t.Errorf("%s: %s", got.Status, message(got))
	}
}
