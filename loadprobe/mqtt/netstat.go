package mqtt

import "github.com/hostprep/hostprep/internal/procnet"

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

// readHostCounters reads the TcpExt counters (procnet.TcpExt); zero when
// unavailable.
func readHostCounters() HostCounters {
	m, _ := procnet.TcpExt("")
	return HostCounters{
		ListenOverflows: int64(m["ListenOverflows"]),
		ListenDrops:     int64(m["ListenDrops"]),
		TCPSynRetrans:   int64(m["TCPSynRetrans"]),
		PruneCalled:     int64(m["PruneCalled"]),
	}
}

func (h HostCounters) sub(o HostCounters) HostCounters {
	return HostCounters{
		ListenOverflows: h.ListenOverflows - o.ListenOverflows,
		ListenDrops:     h.ListenDrops - o.ListenDrops,
		TCPSynRetrans:   h.TCPSynRetrans - o.TCPSynRetrans,
		PruneCalled:     h.PruneCalled - o.PruneCalled,
	}
}
