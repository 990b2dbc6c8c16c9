package preflight

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
)

// evalOn loads a recorded host, validates the target and returns the
// check id's result.
func evalOn(t *testing.T, hostYAML string, tg Target, id string) verdict.Check {
	t.Helper()
	f := host(t, hostYAML)
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	return find(t, Evaluate(f, tg), id)
}

func limitOf(c Capacity, check string) (CapacityLimit, bool) {
	for _, l := range c.Limits {
		if l.Check == check {
			return l, true
		}
	}
	return CapacityLimit{}, false
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
		tg             Target
		sources, dests int64
		total          int64
		status         verdict.Status
	}{
		{"four host addresses, no --source-ips: one source", four,
			Target{Sockets: 100000, Role: Loadgen, Destinations: []string{"192.0.2.10:1883"}}, 1, 1, 28232, verdict.Fail},
		{"two destinations, plain connect", four,
			Target{Sockets: 50000, Role: Loadgen, Destinations: []string{"192.0.2.10:1883", "192.0.2.11:1883"}}, 1, 2, 56464, verdict.Pass},
		{"bound sources: ports x sources, not x destinations", ``,
			Target{Sockets: 100000, Role: Loadgen, Destinations: []string{"192.0.2.10:1883", "192.0.2.11:1883", "192.0.2.12:1883"},
				SourceIPs: []string{"192.0.2.20", "192.0.2.21"}}, 2, 3, 56464, verdict.Fail},
		{"IPv4-mapped destination is the same endpoint", ``,
			Target{Sockets: 50000, Role: Loadgen, Destinations: []string{"127.0.0.1:18831", "[::ffff:127.0.0.1]:18831"}}, 1, 1, 28232, verdict.Fail},
		{"whole range reserved", `sysctl: {net.ipv4.ip_local_port_range: "40000 40099", net.ipv4.ip_local_reserved_ports: "40000-40099"}`,
			Target{Sockets: 10, Role: Loadgen}, 1, 1, 0, verdict.Fail},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := host(t, c.host)
			tg := c.tg
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			pc, ok := loadgenCapacity(f, tg)
			if !ok || pc.sources != c.sources || pc.dests != c.dests || pc.total != c.total {
				t.Fatalf("capacity %+v, want %d sources x %d destinations = %d", pc, c.sources, c.dests, c.total)
			}
			got := find(t, Evaluate(f, tg), "ports.ephemeral")
			if got.Status != c.status {
				t.Fatalf("ports.ephemeral %s, want %s: %s", got.Status, c.status, message(got))
			}
			if l, ok := limitOf(capacityOf(f, tg), "ports.ephemeral"); !ok || l.Sockets != c.total {
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
