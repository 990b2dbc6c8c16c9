package checks

import (
	"fmt"
	"net"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Host checks that do not limit sockets but change what the numbers mean:
// an unsynchronised clock (cross-host latency) and containment (which
// net.* keys are this namespace's own).

// netnsKeys are per-network-namespace sysctls: inside a container with its
// own network namespace they are the container's (docker --sysctl).
var netnsKeys = []string{"net.core.somaxconn", "net.ipv4.ip_local_port_range", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_max_syn_backlog",
	"net.ipv4.tcp_syncookies", "net.ipv4.tcp_tw_reuse", "net.ipv4.tcp_max_tw_buckets", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}

// hostKeys are global: only the host can change them.
var hostKeys = []string{"fs.nr_open", "fs.file-max", "net.ipv4.tcp_mem", "net.ipv4.tcp_max_orphans", "net.netfilter.nf_conntrack_max", "net.core.rmem_max", "net.core.wmem_max"}

func init() {
	register(CheckDef{ID: "clock.sync", Doc: "the kernel clock is synchronised (adjtimex: STA_UNSYNC clear)", Func: checkClock})
	register(CheckDef{ID: "container", Doc: "container detection: which net.* keys are this namespace's own and which are the host's", Func: checkContainer})
}

// checkClock judges the clock where it matters, and says where it does
// not: on one host every latency hostprep measures is taken on one clock
// (publisher, subscriber and scheduler share it), so an unsynchronised
// clock changes no number and the check is skipped, saying so. A load
// generator aimed at another host is where it matters: latency across
// hosts (hostprep probe mqtt --start-at, which checks the offset itself)
// needs synchronised clocks, so there it warns.
func checkClock(f *facts.Facts, t facts.Target) verdict.Check {
	if !f.Clock.Known {
		return skip("clock state unknown (adjtimex not available)")
	}
	obs := fmt.Sprintf("adjtimex: synchronised %v, max error %d µs", f.Clock.Synced, f.Clock.MaxErrorUS)
	if f.Clock.Synced {
		return pass("clock synchronised", obs, "synchronised (STA_UNSYNC clear)")
	}
	remote := remoteDestinations(t)
	if len(remote) == 0 {
		return skip("the clock does not matter here: one host, where every latency is measured on one clock (no destination on another host; a fleet run across hosts checks the clock offset itself); adjtimex reports it not synchronised (STA_UNSYNC)")
	}
	return warn(fmt.Sprintf("clock not synchronised (adjtimex reports STA_UNSYNC) while the load goes to another host (%v): latency across hosts (hostprep probe mqtt --start-at) is only as good as the clocks' offset", remote),
		obs, "synchronised (STA_UNSYNC clear) for latency across hosts",
		"enable time sync: timedatectl set-ntp true, or chrony")
}

// remoteDestinations are the target's destinations on another host.
func remoteDestinations(t facts.Target) []string {
	var out []string
	for _, d := range t.Destinations {
		h, _, err := net.SplitHostPort(d)
		if err != nil {
			h = d
		}
		if !facts.IsLocalHost(h) {
			out = append(out, d)
		}
	}
	return out
}

func checkContainer(f *facts.Facts, t facts.Target) verdict.Check {
	c := f.Container
	where := "a container (" + c.Kind + ")"
	if c.Kind == "" {
		where = "a network namespace of its own"
	}
	switch {
	case !c.OwnNetNS && c.Kind == "":
		return pass("not in a container: every net.* and fs.* key is this host's", "host network namespace", "")
	case !c.OwnNetNS:
		return pass(fmt.Sprintf("in %s sharing the host's network namespace: net.* keys are the host's, and so are fs.* and tcp_mem", where), "container "+c.Kind+", host network namespace", "")
	}
	return warn(fmt.Sprintf("running in %s: the per-namespace keys %v are this namespace's own, but %v are the host's — tuning them here changes nothing or is refused",
		where, netnsKeys, hostKeys), fmt.Sprintf("container %q, own network namespace", c.Kind), "host-wide keys set on the host",
		"set per-namespace keys with docker run --sysctl / a pod's securityContext.sysctls, and host-wide keys on the host itself")
}
