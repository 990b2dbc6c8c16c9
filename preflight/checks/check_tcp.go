package checks

import (
	"fmt"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Kernel-wide TCP socket limits that bite when many connections close at
// once: orphans (closed by the process, still finishing in the kernel) and
// TIME_WAIT buckets.

func init() {
	register(CheckDef{ID: "tcp.orphans", Doc: "net.ipv4.tcp_max_orphans >= sockets (a mass disconnect orphans all of them)", Func: checkTCPOrphans})
	register(CheckDef{ID: "tcp.tw_buckets", Doc: "net.ipv4.tcp_max_tw_buckets >= conn_rate x 60 s", Func: checkTCPTWBuckets})
}

func checkTCPOrphans(f *facts.Facts, t facts.Target) verdict.Check {
	m, ok := f.SysInt("net.ipv4.tcp_max_orphans")
	if !ok {
		return skip("net.ipv4.tcp_max_orphans not readable")
	}
	obs := fmt.Sprintf("tcp_max_orphans %d; %d orphaned now (sockstat)", m, f.Sockstat.Orphan)
	exp := fmt.Sprintf(">= %d (every socket closed at once, e.g. a restart or network flap)", t.Sockets)
	if now := int64(f.Sockstat.Orphan); now >= m {
		return fail(fmt.Sprintf("%d orphaned sockets now >= tcp_max_orphans %d: the kernel is resetting connections at this moment (\"too many orphaned sockets\" in dmesg)", now, m),
			obs, fmt.Sprintf("orphaned now < tcp_max_orphans %d, and it >= %d", m, t.Sockets),
			"find what closes so many connections at once (ss -tan state fin-wait-1 / last-ack), and "+tuneApply(t, AtLeast(t, "net.ipv4.tcp_max_orphans", max(int64(t.Sockets), 2*now))))
	}
	if m >= int64(t.Sockets) {
		return pass(fmt.Sprintf("tcp_max_orphans %d covers closing all %s at once", m, plural.N(t.Sockets, "socket")), obs, exp)
	}
	return warn(fmt.Sprintf("tcp_max_orphans %d < %s: when they close at once the kernel resets the excess and logs \"too many orphaned sockets\"", m, plural.N(t.Sockets, "socket")),
		obs, exp, fmt.Sprintf("sysctl -w net.ipv4.tcp_max_orphans=%d (each orphan can pin up to ~64 KiB of buffers)", t.Sockets))
}

func checkTCPTWBuckets(f *facts.Facts, t facts.Target) verdict.Check {
	m, ok := f.SysInt("net.ipv4.tcp_max_tw_buckets")
	if !ok {
		return skip("net.ipv4.tcp_max_tw_buckets not readable")
	}
	tw := int64(t.ConnRate) * TimeWaitSeconds
	obs := fmt.Sprintf("tcp_max_tw_buckets %d; %d in TIME_WAIT now (sockstat); TCPTimeWaitOverflow %d since boot", m, f.Sockstat.TW, f.Netstat["TCPTimeWaitOverflow"])
	exp := fmt.Sprintf(">= %d (%d connections/s x %d s in TIME_WAIT if connections churn)", tw, t.ConnRate, TimeWaitSeconds)
	if m >= tw {
		return pass(fmt.Sprintf("tcp_max_tw_buckets %d holds %d connections/s of churn", m, t.ConnRate), obs, exp)
	}
	return warn(fmt.Sprintf("tcp_max_tw_buckets %d < %d: at %d connections/s of churn, closed connections skip TIME_WAIT and the kernel logs \"time wait bucket table overflow\"", m, tw, t.ConnRate),
		obs, exp, fmt.Sprintf("sysctl -w net.ipv4.tcp_max_tw_buckets=%d", tw))
}
