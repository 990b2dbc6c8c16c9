package facts

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
	psnet "github.com/shirou/gopsutil/v3/net"

	"github.com/hostprep/hostprep/internal/capacity"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/procnet"
)

// conntrack reads nf_conntrack's table size, only where the module is
// loaded (like node_exporter's conntrack collector, absence is "no data"):
// an absent nf_conntrack_max (ENOENT) means not loaded; one that exists but
// cannot be read (EACCES in a sandbox, an unprivileged container) means
// loaded with the value unknown, and so for nf_conntrack_count and
// nf_conntrack_buckets (Conntrack.Unreadable), never 0.
func (g *Gatherer) conntrack() {
	var c Conntrack
	read := func(name string) (uint64, bool) {
		b, err := os.ReadFile(g.path("/proc/sys/net/netfilter/" + name))
		if errors.Is(err, fs.ErrNotExist) {
			return 0, false
		}
		var n uint64
		if err == nil {
			n, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		}
		if err != nil {
			c.Unreadable = append(c.Unreadable, fmt.Sprintf("%s: %v", name, unwrapPath(err)))
			g.note("/proc/sys/net/netfilter/%s: %v", name, unwrapPath(err))
		}
		return n, true
	}
	var ok bool
	if c.Max, ok = read("nf_conntrack_max"); !ok {
		return
	}
	c.Loaded = true
	if c.Count, ok = read("nf_conntrack_count"); !ok {
		c.Unreadable = append(c.Unreadable, "nf_conntrack_count: absent")
	}
	if c.Buckets, ok = read("nf_conntrack_buckets"); !ok || c.Buckets == 0 {
		c.Unreadable = append(c.Unreadable, "nf_conntrack_buckets: absent")
	}
	g.F.Conntrack = c
}

// unwrapPath drops the path of an *fs.PathError (the notes name it).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// netstat reads the TcpExt counters of /proc/net/netstat (procnet.TcpExt).
func (g *Gatherer) netstat() {
	m, err := procnet.TcpExt(g.path("/proc"))
	if err != nil {
		g.note("/proc/net/netstat: %v", err)
	}
	g.F.Netstat = m
}

// sockstat reads the TCP line of /proc/net/sockstat (prometheus/procfs).
func (g *Gatherer) sockstat() {
	g.path("/proc/net/sockstat") // named for --record
	fs, err := procfs.NewFS(g.path("/proc"))
	var st *procfs.NetSockstat
	if err == nil {
		st, err = fs.NetSockstat()
	}
	if err != nil {
		g.note("/proc/net/sockstat: %v", err)
		return
	}
	val := func(p *int) uint64 {
		if p == nil {
			return 0
		}
		return uint64(max(*p, 0))
	}
	for _, p := range st.Protocols {
		if p.Protocol == "TCP" {
			g.F.Sockstat = Sockstat{InUse: uint64(max(p.InUse, 0)), Orphan: val(p.Orphan), TW: val(p.TW), Alloc: val(p.Alloc), MemPages: val(p.Mem)}
		}
	}
}

// listeners reads the TCP listeners over sock_diag and the owners of
// those on ports; where sock_diag cannot be read (a recorded root holds
// no netlink socket) only the ports come from /proc/net/tcp and tcp6
// (procnet.ListeningTCPPorts) and ListenersKnown stays false.
func (g *Gatherer) listeners(ports []int) {
	if g.rep != nil {
		g.F.Listeners, g.F.ListenersKnown = g.rep.Listeners, g.rep.ListenersKnown
		if g.rep.ListenersKnown {
			g.F.ListeningPorts = listenerPorts(g.rep.Listeners)
			return
		}
	}
	if g.live() {
		ls, err := ReadListeners()
		if err == nil {
			FindOwners(g.path("/proc"), ls, ports)
			g.F.Listeners, g.F.ListenersKnown = ls, true
			g.F.ListeningPorts = listenerPorts(ls)
			return
		}
		g.note("listeners: %v", err)
	}
	p, err := procnet.ListeningTCPPorts(g.path("/proc"))
	if err != nil {
		g.note("listening ports: %v", err)
	}
	g.F.ListeningPorts = p
}

