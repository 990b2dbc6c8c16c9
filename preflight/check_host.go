package preflight

import (
	"fmt"

	"github.com/hostprep/hostprep/internal/verdict"
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

// checkClock reports the clock state as information: on one host every
// latency hostprep measures is taken on one clock (publisher, subscriber
// and scheduler share it), so an unsynchronised clock changes no number
// here. Cross-host latency is where it matters, and the fleet probe
// checks the clock offset itself at --start-at.
func checkClock(f *Facts, t Target) verdict.Check {
	if !f.Clock.Known {
		return skip("clock state unknown (adjtimex not available)")
	}
	obs := fmt.Sprintf("adjtimex: synchronised %v, max error %d µs", f.Clock.Synced, f.Clock.MaxErrorUS)
	exp := "informational on one host; cross-host runs (hostprep probe mqtt --start-at) check the clock offset"
	if f.Clock.Synced {
		return pass("clock synchronised", obs, exp)
	}
	c := pass("clock not synchronised (adjtimex reports STA_UNSYNC): no effect on one host, where every latency is measured on one clock; for latency across hosts the fleet probe (hostprep probe mqtt --start-at) checks the clock offset (enable time sync: timedatectl set-ntp true, or chrony)", obs, exp)
	return c
}

func checkContainer(f *Facts, t Target) verdict.Check {
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
