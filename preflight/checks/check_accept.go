package checks

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Accept path checks for servers (broker, iotdb). A connection waits in
// the listener's SYN queue and then its accept queue; the accept queue is
// min(listen() backlog, net.core.somaxconn). At a connect rate R the queue
// must hold a burst of R x 1 s, doubled for slack (the rule:
// backlog >= 2 x rate x 1 s). Overflowing it drops the SYN/ACK and the
// client retries after 1 s, 3 s, 7 s ...

var serverRoles = []facts.Role{facts.Broker, facts.IoTDB}

func init() {
	register(CheckDef{ID: "accept.backlog", Doc: "min(net.core.somaxconn, the target listener's listen() backlog) >= 2 x conn_rate x 1 s", Roles: serverRoles, Func: checkAcceptBacklog})
	register(CheckDef{ID: "accept.queue", Doc: "the target listener's accept queue is not full now", Roles: serverRoles, Func: checkAcceptQueue})
	register(CheckDef{ID: "accept.syn_backlog", Doc: "tcp_max_syn_backlog >= 2 x conn_rate x 1 s unless tcp_syncookies is on", Roles: serverRoles, Func: checkAcceptSynBacklog})
	register(CheckDef{ID: "accept.overflows", Doc: "ListenOverflows and ListenDrops since boot, as information (not judged: preflight runs no load)", Roles: serverRoles, Func: checkAcceptOverflows})
}

func backlogNeed(t facts.Target) int64 { return 2 * int64(t.ConnRate) }

// KnownBacklogs are the listen() backlogs of common servers, in
// connections, and where each number comes from.
var KnownBacklogs = []struct {
	Server  string
	Backlog int
	Source  string
}{
	{"mosquitto 2.0", 100, "listen(sock, 100) in its src/net.c, not configurable; ss -ltn shows Send-Q 100 for mosquitto 2.0.11"},
	{"EMQX 5", 1024, "listeners.tcp.default.tcp_options.backlog, default 1024 (emqx.conf)"},
	{"IoTDB 2.0 DataNode (Thrift)", 50, "Thrift's TServerSocket leaves Java's ServerSocket default backlog of 50; ss -ltn shows Send-Q 50 on port 6667 for IoTDB 2.0.10"},
}

func knownBacklogText(need int64) string {
	var parts []string
	for _, k := range KnownBacklogs {
		short := ""
		if int64(k.Backlog) < need {
			short = fmt.Sprintf(", below the %d needed", need)
		}
		parts = append(parts, fmt.Sprintf("%s listens with %d%s (%s)", k.Server, k.Backlog, short, k.Source))
	}
	return strings.Join(parts, "; ")
}

// targetListeners are the listeners on the target's ports.
func TargetListeners(f *facts.Facts, t facts.Target) []facts.Listener {
	var out []facts.Listener
	for _, l := range f.Listeners {
		if slices.Contains(t.ListenerPorts(), l.Port) {
			out = append(out, l)
		}
	}
	return out
}

func checkAcceptBacklog(f *facts.Facts, t facts.Target) verdict.Check {
	s, ok := f.SysInt("net.core.somaxconn")
	if !ok {
		return skip("net.core.somaxconn not readable")
	}
	need := backlogNeed(t)
	exp := fmt.Sprintf("accept queue >= %s (2 x %d connections/s x 1 s)", plural.N(need, "connection"), t.ConnRate)
	raise := fmt.Sprintf("hostprep tune with net.core.somaxconn >= %d (or sysctl -w net.core.somaxconn=%d), then restart the server: a listener keeps the backlog it got at listen()", need, max(need, 4096))
	var ls []facts.Listener
	if f.ListenersKnown {
		ls = TargetListeners(f, t)
	}
	if s < need && len(ls) == 0 {
		return fail(fmt.Sprintf("net.core.somaxconn %d < %d: every listen() backlog is capped at it, so at %d connections/s the accept queue overflows and clients wait 1 s or more to retry", s, need, t.ConnRate),
			fmt.Sprintf("net.core.somaxconn %d (caps every listen() backlog)", s), exp, raise)
	}
	ports := t.ListenerPorts()
	if !f.ListenersKnown {
		return warn(fmt.Sprintf("could not read the listeners (sock_diag): somaxconn %d allows %d, but the server's own listen() backlog decides and is unknown", s, need),
			fmt.Sprintf("net.core.somaxconn %d; listeners not readable", s), exp, "run preflight where sock_diag is readable (the host's network namespace), or check ss -ltn: Send-Q of a LISTEN socket is its backlog")
	}
	if len(ls) == 0 && t.InProcess {
		return pass(fmt.Sprintf("the embedded broker listens with Go's net.Listen, whose listen() backlog is net.core.somaxconn (%d): it holds %s for %d connections/s", s, plural.N(need, "connection"), t.ConnRate),
			fmt.Sprintf("net.core.somaxconn %d (the embedded broker's backlog)", s), exp)
	}
	if len(ls) == 0 {
		return skip(fmt.Sprintf("nothing listens on port %s yet: somaxconn %d allows %d, but the server's own listen() backlog will decide: %s. Run hostprep preflight again with the server started (hostprep preflight --port PORT names another listener)",
			facts.PortList(ports), s, need, knownBacklogText(need)))
	}
	// A listener's backlog (sock_diag, ss's Send-Q) is already capped at
	// somaxconn as it was at its listen(): today's somaxconn reaches it
	// only when the server listens again.
	var short, obs []string
	for _, l := range ls {
		obs = append(obs, fmt.Sprintf("%s listen() backlog %d (ss -ltn Send-Q), %s", l.Endpoint(), l.Backlog, l.Owner()))
		if int64(l.Backlog) < need {
			short = append(short, fmt.Sprintf("accept queue of the listener on port %d is %d (%s, %s): its listen() backlog, capped at net.core.somaxconn as it was at listen()", l.Port, l.Backlog, l.Endpoint(), l.Owner()))
		}
	}
	o := fmt.Sprintf("net.core.somaxconn %d; %s", s, strings.Join(obs, "; "))
	if len(short) > 0 {
		return fail(strings.Join(short, "; ")+fmt.Sprintf(" < %d needed at %d connections/s: the queue overflows, the kernel drops SYNs and logs \"SYN flooding\", clients retry after 1 s", need, t.ConnRate),
			o, exp, backlogRemedy(ls, need, s))
	}
	holds := fmt.Sprintf("accept queue of %s on port %s holds >= %s for %d connections/s", plural.N(len(ls), "listener"), facts.PortList(ports), plural.N(need, "connection"), t.ConnRate)
	if s < need {
		return warn(holds+fmt.Sprintf(" now, but net.core.somaxconn is %d since: a restart of the server caps its backlog at %d", s, s), o, exp, raise)
	}
	return pass(holds, o, exp)
}

