package preflight

import (
	"fmt"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
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

func checkConntrack(f *Facts, t Target) verdict.Check {
	c := f.Conntrack
	if !c.Loaded {
		return skip("nf_conntrack is not loaded: connections are not tracked")
	}
	n := uint64(t.Sockets)
	var free uint64
	if c.Max > c.Count {
		free = c.Max - c.Count
	}
	obs := fmt.Sprintf("nf_conntrack_max %d, %s in use, %d free; hash size (nf_conntrack_buckets) %d", c.Max, plural.N(c.Count, "entry"), free, c.Buckets)
	exp := fmt.Sprintf(">= %d free entries (one per connection)", n)
	want := c.Count + n + n/4 // room for the target plus 25 %
	buckets := (want + 3) / 4
	if free < n {
		return fail(fmt.Sprintf("conntrack: %d free entries < %s: nf_conntrack_max %d with %d in use; when it is full the kernel drops new connections (\"nf_conntrack: table full, dropping packet\")", free, plural.N(n, "connection"), c.Max, c.Count),
			obs, exp, fmt.Sprintf("sysctl -w net.netfilter.nf_conntrack_max=%d and echo %d > /sys/module/nf_conntrack/parameters/hashsize; or exempt the service port from tracking with an nftables notrack rule", want, buckets))
	}
	if c.Buckets > 0 && (c.Count+n)/c.Buckets > conntrackMaxChain {
		return warn(fmt.Sprintf("conntrack hash size %d for %s: chains of %s slow every packet's lookup", c.Buckets, plural.N(c.Count+n, "entry"), plural.N((c.Count+n)/c.Buckets, "entry")),
			obs, fmt.Sprintf("at most %s per bucket", plural.N(conntrackMaxChain, "entry")), fmt.Sprintf("echo %d > /sys/module/nf_conntrack/parameters/hashsize", buckets))
	}
	return pass(fmt.Sprintf("conntrack has %d free entries for %s", free, plural.N(n, "connection")), obs, exp)
}
