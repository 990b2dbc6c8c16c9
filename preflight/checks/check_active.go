package checks

import (
	"fmt"
	"math"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// The --active measurement as a check: did the child reach the K sockets
// it tried, and what does the measured cost say about N?

func init() {
	register(CheckDef{ID: "active", Doc: "--active: the child opened the K sockets it tried (loopback, target's fd limits)", Func: checkActive})
}

func checkActive(f *facts.Facts, t facts.Target) verdict.Check {
	m := f.Measured
	if m == nil {
		return skip("not measured (hostprep preflight --active opens real sockets under the target's limits)")
	}
	half := ""
	if extra := m.ReachedSockets - 2*m.Connections; extra > 0 {
		half = fmt.Sprintf(" and %s whose other end was not accepted yet", plural.N(extra, "socket"))
	}
	obs := fmt.Sprintf("opened %d of %s = %d loopback connections (client and accepted side both in the measuring process, 2 fds per connection)%s from %s in %.0f ms at nofile %s:%s; Slab %+d bytes (SUnreclaim %+d); slope of Slab against sockets open %s per socket (fit R² %.3f over %s)",
		m.ReachedSockets, plural.N(m.RequestedSockets, "socket"), m.Connections, half, plural.N(m.SourceAddresses, "source address"), m.DurationMS,
		facts.FmtNofile(m.NofileSoft), facts.FmtNofile(m.NofileHard), m.SlabDeltaBytes, m.SUnreclaimDeltaBytes, plural.N(int(math.Round(m.BytesPerSocket)), "byte"), m.SlabFitR2, plural.N(m.Samples, "sample"))
	if m.LimitNote != "" {
		obs += "; " + m.LimitNote
	}
	measured, why := m.CostSignificance()
	cost := fmt.Sprintf("%s of kernel memory each", plural.N(int(math.Round(m.BytesPerSocket)), "byte"))
	extrap := ""
	if measured {
		extrap = fmt.Sprintf("; %s would take %s of kernel memory", plural.N(t.Sockets, "socket"), Mib(m.BytesPerSocket*float64(t.Sockets)))
	} else {
		cost = fmt.Sprintf("kernel memory per socket not measured: %s; the estimate of %s is kept", why, plural.N(EstimatedBytesPerSocket, "byte"))
	}
	conns := fmt.Sprintf(" (%d loopback connections, both ends in the measuring process)", m.Connections)
	exp := fmt.Sprintf("%s opened without error", plural.N(m.RequestedSockets, "socket"))
	capped := m.LimitNote != "" // the child ran below the target's limit: hostprep's own hard limit
	if capped && (m.FirstError == "EMFILE" || m.FirstError == "") && (m.ReachedSockets < m.RequestedSockets || m.RequestedSockets < t.Sockets) {
		return warn(fmt.Sprintf("measured %s%s, at hostprep's own nofile %s:%s, below the target's: this is hostprep's ceiling, not the target's, so it does not judge the target (fd.soft, fd.hard do); %s%s", plural.N(m.ReachedSockets, "socket"), conns, facts.FmtNofile(m.NofileSoft), facts.FmtNofile(m.NofileHard), cost, extrap),
			obs, fmt.Sprintf("%s at the target's limits", plural.N(t.Sockets, "socket")), "run hostprep preflight --active from a process that has the target's hard nofile (or with CAP_SYS_RESOURCE) to measure at the target's limits")
	}
	if m.FirstError != "" && m.ReachedSockets < m.RequestedSockets {
		return fail(fmt.Sprintf("measured: stopped at %d of %s%s: %s failed with %s (%s)%s", m.ReachedSockets, plural.N(m.RequestedSockets, "socket"), conns, m.FirstErrorOp, m.FirstError, m.FirstErrorMessage, extrap),
			obs, exp, errnoRemedy(m.FirstError))
	}
	if m.RequestedSockets < t.Sockets {
		return warn(fmt.Sprintf("measured %s%s, fewer than the %d targeted: the target's fd limit allows no more; %s%s", plural.N(m.ReachedSockets, "socket"), conns, t.Sockets, cost, extrap),
			obs, fmt.Sprintf("%s", plural.N(t.Sockets, "socket")), "raise the target's nofile limit (see fd.soft / fd.hard) and measure again")
	}
	return pass(fmt.Sprintf("measured: opened %s%s, %s%s", plural.N(m.ReachedSockets, "socket"), conns, cost, extrap), obs, exp)
}

// errnoRemedy says what to change for a connect/accept errno.
func errnoRemedy(e string) string {
	switch e {
	case "EMFILE":
		return "the process's RLIMIT_NOFILE is exhausted: raise nofile (fd.soft, fd.hard)"
	case "ENFILE":
		return "the host's fs.file-max is exhausted: sysctl -w fs.file-max=..."
	case "EADDRNOTAVAIL":
		return "ephemeral ports exhausted: widen net.ipv4.ip_local_port_range or add source addresses"
	case "ENOBUFS", "ENOMEM":
		return "kernel memory for sockets ran out: check MemAvailable, tcp_mem (pages) and dmesg"
	case "ETIMEDOUT":
		return "connects timed out: check the accept backlog (somaxconn), conntrack (nf_conntrack_max) and dmesg; or raise --active-timeout"
	}
	return "see the error text and dmesg"
}
