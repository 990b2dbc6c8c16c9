package mqtt

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
)

// BrokerEvidence is what this host shows of a broker that runs on it,
// read when connects failed or connections were lost: the process that
// owns the broker's listener (its nofile and the files it holds) and the
// listener's backlog, gathered the way preflight does (preflight.Gather
// for the broker role on the broker's port: sock_diag for the listener,
// /proc/PID/limits and /proc/PID/fd for its owner). Cause names what the
// numbers explain, first in the verdict; "" when they explain nothing.
type BrokerEvidence struct {
	PID     int    `json:"pid"`
	Process string `json:"process,omitempty"`
	// Listener is the broker's listening endpoint, Backlog its listen()
	// backlog (connections).
	Listener string `json:"listener,omitempty"`
	Backlog  uint32 `json:"backlog,omitempty"`
	// NofileSoft is the owner's soft RLIMIT_NOFILE; OwnFiles the file
	// descriptors it held after the run that were not clients: files
	// (preflight's HeldFDs) and its listening sockets.
	NofileSoft uint64 `json:"nofile_soft,omitempty"`
	OwnFiles   uint64 `json:"own_files,omitempty"`
	// Clients is how many of this run's clients were connected to it at
	// most: publishers that connected and subscribers.
	Clients int64 `json:"clients"`
	// Source says where the numbers come from.
	Source string `json:"source,omitempty"`
	Cause  string `json:"cause,omitempty"`
	Fix    string `json:"fix,omitempty"`
}

// evidenceTimeout bounds the reading of the local broker's facts.
const evidenceTimeout = 5 * time.Second

// nofileSlack is how far below its nofile the broker's clients plus its
// own files may stay and still name nofile as the cause: a few fds for
// what it opened and closed meanwhile (a log rotation, a DNS lookup).
func nofileSlack(nofile uint64) uint64 { return max(4, nofile/50) }

// brokerEvidence reads the local broker's limits and listener when this
// run's connects failed or its connections were lost, and names the
// cause the numbers explain; nil for a remote or embedded broker, a
// clean run, or a host that would not say.
func (r *run) brokerEvidence(res *Result) *BrokerEvidence {
	cn := res.Connects
	if r.cfg.Broker == "" || (cn.Failed == 0 && cn.Lost == 0) {
		return nil
	}
	host, portText, err := net.SplitHostPort(r.addr.hostport)
	port, _ := strconv.Atoi(portText)
	if err != nil || port == 0 || !localAddress(host) {
		return nil
	}
	// Bounded: the run is over, and the reading is an addition to it.
	ctx, cancel := context.WithTimeout(context.Background(), evidenceTimeout)
	defer cancel()
	f, err := facts.Gather(ctx, facts.GatherOptions{Role: facts.Broker, Ports: []int{port}, Capacity: checks.OwnerCapacity})
	if err != nil || f.Target.PID == 0 || f.Target.Assumed {
		return nil
	}
	e := &BrokerEvidence{PID: f.Target.PID, NofileSoft: f.Target.NofileSoft, OwnFiles: f.Target.HeldFDs,
		Clients: cn.OK + int64(cn.Subscribers), Source: f.Target.Source}
	for _, l := range f.Listeners {
		if l.PID != e.PID && !slices.Contains(l.Holders, e.PID) {
			continue
		}
		e.OwnFiles++ // a listening socket of its own
		if l.Port == port {
			e.Listener, e.Backlog, e.Process = l.Endpoint(), l.Backlog, l.Process
		}
	}
	who := fmt.Sprintf("pid %d", e.PID)
	if e.Process != "" {
		who += " (" + e.Process + ")"
	}
	used := uint64(e.Clients) + e.OwnFiles
	switch {
	case f.Target.HeldFDsUnseen == "" && e.NofileSoft > 0 && e.NofileSoft < 1<<40 && used <= e.NofileSoft && e.NofileSoft-used <= nofileSlack(e.NofileSoft):
		// Its own files are what its nofile leaves beyond the clients
		// that got in (those it held after the run, plus what it had
		// open meanwhile).
		e.Cause = fmt.Sprintf("%s has nofile %d: %s + %d of its own files", who, e.NofileSoft, plural.N(e.Clients, "client"), e.NofileSoft-uint64(e.Clients))
		e.Fix = fmt.Sprintf("raise the broker's open-files limit (LimitNOFILE= in its systemd unit, or ulimit -n before it starts) to at least %s + %d; check it with hostprep preflight --role broker --port %d --pid %d",
			plural.N(int64(cn.Target)+int64(cn.Subscribers), "client"), e.NofileSoft-uint64(e.Clients), port, e.PID)
	case res.Host.ListenOverflows > 0 && e.Backlog > 0:
		e.Cause = fmt.Sprintf("the listener %s of %s has backlog %d and the kernel counted %d listen-queue overflows during the run", e.Listener, who, e.Backlog, res.Host.ListenOverflows)
		e.Fix = fmt.Sprintf("lower --conn-rate, or raise net.core.somaxconn and the broker's listen backlog and restart it; check with hostprep preflight --role broker --port %d --pid %d", port, e.PID)
	}
	return e
}

// localAddress reports whether host (an IP or a name) is an address of
// this host: loopback, or one of its interfaces' addresses.
func localAddress(host string) bool {
	ips, err := net.LookupIP(host)
	if err != nil {
		return false
	}
	addrs, _ := net.InterfaceAddrs()
	for _, ip := range ips {
		if ip.IsLoopback() {
			return true
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return true
			}
		}
	}
	return false
}
