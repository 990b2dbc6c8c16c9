package preflight

import (
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
)

// Ephemeral port checks. An outgoing connection needs a local port from
// net.ipv4.ip_local_port_range that is not in ip_local_reserved_ports; the
// 4-tuple must be unique, so each (source address, destination ip:port)
// pair holds at most that many connections. The default range 32768-60999
// gives 28232 per pair.

// timeWaitSeconds is TCP_TIMEWAIT_LEN (include/net/tcp.h): a closed
// connection's port stays in TIME_WAIT for 60 s on the side that closed
// first; it is not a sysctl.
const timeWaitSeconds = 60

// widestRange is the widest sensible ephemeral range (1024-65535): below
// 1024 are privileged service ports.
const widestLow, widestHigh = 1024, 65535

func init() {
	register(CheckDef{ID: "ports.ephemeral", Doc: "ephemeral ports x source addresses x destinations >= sockets", Roles: []Role{Loadgen}, Func: checkPortsEphemeral})
	register(CheckDef{ID: "ports.time_wait", Doc: "ports left after TIME_WAIT churn (conn_rate x 60 s), or tcp_tw_reuse=1", Roles: []Role{Loadgen}, Func: checkPortsTimeWait})
	register(CheckDef{ID: "ports.collision", Doc: "no listening or service port inside the ephemeral range unless reserved", Func: checkPortsCollision})
}

// portRange returns ip_local_port_range.
func portRange(f *Facts) (lo, hi int64, ok bool) {
	r, ok := f.SysFields("net.ipv4.ip_local_port_range")
	if !ok || len(r) != 2 || r[0] > r[1] {
		return 0, 0, false
	}
	return r[0], r[1], true
}

// reservedPorts parses ip_local_reserved_ports ("1883,8000-8010").
func reservedPorts(f *Facts) map[int]bool {
	out := map[int]bool{}
	for _, part := range strings.Split(f.Sysctl["net.ipv4.ip_local_reserved_ports"], ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		a, b, isRange := strings.Cut(part, "-")
		lo, err1 := strconv.Atoi(a)
		hi := lo
		var err2 error
		if isRange {
			hi, err2 = strconv.Atoi(b)
		}
		if err1 != nil || err2 != nil {
			continue
		}
		for p := lo; p <= hi && p <= 65535; p++ {
			out[p] = true
		}
	}
	return out
}

func reservedIn(res map[int]bool, lo, hi int64) int64 {
	var n int64
	for p := range res {
		if int64(p) >= lo && int64(p) <= hi {
			n++
		}
	}
	return n
}

// portCapacity is what a loadgen can open: ports per (source, destination)
// pair, usable source addresses and distinct destinations.
type portCapacity struct {
	lo, hi     int64
	perPair    int64 // ports in range minus reserved
	sources    int64
	dests      int64
	total      int64
	sourceNote string
}

func loadgenCapacity(f *Facts, t Target) (portCapacity, bool) {
	lo, hi, ok := portRange(f)
	if !ok {
		return portCapacity{}, false
	}
	c := portCapacity{lo: lo, hi: hi}
	c.perPair = hi - lo + 1 - reservedIn(reservedPorts(f), lo, hi)
	// Destinations decide the address family the sources must have.
	v6 := false
	dests := map[string]bool{}
	for _, d := range t.Destinations {
		dests[d] = true
		if h, _, err := net.SplitHostPort(d); err == nil {
			if ip := net.ParseIP(h); ip != nil && ip.To4() == nil {
				v6 = true
			}
		}
	}
	c.dests = int64(max(1, len(dests)))
	srcs := f.SourceAddresses
	if len(t.SourceIPs) > 0 {
		srcs = t.SourceIPs
	}
	for _, s := range srcs {
		ip := net.ParseIP(s)
		if ip != nil && (ip.To4() == nil) == v6 {
			c.sources++
		}
	}
	fam := "IPv4"
	if v6 {
		fam = "IPv6"
	}
	c.sourceNote = plural.N(c.sources, fam+" source address")
	if c.sources == 0 {
		c.sources = 1
		c.sourceNote = fmt.Sprintf("no global %s address found: assuming 1 source address", fam)
	}
	c.total = c.perPair * c.sources * c.dests
	return c, true
}

