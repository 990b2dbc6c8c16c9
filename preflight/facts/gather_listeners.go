package facts

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// Listener is one TCP socket in LISTEN state, as sock_diag (netlink
// NETLINK_SOCK_DIAG, INET_DIAG) reports it and `ss -ltn` prints it.
type Listener struct {
	// Address is the local address ("0.0.0.0", "::", "127.0.0.1").
	Address string `json:"address" yaml:"address"`
	// Port is the local TCP port.
	Port int `json:"port" yaml:"port"`
	// Backlog is the listen() backlog the kernel keeps for the socket
	// (sk_max_ack_backlog, idiag_wqueue of a LISTEN socket, ss's Send-Q),
	// in connections. The kernel already capped it at net.core.somaxconn
	// as it was when listen() was called; a later somaxconn change does
	// not reach it until the application listens again.
	Backlog uint32 `json:"backlog" yaml:"backlog"`
	// AcceptQueue is the connections waiting in the accept queue now
	// (sk_ack_backlog, idiag_rqueue, ss's Recv-Q).
	AcceptQueue uint32 `json:"accept_queue" yaml:"accept_queue"`
	// PID and Process (its comm) own the socket; 0 and "" when not looked
	// up (only the target's ports are) or not visible to this user.
	PID     int    `json:"pid,omitempty" yaml:"pid"`
	Process string `json:"process,omitempty" yaml:"process"`
	// Holders are every process holding the socket, PID among them, in
	// PID order: a pre-forking server's workers, or systemd (PID 1) and
	// the service of a socket-activated unit. Any of them may accept.
	Holders []int `json:"holders,omitempty" yaml:"holders,omitempty"`
	// NofileSoft and NofileHard are the owner's RLIMIT_NOFILE
	// (/proc/PID/limits, file descriptors), read for the target's ports
	// only; 0 when not read.
	NofileSoft uint64 `json:"nofile_soft,omitempty" yaml:"nofile_soft"`
	NofileHard uint64 `json:"nofile_hard,omitempty" yaml:"nofile_hard"`
	// StartedBy is the systemd unit whose cgroup holds the owner
	// ("emqx.service", /proc/PID/cgroup), or how it was started when no
	// service's cgroup holds it ("login shell"); "" when not read.
	StartedBy string `json:"started_by,omitempty" yaml:"started_by"`
	// Inode is the socket's inode (socket:[N] in /proc/PID/fd).
	Inode uint32 `json:"inode,omitempty" yaml:"inode"`
}

// Endpoint is "address:port" ("[::]:1883" for IPv6).
func (l Listener) Endpoint() string {
	return net.JoinHostPort(l.Address, strconv.Itoa(l.Port))
}

// Owner names the owning process ("mosquitto (pid 3747)"), or says it is
// unknown.
func (l Listener) Owner() string {
	switch {
	case l.Process != "" && l.PID > 0:
		return fmt.Sprintf("%s (pid %d)", l.Process, l.PID)
	case l.Process != "":
		return l.Process
	case l.PID > 0:
		return fmt.Sprintf("pid %d", l.PID)
	}
	return "owner unknown"
}

// tcpListenState is TCP_LISTEN (include/net/tcp_states.h).
const tcpListenState = 10

// readListeners returns the TCP listeners of this network namespace over
// sock_diag, IPv4 and IPv6, sorted by port then address. An IPv6 dump that
// fails with EAFNOSUPPORT (no IPv6) is not an error.
func ReadListeners() ([]Listener, error) {
	var out []Listener
	for _, fam := range []uint8{unix.AF_INET, unix.AF_INET6} {
		socks, err := netlink.SocketDiagTCP(fam)
		if err != nil && !errors.Is(err, netlink.ErrDumpInterrupted) {
			if fam == unix.AF_INET6 && (errors.Is(err, unix.EAFNOSUPPORT) || errors.Is(err, unix.ENOENT)) {
				continue
			}
			return nil, fmt.Errorf("sock_diag (netlink INET_DIAG) dump of family %d: %w", fam, err)
		}
		for _, s := range socks {
			if s.State != tcpListenState {
				continue
			}
			addr := s.ID.Source.String()
			if v4 := s.ID.Source.To4(); fam == unix.AF_INET6 && v4 != nil {
				addr = "::ffff:" + v4.String() // an IPv6 socket bound to an IPv4-mapped address, as ss prints it
			}
			out = append(out, Listener{Address: addr, Port: int(s.ID.SourcePort),
				Backlog: s.WQueue, AcceptQueue: s.RQueue, Inode: s.INode})
		}
	}
	sortListeners(out)
	return out, nil
}

func sortListeners(ls []Listener) {
	sort.Slice(ls, func(i, j int) bool {
		if ls[i].Port != ls[j].Port {
			return ls[i].Port < ls[j].Port
		}
		return ls[i].Address < ls[j].Address
	})
}

// listenerPorts returns the distinct ports of ls, sorted.
func listenerPorts(ls []Listener) []int {
	seen := map[int]bool{}
	var out []int
	for _, l := range ls {
		if !seen[l.Port] {
			seen[l.Port] = true
			out = append(out, l.Port)
		}
	}
	sort.Ints(out)
	return out
}

// findOwners fills PID, Process and Holders of the listeners whose port
// is in ports, the way `ss -p` does: by finding "socket:[INODE]" among the
// fds in procRoot/PID/fd of every process (PID is the first that holds
// it). Only those listeners are looked up, so a host with a million
// sockets is not walked for a port nobody asked about. A process whose
// fds are not readable (another user's, without root) is skipped.
func FindOwners(procRoot string, ls []Listener, ports []int) {
	want := map[string]int{}
	for i, l := range ls {
		if l.Inode != 0 && slices.Contains(ports, l.Port) {
			want[fmt.Sprintf("socket:[%d]", l.Inode)] = i
		}
	}
	if len(want) == 0 {
		return
	}
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		fdDir := filepath.Join(procRoot, e.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil {
				continue
			}
			i, ok := want[link]
			if !ok || slices.Contains(ls[i].Holders, pid) {
				continue
			}
			ls[i].Holders = append(ls[i].Holders, pid)
			if ls[i].PID == 0 {
				ls[i].PID = pid
				if b, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "comm")); err == nil {
					ls[i].Process = strings.TrimSpace(string(b))
				}
				if soft, hard, err := readNofile(filepath.Join(procRoot, e.Name(), "limits")); err == nil {
					ls[i].NofileSoft, ls[i].NofileHard = soft, hard
				}
				if cg := filepath.Join(procRoot, e.Name(), "cgroup"); fileReadable(cg) {
					ls[i].StartedBy = cmp.Or(serviceOfPID(cg), "outside any service")
				}
			}
		}
	}
}

// fileReadable says whether path can be opened for reading.
func fileReadable(path string) bool {
	fh, err := os.Open(path)
	if err != nil {
		return false
	}
	fh.Close()
	return true
}

// portList is ports as "1883/8883", for a message.
func PortList(ps []int) string { return strings.Join(PortStrings(ps), "/") }

// portStrings is ps in decimal.
func PortStrings(ps []int) []string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = strconv.Itoa(p)
	}
	return s
}
