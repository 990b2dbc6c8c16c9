package preflight

import (
	"fmt"

	"github.com/hostprep/hostprep/internal/verdict"
)

// Accept path checks for servers (broker, iotdb). A connection waits in
// the listener's SYN queue and then its accept queue; the accept queue is
// min(listen() backlog, net.core.somaxconn). At a connect rate R the queue
// must hold a burst of R x 1 s, doubled for slack (the rule:
// backlog >= 2 x rate x 1 s). Overflowing it drops the SYN/ACK and the
// client retries after 1 s, 3 s, 7 s ...

var serverRoles = []Role{Broker, IoTDB}

func init() {
	register(CheckDef{ID: "accept.backlog", Doc: "net.core.somaxconn >= 2 x conn_rate x 1 s", Roles: serverRoles, Func: checkAcceptBacklog})
	register(CheckDef{ID: "accept.syn_backlog", Doc: "tcp_max_syn_backlog >= 2 x conn_rate x 1 s unless tcp_syncookies is on", Roles: serverRoles, Func: checkAcceptSynBacklog})
	register(CheckDef{ID: "accept.overflows", Doc: "ListenOverflows and ListenDrops counters are 0 (no accept queue overflow since boot)", Roles: serverRoles, Func: checkAcceptOverflows})
}

func backlogNeed(t Target) int64 { return 2 * int64(t.ConnRate) }

func checkAcceptBacklog(f *Facts, t Target) verdict.Check {
	s, ok := f.SysInt("net.core.somaxconn")
	if !ok {
		return skip("net.core.somaxconn not readable")
	}
	need := backlogNeed(t)
	obs := fmt.Sprintf("net.core.somaxconn %d (caps every listen() backlog)", s)
	exp := fmt.Sprintf(">= %d (2 x %d connections/s x 1 s)", need, t.ConnRate)
	if s >= need {
		return pass(fmt.Sprintf("accept queue up to %d connections for %d connections/s", s, t.ConnRate), obs, exp)
	}
	return fail(fmt.Sprintf("net.core.somaxconn %d < %d: at %d connections/s the accept queue overflows and clients wait 1 s or more to retry", s, need, t.ConnRate),
		obs, exp, fmt.Sprintf("sysctl -w net.core.somaxconn=%d, and give the broker a listen backlog as large (it is capped by somaxconn)", max(need, 4096)))
}

func checkAcceptSynBacklog(f *Facts, t Target) verdict.Check {
	b, ok1 := f.SysInt("net.ipv4.tcp_max_syn_backlog")
	c, ok2 := f.SysInt("net.ipv4.tcp_syncookies")
	if !ok1 || !ok2 {
		return skip("tcp_max_syn_backlog or tcp_syncookies not readable")
	}
	need := backlogNeed(t)
	obs := fmt.Sprintf("tcp_max_syn_backlog %d, tcp_syncookies %d", b, c)
	exp := fmt.Sprintf("tcp_syncookies 1, or tcp_max_syn_backlog >= %d (2 x %d connections/s x 1 s)", need, t.ConnRate)
	if c != 0 {
		return pass(fmt.Sprintf("tcp_syncookies %d: a full SYN queue is answered with cookies; tcp_max_syn_backlog (%d) only limits without them", c, b), obs, exp)
	}
	if b >= need {
		return warn(fmt.Sprintf("tcp_syncookies is off: the SYN queue (%d) fits %d connections/s but a SYN flood fills it", b, t.ConnRate), obs, exp, "sysctl -w net.ipv4.tcp_syncookies=1")
	}
	return fail(fmt.Sprintf("tcp_max_syn_backlog %d < %d with tcp_syncookies off: at %d connections/s SYNs are dropped (ListenDrops) and clients retry after 1 s", b, need, t.ConnRate),
		obs, exp, fmt.Sprintf("sysctl -w net.ipv4.tcp_syncookies=1, or sysctl -w net.ipv4.tcp_max_syn_backlog=%d", need))
}

func checkAcceptOverflows(f *Facts, t Target) verdict.Check {
	if f.Netstat == nil {
		return skip("/proc/net/netstat not readable")
	}
	ov, dr := f.Netstat["ListenOverflows"], f.Netstat["ListenDrops"]
	obs := fmt.Sprintf("ListenOverflows %d, ListenDrops %d since boot (/proc/net/netstat TcpExt)", ov, dr)
	exp := "0: no accept queue overflow"
	if ov == 0 && dr == 0 {
		return pass("no accept queue overflow since boot", obs, exp)
	}
	return warn(fmt.Sprintf("the accept queue already overflowed: ListenOverflows %d, ListenDrops %d since boot", ov, dr), obs, exp,
		"raise net.core.somaxconn and the server's listen backlog; check the server accepts fast enough (nstat -az TcpExtListenOverflows shows it grow)")
}
