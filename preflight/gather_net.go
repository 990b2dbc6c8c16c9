package preflight

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"

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

// netstat reads the TcpExt counters of /proc/net/netstat (a header line of
// names followed by a line of values).
func (g *gatherer) netstat() {
	fh, err := os.Open(g.path("/proc/net/netstat"))
	if err != nil {
		g.note("/proc/net/netstat: %v", err)
		return
	}
	defer fh.Close()
	m, err := parseNetstat(fh)
	if err != nil {
		g.note("/proc/net/netstat: %v", err)
	}
	g.f.Netstat = m
}

// parseNetstat returns the TcpExt counters by name.
func parseNetstat(r io.Reader) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var names []string
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "TcpExt:" {
			names = nil
			continue
		}
		if names == nil {
			names = fields[1:]
			continue
		}
		if len(fields)-1 != len(names) {
			return out, fmt.Errorf("TcpExt: %d names but %d values", len(names), len(fields)-1)
		}
		for i, v := range fields[1:] {
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				out[names[i]] = n
			}
		}
		names = nil
	}
	return out, sc.Err()
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

// listening reads the TCP ports in LISTEN state (st 0A) from /proc/net/tcp
// and /proc/net/tcp6.
func (g *gatherer) listening() error {
	seen := map[int]bool{}
	for _, name := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(g.path(name))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		err = parseProcNetTCP(fh, seen)
		fh.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	g.f.ListeningPorts = sortedKeys(seen)
	return nil
}

// parseProcNetTCP adds the local ports of LISTEN sockets to seen.
func parseProcNetTCP(r io.Reader, seen map[int]bool) error {
	sc := bufio.NewScanner(r)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != "0A" {
			continue
		}
		i := strings.LastIndexByte(fields[1], ':')
		if i < 0 {
			return fmt.Errorf("bad local_address %q", fields[1])
		}
		p, err := strconv.ParseUint(fields[1][i+1:], 16, 16)
		if err != nil {
			return fmt.Errorf("bad port in %q", fields[1])
		}
		seen[int(p)] = true
	}
	return sc.Err()
}

func sortedKeys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
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
