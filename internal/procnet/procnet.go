// Package procnet reads this network namespace's TCP state from procfs
// under a configurable root (node_exporter style): the ports listening
// (/proc/net/tcp, /proc/net/tcp6) and the TcpExt counters
// (/proc/net/netstat).
package procnet

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DefaultRoot is the live procfs.
const DefaultRoot = "/proc"

// tcpListen is the st column value of a socket in LISTEN state.
const tcpListen = "0A"

// ListeningTCPPorts returns the sorted, distinct local ports of TCP
// sockets in LISTEN state, from procRoot/net/tcp and procRoot/net/tcp6
// ("" means /proc). A missing file (no IPv6) is not an error.
func ListeningTCPPorts(procRoot string) ([]int, error) {
	if procRoot == "" {
		procRoot = DefaultRoot
	}
	seen := map[int]bool{}
	for _, name := range []string{"tcp", "tcp6"} {
		path := filepath.Join(procRoot, "net", name)
		f, err := os.Open(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		err = parse(f, seen)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	out := make([]int, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Ints(out)
	return out, nil
}

func parse(f *os.File, seen map[int]bool) error {
	sc := bufio.NewScanner(f)
	first := true
	for sc.Scan() {
		if first { // header
			first = false
			continue
		}
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[3] != tcpListen {
			continue
		}
		_, portHex, ok := strings.Cut(fields[1], ":")
		if !ok {
			return fmt.Errorf("local_address %q: want ADDR:PORT", fields[1])
		}
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			return fmt.Errorf("local_address %q: port is not hex", fields[1])
		}
		seen[int(port)] = true
	}
	return sc.Err()
}