// listenerOwner returns the process a listener on ports is judged by; 0
// if none is known. When several hold such listeners (servers on other
// addresses of the port, a pre-forking server's workers, systemd and a
// socket-activated service) any of them may be the one that accepts, so
// it is the one with the least capacity for a role target (its soft
// nofile less the files it holds, its memory cgroup, its threads: each
// is read as the target would be; one whose limits cannot be read is
// named, not chosen), and a note names them all.
func (g *Gatherer) ListenerOwner(ports []int, role Role) int {
	var pids []int
	for _, l := range g.F.Listeners {
		if !slices.Contains(ports, l.Port) {
			continue
		}
		for _, pid := range append(slices.Clone(l.Holders), l.PID) {
			if pid > 0 && !slices.Contains(pids, pid) {
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) <= 1 {
		return append(pids, 0)[0]
	}
	slices.Sort(pids)
	saved, notes := g.F.Target, len(g.F.Notes)
	best, bestCap := 0, int64(0)
	var each []string
	for _, pid := range pids {
		g.F.Target = ProcessFacts{}
		if err := g.targetPID(pid, ""); err != nil {
			each = append(each, fmt.Sprintf("pid %d (limits not readable: %v)", pid, err))
			continue
		}
		p := g.F.Target
		if g.Capacity == nil {
			each = append(each, fmt.Sprintf("pid %d (%s, nofile %s:%s, capacity not compared)", pid, g.ownerEndpoint(pid), FmtNofile(p.NofileSoft), FmtNofile(p.NofileHard)))
			if best == 0 {
				best = pid
			}
			continue
		}
		sockets, limitedBy := g.Capacity(g.F, Target{Sockets: 1, Role: role})
		each = append(each, fmt.Sprintf("pid %d (%s, nofile %s:%s, capacity %s, limited by %s)", pid, g.ownerEndpoint(pid), FmtNofile(p.NofileSoft), FmtNofile(p.NofileHard), plural.N(sockets, "socket"), limitedBy))
		if best == 0 || sockets < bestCap {
			best, bestCap = pid, sockets
		}
	}
	g.F.Target, g.F.Notes = saved, g.F.Notes[:notes]
	if best == 0 {
		best = pids[0]
	}
	which := "the one with the least capacity"
	if g.Capacity == nil {
		which = "the first whose limits could be read (capacities were not compared)"
	}
	g.note("%s hold the target's listeners on port %s: %s; any of them may accept, so pid %d, %s, is judged",
		plural.N(len(pids), "process"), PortList(ports), strings.Join(each, ", "), best, which)
	return best
}

// ownerEndpoint names the listeners pid holds ("127.0.0.1:18831").
func (g *Gatherer) ownerEndpoint(pid int) string {
	var eps []string
	for _, l := range g.F.Listeners {
		if l.PID == pid || slices.Contains(l.Holders, pid) {
			eps = append(eps, l.Endpoint())
		}
	}
	return strings.Join(eps, ", ")
}

// sourceAddresses lists the global unicast addresses (gopsutil net
// interfaces), or the --source-ips given.
func (g *Gatherer) sourceAddresses(override []string) error {
	if len(override) > 0 {
		g.F.SourceAddresses = append([]string(nil), override...)
		return nil
	}
	if g.rep != nil {
		g.F.SourceAddresses = g.rep.SourceAddresses
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
				g.F.SourceAddresses = append(g.F.SourceAddresses, ip.String())
			}
		}
	}
	return nil
}

// PortRange returns ip_local_port_range.
func PortRange(f *Facts) (lo, hi int64, ok bool) {
	r, ok := f.SysFields("net.ipv4.ip_local_port_range")
	if !ok || len(r) != 2 || r[0] > r[1] {
		return 0, 0, false
	}
	return r[0], r[1], true
}

// ReservedPorts parses ip_local_reserved_ports ("1883,8000-8010")
// (capacity.ReservedPorts, which the probes use too).
func ReservedPorts(f *Facts) map[int]bool {
	return capacity.ReservedPorts(f.Sysctl["net.ipv4.ip_local_reserved_ports"])
}

// ReservedIn counts the ports of res inside lo..hi.
func ReservedIn(res map[int]bool, lo, hi int64) int64 {
	return capacity.PortRange{Lo: lo, Hi: hi}.ReservedIn(res)
}
