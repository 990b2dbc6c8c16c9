package preflight

import (
	"github.com/hostprep/hostprep/internal/verdict"
)

// OwnProcessChecks judges a load the calling process itself will hold —
// the MQTT probe's clients, plus the broker's side when the broker is
// embedded — with the same checks preflight judges a host by, on facts
// gathered from this process: fd.soft on its RLIMIT_NOFILE
// (/proc/self/limits, CapEff) and ports.ephemeral on
// net.ipv4.ip_local_port_range minus ip_local_reserved_ports, for one
// destination (the broker address).
//
// sockets is the file descriptors the load takes (connections counted
// once per end this process holds); sourceIPs are the addresses the
// connections come from (nil: one address); nofile > 0 stands for both
// the soft and hard limit (a test's stand-in for a lowered limit). It
// returns the fd.soft and ports.ephemeral results, in that order; a
// fact that cannot be read makes its check "skip".
func OwnProcessChecks(sockets int, sourceIPs []string, nofile uint64) []verdict.Check {
	g := &gatherer{root: "/", f: &Facts{Sysctl: map[string]string{}}}
	for _, k := range []string{"net.ipv4.ip_local_port_range", "net.ipv4.ip_local_reserved_ports", "fs.nr_open"} {
		g.sysctl(k)
	}
	t := Target{Sockets: max(sockets, 1), Role: Loadgen, SourceIPs: sourceIPs, ConnRate: DefaultConnRate}
	if len(sourceIPs) == 0 {
		t.SourceIPs = []string{"127.0.0.1"}
	}
	tp := &g.f.Target
	tp.ManagedBy, tp.Source = "shell", "this process (/proc/self/limits)"
	soft, hard, err := readNofile(g.path("/proc/self/limits"))
	if nofile > 0 {
		soft, hard, err, tp.Source = nofile, nofile, nil, "the limit given to the probe"
	}
	if err != nil {
		return []verdict.Check{skip("RLIMIT_NOFILE of this process not readable: " + err.Error()), checkByID(g.f, t, "ports.ephemeral")}
	}
	tp.NofileSoft, tp.NofileHard = soft, hard
	tp.CapSysResource, _ = g.hasCap(g.selfPID(), "CapEff", capSysResource)
	return []verdict.Check{checkByID(g.f, t, "fd.soft"), checkByID(g.f, t, "ports.ephemeral")}
}

// UsableFDs is how many sockets a process with an RLIMIT_NOFILE of n can
// hold beside the file descriptors it needs for everything else (1 % of
// n, at least 64): the number fd.soft compares against.
func UsableFDs(n uint64) int64 { return usableFDs(n) }

// checkByID evaluates one registered check.
func checkByID(f *Facts, t Target, id string) verdict.Check {
	for _, d := range registry {
		if d.ID == id {
			c := d.Func(f, t)
			c.ID = id
			return c
		}
	}
	return verdict.Check{ID: id, Status: verdict.Skip, Summary: "no such check"}
}
