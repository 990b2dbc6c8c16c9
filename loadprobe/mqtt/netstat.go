package mqtt

import (
	"os"
	"strconv"
	"strings"
)

// HostCounters are the kernel's TCP counters (/proc/net/netstat, TcpExt,
// this network namespace) that explain a slow or failing connect ramp,
// as the difference over the run. They count every socket of the
// namespace, not only the probe's.
type HostCounters struct {
	// ListenOverflows: a SYN or final ACK arrived while a listener's
	// accept queue was full (the broker's listen backlog, e.g. mosquitto
	// 2.0 listens with 100, capped by net.core.somaxconn); the client
	// retransmits after 1 s, 3 s, ... which shows as connect latency.
	ListenOverflows int64 `json:"listen_overflows"`
	ListenDrops     int64 `json:"listen_drops"`
	// TCPSynRetrans: SYNs sent again (no SYN-ACK in time).
	TCPSynRetrans int64 `json:"tcp_syn_retrans"`
	// PruneCalled: a socket's receive queue hit its memory limit
	// (net.ipv4.tcp_rmem / tcp_mem pressure).
	PruneCalled int64 `json:"prune_called"`
}

// readHostCounters reads the TcpExt counters; zero when unavailable.
func readHostCounters() HostCounters {
	b, err := os.ReadFile("/proc/net/netstat")
	if err != nil {
		return HostCounters{}
	}
	var keys []string
	var h HostCounters
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "TcpExt:") {
			continue
		}
		f := strings.Fields(line)[1:]
		if keys == nil {
			keys = f
			continue
		}
		for i, k := range keys {
			if i >= len(f) {
				break
			}
			v, _ := strconv.ParseInt(f[i], 10, 64)
			switch k {
			case "ListenOverflows":
				h.ListenOverflows = v
			case "ListenDrops":
				h.ListenDrops = v
			case "TCPSynRetrans":
				h.TCPSynRetrans = v
			case "PruneCalled":
				h.PruneCalled = v
			}
		}
	}
	return h
}

func (h HostCounters) sub(o HostCounters) HostCounters {
	return HostCounters{
		ListenOverflows: h.ListenOverflows - o.ListenOverflows,
		ListenDrops:     h.ListenDrops - o.ListenDrops,
		TCPSynRetrans:   h.TCPSynRetrans - o.TCPSynRetrans,
		PruneCalled:     h.PruneCalled - o.PruneCalled,
	}
}