func checkPortsEphemeral(f *Facts, t Target) verdict.Check {
	c, ok := loadgenCapacity(f, t)
	if !ok {
		return skip("net.ipv4.ip_local_port_range not readable")
	}
	n := int64(t.Sockets)
	obs := fmt.Sprintf("ip_local_port_range %d-%d minus reserved = %s per source address per destination; %s; %s",
		c.lo, c.hi, plural.N(c.perPair, "port"), c.sourceNote, plural.N(c.dests, "destination"))
	exp := fmt.Sprintf("ports x source addresses x destinations >= %s", plural.N(n, "connection"))
	if c.total >= n {
		return pass(fmt.Sprintf("%d ephemeral ports x %d source x %d destination = %s >= %d", c.perPair, c.sources, c.dests, plural.N(c.total, "connection"), n), obs, exp)
	}
	needSrc := ceilDiv(n, c.perPair*c.dests)
	widest := int64(widestHigh-widestLow+1) - reservedIn(reservedPorts(f), widestLow, widestHigh)
	needSrcWide := ceilDiv(n, widest*c.dests)
	summary := fmt.Sprintf("ephemeral ports: %d per source address per destination < %s: %s x %s hold %d; need %s (connect() fails with EADDRNOTAVAIL, \"cannot assign requested address\", near %d)",
		c.perPair, plural.N(n, "connection"), plural.N(c.sources, "source address"), plural.N(c.dests, "destination"), c.total,
		plural.N(needSrc, "source address"), c.total)
	remedy := fmt.Sprintf("add source addresses (%s in all; ip addr add ADDR/PREFIX dev IFACE) and bind each connection to one with IP_BIND_ADDRESS_NO_PORT before connect(), or widen net.ipv4.ip_local_port_range to \"%d %d\" (%s: %s), or spread the load over more destination ip:port endpoints",
		plural.N(needSrc, "source address"), widestLow, widestHigh, plural.N(widest, "port"), plural.N(needSrcWide, "source address"))
	return fail(summary, obs, exp, remedy)
}

func checkPortsTimeWait(f *Facts, t Target) verdict.Check {
	c, ok := loadgenCapacity(f, t)
	if !ok {
		return skip("net.ipv4.ip_local_port_range not readable")
	}
	reuse, _ := f.SysInt("net.ipv4.tcp_tw_reuse")
	tw := int64(t.ConnRate) * timeWaitSeconds
	free := c.total - int64(t.Sockets)
	obs := fmt.Sprintf("%d connections/s x %d s = %s in TIME_WAIT if connections churn; %s left beside %d held; tcp_tw_reuse %d",
		t.ConnRate, timeWaitSeconds, plural.N(tw, "port"), plural.N(max(free, 0), "port"), t.Sockets, reuse)
	exp := "TIME_WAIT ports fit beside the held connections, or tcp_tw_reuse=1"
	if reuse == 1 {
		return pass("tcp_tw_reuse=1: new outgoing connections reuse ports in TIME_WAIT (with TCP timestamps)", obs, exp)
	}
	if tw <= free {
		return pass(fmt.Sprintf("%s in TIME_WAIT at %d connections/s fit in the %d free ports", plural.N(tw, "port"), t.ConnRate, free), obs, exp)
	}
	mode := "0 (off)"
	if reuse == 2 {
		mode = "2 (loopback only)"
	}
	return warn(fmt.Sprintf("TIME_WAIT churn: %d connections/s keep %s in TIME_WAIT for %d s, more than the %s left; tcp_tw_reuse is %s",
		t.ConnRate, plural.N(tw, "port"), timeWaitSeconds, plural.N(max(free, 0), "port"), mode),
		obs, exp, "sysctl -w net.ipv4.tcp_tw_reuse=1 (safe for outgoing connections with TCP timestamps on), or let the server close first, or add source addresses")
}

func joinPorts(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

func checkPortsCollision(f *Facts, t Target) verdict.Check {
	lo, hi, ok := portRange(f)
	if !ok {
		return skip("net.ipv4.ip_local_port_range not readable")
	}
	res := reservedPorts(f)
	var listening, service []int
	seen := map[int]bool{}
	for _, p := range f.ListeningPorts {
		if int64(p) >= lo && int64(p) <= hi && !res[p] && !seen[p] {
			listening = append(listening, p)
			seen[p] = true
		}
	}
	for _, p := range t.ServicePorts {
		if int64(p) >= lo && int64(p) <= hi && !res[p] && !seen[p] {
			service = append(service, p)
			seen[p] = true
		}
	}
	sort.Ints(listening)
	sort.Ints(service)
	obs := fmt.Sprintf("ephemeral range %d-%d; reserved: %q; listening: %v; service ports: %v", lo, hi, f.Sysctl["net.ipv4.ip_local_reserved_ports"], f.ListeningPorts, t.ServicePorts)
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
	return warn(summary, obs, exp,
		fmt.Sprintf("hostprep tune apply with reserve_ports: [%s] in the profile (it merges them into net.ipv4.ip_local_reserved_ports now and at boot, keeping existing entries)", strings.Join(reserve, ", ")))
}

func pluralWord(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
