package checks

import (
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Ephemeral port checks. An outgoing connection needs a local port from
// net.ipv4.ip_local_port_range that is not in ip_local_reserved_ports; the
// 4-tuple must be unique, so each (source address, destination ip:port)
// pair holds at most that many connections. The default range 32768-60999
// gives 28232 per pair.

// timeWaitSeconds is TCP_TIMEWAIT_LEN (include/net/tcp.h): a closed
// connection's port stays in TIME_WAIT for 60 s on the side that closed
// first; it is not a sysctl.
const TimeWaitSeconds = 60

// widestRange is the widest sensible ephemeral range (1024-65535): below
// 1024 are privileged service ports.
const WidestLow, WidestHigh = 1024, 65535

func init() {
	register(CheckDef{ID: "ports.ephemeral", Doc: "ephemeral ports x source addresses x destinations >= sockets", Roles: []facts.Role{facts.Loadgen}, Func: checkPortsEphemeral})
	register(CheckDef{ID: "ports.time_wait", Doc: "ports left after TIME_WAIT churn (conn_rate x 60 s), or tcp_tw_reuse in effect (1 with tcp_timestamps, 2 for loopback destinations)", Roles: []facts.Role{facts.Loadgen}, Func: checkPortsTimeWait})
	register(CheckDef{ID: "ports.collision", Doc: "no listening or service port inside the ephemeral range unless reserved", Func: checkPortsCollision})
}

// portCapacity is what a loadgen can open: ports per (source, destination)
// pair, usable source addresses and distinct destinations.
type portCapacity struct {
	lo, hi  int64
	PerPair int64 // ports in range minus reserved
	sources int64
	dests   int64
	Total   int64
	// bound is true when the load generator binds each connection to a
	// source address (--source-ips): Total is then PerPair x sources.
	bound bool
	// noPortTotal is what bound sources would give with
	// IP_BIND_ADDRESS_NO_PORT (PerPair x sources x dests).
	noPortTotal int64
	sourceNote  string
	// formula says how total was reached ("28232 ports x 1 source x 2
	// destinations").
	formula string
}

// destKey is a destination as the kernel's 4-tuple sees it: an
// IPv4-mapped IPv6 address (::ffff:127.0.0.1) is the IPv4 address, so
// 127.0.0.1:18831 and [::ffff:127.0.0.1]:18831 are one endpoint.
func destKey(d string) (key string, ip net.IP) {
	h, p, err := net.SplitHostPort(d)
	if err != nil {
		return d, nil
	}
	ip = net.ParseIP(h)
	if ip == nil {
		return strings.ToLower(h) + ":" + p, nil
	}
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return net.JoinHostPort(ip.String(), p), ip
}

// loadgenCapacity counts the connections a load generator can open.
//
// Without --source-ips the load generator is taken to call plain connect()
// with no bind(): the kernel picks one source address per destination,
// the route's preferred source (ip_route_connect, net/ipv4/route.c), so
// the host's other addresses add nothing: ports x 1 x destinations.
//
// With --source-ips it binds each socket to a source first. bind(src, 0)
// takes a port at bind() time (inet_csk_get_port, net/ipv4/inet_connection_sock.c),
// before the destination is known, and holds it in the bind hash: the port
// is exclusive on that address across every destination, so capacity is
// ports x sources. Only with IP_BIND_ADDRESS_NO_PORT (ip(7); the port is
// then chosen at connect() by __inet_hash_connect, net/ipv4/inet_hashtables.c,
// unique per 4-tuple) is it ports x sources x destinations. The check
// assumes the conservative case and says so.
func LoadgenCapacity(f *facts.Facts, t facts.Target) (portCapacity, bool) {
	lo, hi, ok := facts.PortRange(f)
	if !ok {
		return portCapacity{}, false
	}
	c := portCapacity{lo: lo, hi: hi}
	c.PerPair = max(0, hi-lo+1-facts.ReservedIn(facts.ReservedPorts(f), lo, hi))
	v6 := SourcesV6(t)
	dests := map[string]bool{}
	for _, d := range t.Destinations {
		k, _ := destKey(d)
		dests[k] = true
	}
	c.dests = int64(max(1, len(dests)))
	fam := "IPv4"
	if v6 {
		fam = "IPv6"
	}
	if len(t.SourceIPs) == 0 {
		c.sources = 1
		c.sourceNote = fmt.Sprintf("1 source address per destination (no --source-ips: a plain connect() uses the route's preferred source; the host's %s count only if the load generator binds to them)",
			plural.N(len(f.SourceAddresses), "global address"))
		c.Total = c.PerPair * c.dests
		c.formula = fmt.Sprintf("%s x 1 source x %s", plural.N(c.PerPair, "port"), plural.N(c.dests, "destination"))
		return c, true
	}
	c.bound = true
	seen := map[string]bool{}
	for _, s := range t.SourceIPs {
		ip := net.ParseIP(s)
		if ip == nil {
			continue
		}
		if v4 := ip.To4(); v4 != nil {
			ip = v4
		}
		if (ip.To4() == nil) == v6 && !seen[ip.String()] {
			seen[ip.String()] = true
			c.sources++
		}
	}
	c.sourceNote = plural.N(c.sources, fam+" source address") + " from --source-ips"
	if c.sources == 0 {
		c.sources = 1
		c.sourceNote = fmt.Sprintf("no %s address in --source-ips: assuming 1 source address", fam)
	}
	c.Total = c.PerPair * c.sources
	c.noPortTotal = c.PerPair * c.sources * c.dests
	c.formula = fmt.Sprintf("%s x %s (bind(src, 0) before connect(): a port is exclusive on its source across destinations)", plural.N(c.PerPair, "port"), plural.N(c.sources, "source"))
	return c, true
}

// SourcesV6 says whether the source addresses that count for t are
// IPv6: the destinations decide the family (one IPv6 destination makes
// it IPv6), and only --source-ips of that family count.
func SourcesV6(t facts.Target) bool {
	for _, d := range t.Destinations {
		if _, ip := destKey(d); ip != nil && ip.To4() == nil {
			return true
		}
	}
	return false
}

// bindAssumption is what ports.ephemeral assumes about a load generator
// that binds to its --source-ips.
const bindAssumption = "assumed: the load generator binds each socket with bind(src, 0) without IP_BIND_ADDRESS_NO_PORT, so a port is taken on its source for every destination"

func checkPortsEphemeral(f *facts.Facts, t facts.Target) verdict.Check {
	c, ok := LoadgenCapacity(f, t)
	if !ok {
		return skip("net.ipv4.ip_local_port_range not readable")
	}
	n := int64(t.Sockets)
	obs := fmt.Sprintf("ip_local_port_range %d-%d minus reserved = %s per source address; %s; %s",
		c.lo, c.hi, plural.N(c.PerPair, "port"), c.sourceNote, plural.N(c.dests, "distinct destination"))
	exp := fmt.Sprintf("ports x source addresses x destinations >= %s", plural.N(n, "connection"))
	if c.bound {
		obs += fmt.Sprintf("; %s (with IP_BIND_ADDRESS_NO_PORT: %s)", bindAssumption, plural.N(c.noPortTotal, "connection"))
		exp = fmt.Sprintf("ports x bound source addresses >= %s", plural.N(n, "connection"))
	}
	if c.PerPair == 0 {
		return fail(fmt.Sprintf("ephemeral ports: ip_local_reserved_ports covers the whole range %d-%d: connect() has no port to pick (EADDRNOTAVAIL), whatever the source addresses", c.lo, c.hi),
			obs, exp, fmt.Sprintf("unreserve ports in net.ipv4.ip_local_reserved_ports (%q), or widen net.ipv4.ip_local_port_range beyond them (e.g. \"%d %d\"); adding source addresses cannot help", f.Sysctl["net.ipv4.ip_local_reserved_ports"], WidestLow, WidestHigh))
	}
	if c.Total >= n {
		return pass(fmt.Sprintf("%s = %s >= %d", c.formula, plural.N(c.Total, "connection"), n), obs, exp)
	}
	needSrc := CeilDiv(n, c.PerPair)
	widest := int64(WidestHigh-WidestLow+1) - facts.ReservedIn(facts.ReservedPorts(f), WidestLow, WidestHigh)
	needSrcWide := CeilDiv(n, widest)
	summary := fmt.Sprintf("ephemeral ports: %d per source address per destination < %s: %s hold %d (connect() fails with EADDRNOTAVAIL, \"cannot assign requested address\", near %d); need %s the load generator binds to (--source-ips), or %s",
		c.PerPair, plural.N(n, "connection"), c.formula, c.Total, c.Total, plural.N(needSrc, "source address"), plural.N(needSrc, "destination endpoint"))
	remedy := fmt.Sprintf("bind the connections over %s (ip addr add ADDR/PREFIX dev IFACE; pass them with --source-ips; with IP_BIND_ADDRESS_NO_PORT set before bind() a port serves every destination), or widen net.ipv4.ip_local_port_range to \"%d %d\" (%s: %s), or spread the load over %s (plain connect(): one source each)",
		plural.N(needSrc, "source address"), WidestLow, WidestHigh, plural.N(widest, "port"), plural.N(needSrcWide, "source address"), plural.N(needSrc, "destination ip:port endpoint"))
	return fail(summary, obs, exp, remedy)
}

// allLoopback says whether every destination is a loopback address
// (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104); false with none named.
func allLoopback(t facts.Target) bool {
	if len(t.Destinations) == 0 {
		return false
	}
	for _, d := range t.Destinations {
		if _, ip := destKey(d); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return true
}

// twReuseEffective says whether tcp_tw_reuse lets this load generator's
// connect() take a port still in TIME_WAIT, and why (or why not).
// tcp_twsk_unique (net/ipv4/tcp_ipv4.c) reuses a TIME_WAIT port only when
// the old connection carried TCP timestamps (tw_ts_recent_stamp), so only
// with net.ipv4.tcp_timestamps on; value 2 (the default,
// Documentation/networking/ip-sysctl.rst: "2 - enable for loopback traffic
// only") does so only for a loopback source or destination.
func twReuseEffective(f *facts.Facts, t facts.Target) (bool, string) {
	reuse, _ := f.SysInt("net.ipv4.tcp_tw_reuse")
	ts, tsKnown := f.SysInt("net.ipv4.tcp_timestamps")
	switch {
	case len(t.SourceIPs) > 0:
		return false, fmt.Sprintf("tcp_tw_reuse %d does not apply: with --source-ips the load generator binds each socket (bind(src, 0), as ports.ephemeral assumes), and only a port chosen at connect() can take over a TIME_WAIT one (tcp_twsk_unique, from __inet_hash_connect; IP_BIND_ADDRESS_NO_PORT defers the choice to connect())", reuse)
	case reuse == 0:
		return false, "tcp_tw_reuse 0 (off)"
	case reuse == 2 && !allLoopback(t):
		return false, "tcp_tw_reuse 2 reuses TIME_WAIT ports for loopback traffic only, and not every destination is loopback"
	case !tsKnown:
		return false, fmt.Sprintf("tcp_tw_reuse %d, but net.ipv4.tcp_timestamps could not be read: reuse needs TCP timestamps", reuse)
	case ts == 0:
		return false, fmt.Sprintf("tcp_tw_reuse %d has no effect: net.ipv4.tcp_timestamps is 0 and reuse needs TCP timestamps", reuse)
	case reuse == 2:
		return true, "tcp_tw_reuse 2 (loopback only) with TCP timestamps: every destination is loopback, so new connections reuse ports in TIME_WAIT"
	}
	return true, fmt.Sprintf("tcp_tw_reuse %d with TCP timestamps (tcp_timestamps %d): new outgoing connections reuse ports in TIME_WAIT", reuse, ts)
}

func checkPortsTimeWait(f *facts.Facts, t facts.Target) verdict.Check {
	c, ok := LoadgenCapacity(f, t)
	if !ok {
		return skip("net.ipv4.ip_local_port_range not readable")
	}
	reuse, _ := f.SysInt("net.ipv4.tcp_tw_reuse")
	ts := "unknown"
	if v, ok := f.SysInt("net.ipv4.tcp_timestamps"); ok {
		ts = strconv.FormatInt(v, 10)
	}
	tw := int64(t.ConnRate) * TimeWaitSeconds
	free := c.Total - int64(t.Sockets)
	obs := fmt.Sprintf("%d connections/s x %d s = %s in TIME_WAIT if connections churn; %s left beside %d held; tcp_tw_reuse %d, tcp_timestamps %s",
		t.ConnRate, TimeWaitSeconds, plural.N(tw, "port"), plural.N(max(free, 0), "port"), t.Sockets, reuse, ts)
	exp := "TIME_WAIT ports fit beside the held connections, or tcp_tw_reuse in effect (1 with tcp_timestamps on; 2 for loopback destinations)"
	effective, why := twReuseEffective(f, t)
	if effective {
		// A TIME_WAIT port is reused only once tcp_tw_reuse_delay (1 s;
		// before Linux 6.12 the next second of its last timestamp) has
		// passed: the last delay's connections still hold theirs.
		delay := int64(1000)
		if v, ok := f.SysInt("net.ipv4.tcp_tw_reuse_delay"); ok && v > 0 {
			delay = v
		}
		young := (int64(t.ConnRate)*delay + 999) / 1000
		if young > free {
			return warn(fmt.Sprintf("%s, but only after %d ms (tcp_tw_reuse_delay): the %s closed in the last %d ms at %d connections/s need more than the %s left", why, delay, plural.N(young, "port"), delay, t.ConnRate, plural.N(max(free, 0), "port")),
				obs, exp, "add source addresses or destinations, widen net.ipv4.ip_local_port_range, or lower the connection rate")
		}
		return pass(why, obs, exp)
	}
	if tw <= free {
		return pass(fmt.Sprintf("%s in TIME_WAIT at %d connections/s fit in the %d free ports", plural.N(tw, "port"), t.ConnRate, free), obs, exp)
	}
	remedy := "sysctl -w net.ipv4.tcp_tw_reuse=1 (safe for outgoing connections with TCP timestamps on), or let the server close first, or add source addresses"
	if len(t.SourceIPs) > 0 {
		remedy = "set IP_BIND_ADDRESS_NO_PORT on the load generator's sockets before bind() (then tcp_tw_reuse=1 applies), or let the server close first, or add source addresses"
	} else if ts == "0" {
		remedy = "sysctl -w net.ipv4.tcp_timestamps=1 (tcp_tw_reuse needs them) and net.ipv4.tcp_tw_reuse=1, or let the server close first, or add source addresses"
	}
	return warn(fmt.Sprintf("TIME_WAIT churn: %d connections/s keep %s in TIME_WAIT for %d s, more than the %s left; %s",
		t.ConnRate, plural.N(tw, "port"), TimeWaitSeconds, plural.N(max(free, 0), "port"), why),
		obs, exp, remedy)
}

// joinPorts is ports as "1883, 8883 and 8083", for a message.
func joinPorts(ps []int) string {
	s := facts.PortStrings(ps)
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func checkPortsCollision(f *facts.Facts, t facts.Target) verdict.Check {
	lo, hi, ok := facts.PortRange(f)
	if !ok {
		return skip("net.ipv4.ip_local_port_range not readable")
	}
	res := facts.ReservedPorts(f)
	var listening, service []int
	seen := map[int]bool{}
	for _, p := range f.ListeningPorts {
		if int64(p) >= lo && int64(p) <= hi && !res[p] && !seen[p] {
			listening = append(listening, p)
			seen[p] = true
		}
	}
	// The target's listener ports named with --port must be bindable
	// too, whether or not it listens yet (the role's usual ports are only
	// a guess at where to look).
	servicePorts := slices.Clone(t.ServicePorts)
	for _, p := range t.Ports {
		servicePorts = facts.AppendUnique(servicePorts, p)
	}
	for _, p := range servicePorts {
		if int64(p) >= lo && int64(p) <= hi && !res[p] && !seen[p] {
			service = append(service, p)
			seen[p] = true
		}
	}
	sort.Ints(listening)
	sort.Ints(service)
	obs := fmt.Sprintf("ephemeral range %d-%d; reserved: %q; listening: %v; service ports: %v", lo, hi, f.Sysctl["net.ipv4.ip_local_reserved_ports"], f.ListeningPorts, servicePorts)
	exp := "no listening or service port inside the ephemeral range unless it is in ip_local_reserved_ports"
	if len(listening)+len(service) == 0 {
		return pass(fmt.Sprintf("no listening or service port inside the ephemeral range %d-%d is unreserved", lo, hi), obs, exp)
	}
	var parts []string
	if len(listening) > 0 {
		parts = append(parts, fmt.Sprintf("%s %s", pluralWord(len(listening), "listening port", "listening ports"), joinPorts(listening)))
	}
	if len(service) > 0 {
		parts = append(parts, fmt.Sprintf("%s %s", pluralWord(len(service), "service port", "service ports"), joinPorts(service)))
	}
	all := append(append([]int(nil), listening...), service...)
	sort.Ints(all)
	verb := "lie"
	if len(all) == 1 {
		verb = "lies"
	}
	summary := fmt.Sprintf("%s %s inside the ephemeral range and %s not reserved (range %d-%d, ip_local_reserved_ports %q): an outgoing connection can take the port and the service then fails to bind (EADDRINUSE) after a restart",
		strings.Join(parts, " and "), verb, map[bool]string{true: "is", false: "are"}[len(all) == 1], lo, hi, f.Sysctl["net.ipv4.ip_local_reserved_ports"])
	var reserve []string
	if cur := strings.TrimSpace(f.Sysctl["net.ipv4.ip_local_reserved_ports"]); cur != "" {
		reserve = append(reserve, cur)
	}
	for _, p := range all {
		reserve = append(reserve, strconv.Itoa(p))
	}
	fix := fmt.Sprintf("hostprep tune apply with reserve_ports: [%s] in the profile (it merges them into net.ipv4.ip_local_reserved_ports now and at boot, keeping existing entries)", strings.Join(reserve, ", "))
	if len(listening) > 0 {
		// Only a port fixed in a service's configuration can be lost to
		// an outgoing connection; one the kernel picked at bind (port 0:
		// an Erlang distribution or RPC listener) changes at every start.
		fix = fmt.Sprintf("for a port fixed in its service's configuration, %s; a port the kernel picked at bind (port 0, as an Erlang distribution or RPC listener does) changes at every start and needs no reservation: `ss -ltnp 'sport = :%d'` names the process that holds it", fix, listening[0])
	}
	return warn(summary, obs, exp, fix)
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
