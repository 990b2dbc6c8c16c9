package preflight

import (
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/procnet"
	psnet "github.com/shirou/gopsutil/v3/net"
)

// conntrack reads nf_conntrack's table size, only where the module is
// loaded (like node_exporter's conntrack collector, absence is "no data").
func (g *gatherer) conntrack() {
	dir := g.path("/proc/sys/net/netfilter")
	read := func(name string) (uint64, bool) {
		b, err := os.ReadFile(dir + "/" + name)
		if err != nil {
			return 0, false
		}
		n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		return n, err == nil
	}
	max, ok := read("nf_conntrack_max")
	if !ok {
		return
	}
	c := Conntrack{Loaded: true, Max: max}
	c.Count, _ = read("nf_conntrack_count")
	c.Buckets, _ = read("nf_conntrack_buckets")
	g.f.Conntrack = c
}

// netstat reads the TcpExt counters of /proc/net/netstat (procnet.TcpExt).
func (g *gatherer) netstat() {
	m, err := procnet.TcpExt(g.path("/proc"))
	if err != nil {
		g.note("/proc/net/netstat: %v", err)
	}
	g.f.Netstat = m
}

// sockstat reads the TCP line of /proc/net/sockstat.
func (g *gatherer) sockstat() {
	b, err := os.ReadFile(g.path("/proc/net/sockstat"))
	if err != nil {
		g.note("/proc/net/sockstat: %v", err)
		return
	}
	g.f.Sockstat = parseSockstat(string(b))
}

func parseSockstat(s string) Sockstat {
	var out Sockstat
	for _, line := range strings.Split(s, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "TCP:" {
			continue
		}
		for i := 1; i+1 < len(fields); i += 2 {
			n, _ := strconv.ParseUint(fields[i+1], 10, 64)
			switch fields[i] {
			case "inuse":
				out.InUse = n
			case "orphan":
				out.Orphan = n
			case "tw":
				out.TW = n
			case "alloc":
				out.Alloc = n
			case "mem":
				out.MemPages = n
			}
		}
	}
	return out
}

// listening reads the TCP ports in LISTEN state from /proc/net/tcp and
// /proc/net/tcp6 (procnet.ListeningTCPPorts).
func (g *gatherer) listening() error {
	ports, err := procnet.ListeningTCPPorts(g.path("/proc"))
	if err != nil {
		return err
	}
	g.f.ListeningPorts = ports
	return nil
}

// sourceAddresses lists the global unicast addresses (gopsutil net
// interfaces), or the --source-ips given.
func (g *gatherer) sourceAddresses(override []string) error {
	if len(override) > 0 {
		g.f.SourceAddresses = append([]string(nil), override...)
		return nil
	}
	ifs, err := psnet.Interfaces()
	if err != nil {
		return err
	}
	for _, i := range ifs {
		for _, a := range i.Addrs {
			ip, _, err := net.ParseCIDR(a.Addr)
			if err != nil {
				ip = net.ParseIP(a.Addr)
			}
			if ip != nil && ip.IsGlobalUnicast() {
				g.f.SourceAddresses = append(g.f.SourceAddresses, ip.String())
			}
		}
	}
	return nil
}
