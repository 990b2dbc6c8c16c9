package procnet

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/textfile"
)

// TcpExt returns the TcpExt counters of procRoot/net/netstat ("" means
// /proc) by the kernel's names (ListenOverflows, ListenDrops,
// TCPSynRetrans, PruneCalled, ...): counts since boot for this network
// namespace. The error is the file's (not readable) or ParseTcpExt's,
// with the counters read before it.
func TcpExt(procRoot string) (map[string]uint64, error) {
	if procRoot == "" {
		procRoot = DefaultRoot
	}
	return textfile.Parse(filepath.Join(procRoot, "net", "netstat"), ParseTcpExt)
}

// ParseTcpExt reads the TcpExt counters from r in /proc/net/netstat's
// format: a "TcpExt:" line of names followed by a "TcpExt:" line of
// values. A values line whose length differs from its names line is an
// error, returned with the counters read before it; a value that is not
// a number is left out.
func ParseTcpExt(r io.Reader) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := textfile.Scanner(r)
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
			return out, fmt.Errorf("TcpExt: %s but %s", plural.N(len(names), "name"), plural.N(len(fields)-1, "value"))
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
