// Package capacity is the arithmetic of how many sockets a process and a
// host can hold: file descriptors under RLIMIT_NOFILE (one per socket plus
// the headroom every process needs for its other files), and ephemeral
// ports per source address (net.ipv4.ip_local_port_range less
// net.ipv4.ip_local_reserved_ports). It judges nothing: preflight's checks
// and the probes' pre-run checks count with it and word their own verdicts.
//
// It imports nothing of hostprep's but internal/proclimits, so preflight
// and every probe can import it from below.
package capacity

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/proclimits"
)

// Unlimited is RLIMIT_INFINITY as /proc/PID/limits reads "unlimited".
const Unlimited = proclimits.Unlimited

// FDHeadroom is the file descriptors a socket-holding process needs beyond
// its sockets: listeners, log files, pipes, epoll, shared libraries — 1 %
// of the sockets and at least 64.
func FDHeadroom(sockets int) uint64 {
	return max(64, uint64(max(sockets, 0)+99)/100)
}

// FDNeed is the nofile a process holding sockets sockets needs: one file
// descriptor per socket plus FDHeadroom.
func FDNeed(sockets int) uint64 {
	return uint64(max(sockets, 0)) + FDHeadroom(sockets)
}

// UsableFDs is how many sockets a process with an fd limit of nofile can
// hold after the headroom it needs for everything else (1 % of the limit,
// at least 64); Unlimited holds 2^62.
func UsableFDs(nofile uint64) int64 {
	if nofile == Unlimited {
		return 1 << 62
	}
	return max(0, int64(nofile)-int64(max(64, (nofile+99)/100)))
}

// PortRange is net.ipv4.ip_local_port_range: the ephemeral ports Lo..Hi,
// both included.
type PortRange struct{ Lo, Hi int64 }

// ParsePortRange parses ip_local_port_range as /proc/sys gives it
// ("32768\t60999"); ok is false for anything else (not two numbers, or
// Lo > Hi).
func ParsePortRange(s string) (r PortRange, ok bool) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return r, false
	}
	lo, err1 := strconv.ParseInt(f[0], 10, 64)
	hi, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || lo > hi {
		return r, false
	}
	return PortRange{lo, hi}, true
}

// String is the range as ip_local_port_range is written: "LO-HI".
func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Lo, r.Hi) }

// ReservedPorts parses ip_local_reserved_ports ("1883,8000-8010"): the
// set of reserved ports (above 65535 dropped; unparsable parts skipped,
// as the kernel never writes them).
func ReservedPorts(s string) map[int]bool {
	out := map[int]bool{}
	for _, part := range strings.Split(s, ",") {
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

// ReservedIn counts the ports of reserved inside r.
func (r PortRange) ReservedIn(reserved map[int]bool) int64 {
	var n int64
	for p := range reserved {
		if int64(p) >= r.Lo && int64(p) <= r.Hi {
			n++
		}
	}
	return n
}

// PerPair is how many connections one (source address, destination
// ip:port) pair can hold: the ports of r less those reserved. A socket
// bound to its source before connect() (bind(src, 0)) holds its port on
// that source whatever the destination, so for bound sockets this is the
// number per source address.
func (r PortRange) PerPair(reserved map[int]bool) int64 {
	return max(0, r.Hi-r.Lo+1-r.ReservedIn(reserved))
}

// Ports are the ephemeral ports of a network namespace as its /proc/sys
// reads them.
type Ports struct {
	Range PortRange
	// Reserved is how many ports of Range ip_local_reserved_ports holds
	// back; PerPair is Range's size less Reserved.
	Reserved, PerPair int64
}

// ReadPorts reads ip_local_port_range and ip_local_reserved_ports under
// root ("/" for this process's network namespace). A missing
// ip_local_reserved_ports (older kernels) reserves nothing; an unreadable
// or unparsable range is an error naming the file.
func ReadPorts(root string) (Ports, error) {
	dir := filepath.Join(root, "proc/sys/net/ipv4")
	b, err := os.ReadFile(filepath.Join(dir, "ip_local_port_range"))
	if err != nil {
		return Ports{}, err
	}
	r, ok := ParsePortRange(string(b))
	if !ok {
		return Ports{}, fmt.Errorf("%s: %q is not LOW HIGH", filepath.Join(dir, "ip_local_port_range"), strings.TrimSpace(string(b)))
	}
	res, _ := os.ReadFile(filepath.Join(dir, "ip_local_reserved_ports"))
	reserved := ReservedPorts(strings.TrimSpace(string(res)))
	return Ports{Range: r, Reserved: r.ReservedIn(reserved), PerPair: r.PerPair(reserved)}, nil
}
