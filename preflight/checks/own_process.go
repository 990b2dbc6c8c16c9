package checks

import (
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
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
	f, t, err := facts.OwnFacts(sockets, sourceIPs, nofile)
	if err != nil {
		return []verdict.Check{skip("RLIMIT_NOFILE of this process not readable: " + err.Error()), checkByID(f, t, "ports.ephemeral")}
	}
	return []verdict.Check{checkByID(f, t, "fd.soft"), checkByID(f, t, "ports.ephemeral")}
}

// OwnProcessFD judges sockets file descriptors held by the calling
// process with preflight's fd.soft, fd.hard and fd.raise, on the facts
// OwnProcessChecks reads plus those fd.raise needs: whether this host's
// capability bounding set has CAP_SYS_RESOURCE, and the hard limits of
// this process and PID 1 (hostCeiling). The process is judged as one
// started from the shell that started it, which is what running it again
// does, so the remedies are the ones preflight gives such a process. It
// returns fd.soft, fd.hard and fd.raise, in that order (all "skip" when
// this process's limits cannot be read); nofile is as OwnProcessChecks'.
func OwnProcessFD(sockets int, nofile uint64) []verdict.Check {
	f, t, err := facts.OwnFacts(sockets, nil, nofile)
	if err != nil {
		s := skip("RLIMIT_NOFILE of this process not readable: " + err.Error())
		return []verdict.Check{s, s, s}
	}
	var out []verdict.Check
	for _, id := range []string{"fd.soft", "fd.hard", "fd.raise"} {
		out = append(out, checkByID(f, t, id))
	}
	return out
}

// checkByID evaluates one registered check.
func checkByID(f *facts.Facts, t facts.Target, id string) verdict.Check {
	for _, d := range registry {
		if d.ID == id {
			c := d.Func(f, t)
			c.ID = id
			return c
		}
	}
	return verdict.Check{ID: id, Status: verdict.Skip, Summary: "no such check"}
}
