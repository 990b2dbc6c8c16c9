package preflight

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/procnet"
	"github.com/prometheus/procfs"
	psnet "github.com/shirou/gopsutil/v3/net"
)

// conntrack reads nf_conntrack's table size, only where the module is
// loaded (like node_exporter's conntrack collector, absence is "no data"):
// an absent nf_conntrack_max (ENOENT) means not loaded; one that exists but
// cannot be read (EACCES in a sandbox, an unprivileged container) means
// loaded with the value unknown, and so for nf_conntrack_count and
// nf_conntrack_buckets (Conntrack.Unreadable), never 0.
func (g *gatherer) conntrack() {
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
	g.f.Conntrack = c
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
func (g *gatherer) netstat() {
	m, err := procnet.TcpExt(g.path("/proc"))
	if err != nil {
		g.note("/proc/net/netstat: %v", err)
	}
	g.f.Netstat = m
}

// sockstat reads the TCP line of /proc/net/sockstat (prometheus/procfs).
func (g *gatherer) sockstat() {
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
			g.f.Sockstat = Sockstat{InUse: uint64(max(p.InUse, 0)), Orphan: val(p.Orphan), TW: val(p.TW), Alloc: val(p.Alloc), MemPages: val(p.Mem)}
		}
	}
}

// listeners reads the TCP listeners over sock_diag and the owners of
// those on ports; where sock_diag cannot be read (a recorded root holds
// no netlink socket) only the ports come from /proc/net/tcp and tcp6
// (procnet.ListeningTCPPorts) and ListenersKnown stays false.
func (g *gatherer) listeners(ports []int) {
	if g.rep != nil {
		g.f.Listeners, g.f.ListenersKnown = g.rep.Listeners, g.rep.ListenersKnown
		if g.rep.ListenersKnown {
			g.f.ListeningPorts = listenerPorts(g.rep.Listeners)
			return
		}
	}
	if g.live() {
		ls, err := readListeners()
		if err == nil {
			findOwners(g.path("/proc"), ls, ports)
			g.f.Listeners, g.f.ListenersKnown = ls, true
			g.f.ListeningPorts = listenerPorts(ls)
			return
		}
		g.note("listeners: %v", err)
	}
	p, err := procnet.ListeningTCPPorts(g.path("/proc"))
	if err != nil {
		g.note("listening ports: %v", err)
	}
	g.f.ListeningPorts = p
}

// listenerOwner returns the process a listener on ports is judged by; 0
// if none is known. When several hold such listeners (servers on other
// addresses of the port, a pre-forking server's workers, systemd and a
// socket-activated service) any of them may be the one that accepts, so
// it is the one with the least capacity for a role target (its soft
// nofile less the files it holds, its memory cgroup, its threads: each
// is read as the target would be; one whose limits cannot be read is
// named, not chosen), and a note names them all.
func (g *gatherer) listenerOwner(ports []int, role Role) int {
	var pids []int
	for _, l := range g.f.Listeners {
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
	saved, notes := g.f.Target, len(g.f.Notes)
	best, bestCap := 0, int64(0)
	var each []string
	for _, pid := range pids {
		g.f.Target = ProcessFacts{}
		if err := g.targetPID(pid, ""); err != nil {
			each = append(each, fmt.Sprintf("pid %d (limits not readable: %v)", pid, err))
			continue
		}
		c := capacityOf(g.f, Target{Sockets: 1, Role: role})
		p := g.f.Target
		each = append(each, fmt.Sprintf("pid %d (%s, nofile %s:%s, capacity %s, limited by %s)", pid, g.ownerEndpoint(pid), fmtNofile(p.NofileSoft), fmtNofile(p.NofileHard), plural.N(c.Sockets, "socket"), c.LimitedBy))
		if best == 0 || c.Sockets < bestCap {
			best, bestCap = pid, c.Sockets
		}
	}
	g.f.Target, g.f.Notes = saved, g.f.Notes[:notes]
	if best == 0 {
		best = pids[0]
	}
	g.note("%s hold the target's listeners on port %s: %s; any of them may accept, so pid %d, the one with the least capacity, is judged",
		plural.N(len(pids), "process"), portList(ports), strings.Join(each, ", "), best)
	return best
}

// ownerEndpoint names the listeners pid holds ("127.0.0.1:18831").
func (g *gatherer) ownerEndpoint(pid int) string {
	var eps []string
	for _, l := range g.f.Listeners {
		if l.PID == pid || slices.Contains(l.Holders, pid) {
			eps = append(eps, l.Endpoint())
		}
	}
	return strings.Join(eps, ", ")
}

// sourceAddresses lists the global unicast addresses (gopsutil net
// interfaces), or the --source-ips given.
func (g *gatherer) sourceAddresses(override []string) error {
	if len(override) > 0 {
		g.f.SourceAddresses = append([]string(nil), override...)
		return nil
	}
	if g.rep != nil {
		g.f.SourceAddresses = g.rep.SourceAddresses
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
