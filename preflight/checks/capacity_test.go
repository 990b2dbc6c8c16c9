package checks

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

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
	return testenv.CheckByID(t, Evaluate(f, tg), id)
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
			pc, ok := LoadgenCapacity(f, tg)
			if !ok || pc.sources != c.sources || pc.dests != c.dests || pc.Total != c.total {
				t.Fatalf("capacity %+v, want %d sources x %d destinations = %d", pc, c.sources, c.dests, c.total)
			}
			got := testenv.CheckByID(t, Evaluate(f, tg), "ports.ephemeral")
			if got.Status != c.status {
				t.Fatalf("ports.ephemeral %s, want %s: %s", got.Status, c.status, message(got))
			}
			if l, ok := CapacityOf(f, tg).Limit("ports.ephemeral"); !ok || l.Sockets != c.total {
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
			got := testenv.CheckByID(t, Evaluate(f, tg), "conntrack")
			if got.Status != c.status {
				t.Fatalf("conntrack %s, want %s: %s", got.Status, c.status, message(got))
			}
			l, ok := CapacityOf(f, tg).Limit("conntrack")
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
