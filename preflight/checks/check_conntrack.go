package checks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Connection tracking: where nf_conntrack is loaded (a stateful firewall,
// docker, NAT), every connection takes a table entry; a full table drops
// new packets ("nf_conntrack: table full, dropping packet").

// conntrackMaxChain is the average hash chain length (entries per bucket)
// above which lookups get slow; the kernel default is max = buckets.
const conntrackMaxChain = 8

func init() {
	register(CheckDef{ID: "conntrack", Doc: "nf_conntrack_max - nf_conntrack_count >= sockets, and a hash size to match (only where nf_conntrack is loaded)", Func: checkConntrack})
}

// conntrackUnknown names what could not be read of the table's size, ""
// when max and count are both known.
func ConntrackUnknown(c facts.Conntrack) string {
	var what []string
	for _, n := range []string{"nf_conntrack_max", "nf_conntrack_count"} {
		if c.Unknown(n) {
			what = append(what, n)
		}
	}
	return strings.Join(what, " and ")
}

// conntrackTracking says whether the table tracks connections now: a
// loaded module with no entry is not tracking. Since Linux 4.10 (commit
// "netfilter: conntrack: register hooks in netns when needed by ruleset";
// nf_ct_netns_get() in net/netfilter/nf_conntrack_proto.c) the conntrack
// hooks are registered in a network namespace only when a ruleset needs
// them (nat, -m conntrack/state, ct in nftables, docker's NAT): loading the
// module alone tracks nothing.
func conntrackTracking(c facts.Conntrack) bool { return c.Count > 0 }

// conntrackBuckets is the hash size to suggest for want entries: 4 per
// bucket, never fewer buckets than the table has now (the hashsize
// parameter also shrinks it).
func ConntrackBuckets(c facts.Conntrack, want uint64) uint64 { return max(c.Buckets, (want+3)/4) }

// hashsizeCmd is the command that sets the hash to buckets; when the
// current size could not be read it says to run it only if that is
// larger, since the parameter shrinks the hash too.
func hashsizeCmd(c facts.Conntrack, buckets uint64) string {
	cmd := fmt.Sprintf("echo %d > /sys/module/nf_conntrack/parameters/hashsize", buckets)
	if c.Unknown("nf_conntrack_buckets") {
		cmd += fmt.Sprintf(" (only if cat /sys/module/nf_conntrack/parameters/hashsize shows fewer than %d: the current hash size could not be read, and a smaller value shrinks it)", buckets)
	}
	return cmd
}

func checkConntrack(f *facts.Facts, t facts.Target) verdict.Check {
	c := f.Conntrack
	if !c.Loaded {
		return skip("nf_conntrack is not loaded: connections are not tracked")
	}
	n := uint64(t.Sockets)
	if what := ConntrackUnknown(c); what != "" {
		return warn(fmt.Sprintf("conntrack: nf_conntrack is loaded but %s could not be read: whether the table has room for %s is not known", what, plural.N(n, "connection")),
			strings.Join(c.Unreadable, "; "), fmt.Sprintf(">= %d free entries (one per connection)", n),
			"run hostprep preflight as root, or read them as root: sysctl net.netfilter.nf_conntrack_max net.netfilter.nf_conntrack_count")
	}
	var free uint64
	if c.Max > c.Count {
		free = c.Max - c.Count
	}
	hash := strconv.FormatUint(c.Buckets, 10)
	if c.Unknown("nf_conntrack_buckets") {
		hash = "not known"
	}
	obs := fmt.Sprintf("nf_conntrack_max %d, %s in use, %d free; hash size (nf_conntrack_buckets) %s; %s in use (/proc/net/sockstat)",
		c.Max, plural.N(c.Count, "entry"), free, hash, plural.N(f.Sockstat.InUse, "TCP socket"))
	exp := fmt.Sprintf(">= %d free entries (one per connection)", n)
	want := c.Count + n + n/4 // room for the target plus 25 %
	buckets := ConntrackBuckets(c, want)
	remedy := fmt.Sprintf("sysctl -w net.netfilter.nf_conntrack_max=%d and %s; or exempt the service port from tracking with an nftables notrack rule", want, hashsizeCmd(c, buckets))
	idle := ""
	if !conntrackTracking(c) {
		idle = "nf_conntrack is loaded but tracks nothing now (0 entries"
		if f.Sockstat.InUse > 0 {
			idle += fmt.Sprintf(" beside %s in use", plural.N(f.Sockstat.InUse, "TCP socket"))
		}
		idle += "): no ruleset in this network namespace uses it (since Linux 4.10 the hooks are registered only then)"
		if free < n {
			return warn(fmt.Sprintf("conntrack: %s; if one starts tracking (NAT, -m conntrack/state, docker), %d free entries < %s and the kernel drops new connections (\"nf_conntrack: table full, dropping packet\")", idle, free, plural.N(n, "connection")),
				obs, exp+" once a ruleset tracks", remedy)
		}
	}
	if free < n {
		return fail(fmt.Sprintf("conntrack: %d free entries < %s: nf_conntrack_max %d with %d in use; when it is full the kernel drops new connections (\"nf_conntrack: table full, dropping packet\")", free, plural.N(n, "connection"), c.Max, c.Count),
			obs, exp, remedy)
	}
	if c.Buckets > 0 && (c.Count+n)/c.Buckets > conntrackMaxChain {
		return warn(fmt.Sprintf("conntrack hash size %d for %s: chains of %s slow every packet's lookup", c.Buckets, plural.N(c.Count+n, "entry"), plural.N((c.Count+n)/c.Buckets, "entry")),
			obs, fmt.Sprintf("at most %s per bucket", plural.N(conntrackMaxChain, "entry")), hashsizeCmd(c, buckets))
	}
	if idle != "" {
		return pass(fmt.Sprintf("conntrack: %s; if one starts tracking, %d free entries cover %s", idle, free, plural.N(n, "connection")), obs, exp)
	}
	return pass(fmt.Sprintf("conntrack has %d free entries for %s", free, plural.N(n, "connection")), obs, exp)
}