// backlogRemedy says how to raise the listeners' backlog, naming what is
// known of the owning server.
func backlogRemedy(ls []facts.Listener, need, somaxconn int64) string {
	r := fmt.Sprintf("raise the server's own listen backlog to >= %d (somaxconn %d already allows it) and restart it", need, somaxconn)
	known := map[string]string{
		"mosquitto": "mosquitto 2.0 hard-codes listen(sock, 100): no setting raises it; spread the clients over more listeners or brokers, or lower the connect rate",
		"java":      "an IoTDB 2.0 DataNode listens with Java's default backlog of 50 (Thrift TServerSocket), with no property to raise it: lower the connect rate (SessionPool connects once per session) or spread clients over more DataNodes",
		"beam.smp":  "EMQX: set listeners.tcp.default.tcp_options.backlog (default 1024)",
	}
	for _, l := range ls {
		if k, ok := known[l.Process]; ok {
			return r + "; " + k
		}
	}
	return r + "; known backlogs: " + knownBacklogText(need)
}

func checkAcceptQueue(f *facts.Facts, t facts.Target) verdict.Check {
	if !f.ListenersKnown {
		return skip("listeners not readable (sock_diag)")
	}
	ls := TargetListeners(f, t)
	if len(ls) == 0 && t.InProcess {
		return skip("the embedded broker listens only while the probe runs; the probe counts the accept queue's overflows (ListenOverflows) over its run")
	}
	if len(ls) == 0 {
		return skip(fmt.Sprintf("nothing listens on port %s", facts.PortList(t.ListenerPorts())))
	}
	var full, obs []string
	for _, l := range ls {
		obs = append(obs, fmt.Sprintf("%s: %d waiting of backlog %d (ss -ltn Recv-Q/Send-Q)", l.Endpoint(), l.AcceptQueue, l.Backlog))
		// Full as the kernel judges it (sk_acceptq_is_full): more waiting
		// than the backlog, so listen(3) holds 4 and listen(0) holds 1.
		if l.AcceptQueue > l.Backlog {
			full = append(full, fmt.Sprintf("%s (%s): %s waiting, backlog %d", l.Endpoint(), l.Owner(), plural.N(l.AcceptQueue, "connection"), l.Backlog))
		}
	}
	if len(full) > 0 {
		return fail("accept queue full now: "+strings.Join(full, "; ")+": the server does not accept fast enough and new connections are dropped",
			strings.Join(obs, "; "), "accept queue not above its backlog", "find why the server stalls (CPU, a blocked accept loop), then raise its listen backlog")
	}
	return pass("accept queue not full", strings.Join(obs, "; "), "accept queue not above its backlog")
}

func checkAcceptSynBacklog(f *facts.Facts, t facts.Target) verdict.Check {
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

func checkAcceptOverflows(f *facts.Facts, t facts.Target) verdict.Check {
	if f.Netstat == nil {
		return skip("/proc/net/netstat not readable")
	}
	ov, dr := f.Netstat["ListenOverflows"], f.Netstat["ListenDrops"]
	if ov == 0 && dr == 0 {
		return pass("no accept queue overflow since boot", fmt.Sprintf("ListenOverflows %d, ListenDrops %d since boot (/proc/net/netstat TcpExt)", ov, dr), "0: no accept queue overflow")
	}
	// A since-boot counter cannot clear without a reboot: any earlier
	// load (a test suite's) would warn forever. Preflight runs no load,
	// so it has no change over a run to judge; the figure is information.
	return skip(fmt.Sprintf("not judged: ListenOverflows %d, ListenDrops %d since boot (information: an earlier load overflowed some accept queue; preflight runs no load of its own, and the probe judges the change over its run; nstat -az TcpExtListenOverflows shows whether it grows now)", ov, dr))
}
