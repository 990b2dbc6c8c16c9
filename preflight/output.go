package preflight

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Formats are the --output values Write accepts.
var Formats = []string{"text", "json", "junit", "prom"}

// Write renders the report in format (text, json, junit, prom). color
// applies to text only and should be true only on a terminal.
func Write(w io.Writer, format string, r *Report, color bool) error {
	switch format {
	case "text":
		return WriteText(w, r, color)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "junit":
		return verdict.WriteJUnit(w, "hostprep preflight", r.Checks)
	case "prom":
		return WriteProm(w, r)
	}
	return exitcode.BadInputf("--output %q: want one of %s", format, strings.Join(Formats, ", "))
}

// WriteProm writes the report as a node_exporter textfile: one gauge per
// check (hostprep_preflight_check_status{check="fd.soft"} 0 pass, 1 warn,
// 2 fail, -1 skip), the verdict, the target and the capacity in sockets,
// and the kernel bytes per socket.
func WriteProm(w io.Writer, r *Report) error {
	src := "estimate"
	if r.Capacity.BytesPerSocketMeasured {
		src = "measured"
	}
	extra := []verdict.Gauge{
		{Name: "hostprep_preflight_target_sockets", Help: "Sockets the preflight target asks for.", Labels: map[string]string{"role": string(r.Target.Role)}, Value: float64(r.Target.Sockets)},
		{Name: "hostprep_preflight_capacity_sockets", Help: "Sockets the target process can hold on this host (smallest per-resource limit).", Labels: map[string]string{"limited_by": r.Capacity.LimitedBy}, Value: float64(r.Capacity.Sockets)},
		{Name: "hostprep_preflight_bytes_per_socket", Help: "Kernel memory per idle TCP socket, bytes.", Labels: map[string]string{"source": src}, Value: r.Capacity.BytesPerSocket},
	}
	if m := r.Capacity.Measured; m != nil {
		extra = append(extra, verdict.Gauge{Name: "hostprep_preflight_measured_sockets", Help: "Sockets the --active child held open at once.", Value: float64(m.ReachedSockets)})
	}
	return verdict.WriteProm(w, "hostprep_preflight", r.Checks, extra)
}

var statusRank = map[verdict.Status]int{verdict.Fail: 0, verdict.Warn: 1, verdict.Pass: 2, verdict.Skip: 3}

const (
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiGreen  = "\x1b[32m"
	ansiDim    = "\x1b[2m"
	ansiBold   = "\x1b[1m"
	ansiReset  = "\x1b[0m"
)

func paint(color bool, code, s string) string {
	if !color {
		return s
	}
	return code + s + ansiReset
}

func statusColor(s verdict.Status) string {
	switch s {
	case verdict.Fail:
		return ansiRed
	case verdict.Warn:
		return ansiYellow
	case verdict.Pass:
		return ansiGreen
	}
	return ansiDim
}

// WriteText writes the human report: verdict, host, capacity, then a line
// per check, failures first, with observed / expected / remedy under
// failures and warnings.
func WriteText(w io.Writer, r *Report, color bool) error {
	var b strings.Builder
	fmt.Fprintf(&b, "hostprep preflight: %s  (%s)\n", paint(color, ansiBold+statusColor(r.Verdict), strings.ToUpper(string(r.Verdict))), r.Target)
	h := r.Host
	ram, avail := "RAM not known", "MemAvailable not known"
	if h.MemTotal > 0 {
		ram = checks.Gib(float64(h.MemTotal)) + " RAM"
	}
	if h.MemAvailable > 0 {
		avail = checks.Gib(float64(h.MemAvailable)) + " available"
	}
	fmt.Fprintf(&b, "host: kernel %s, %s, %s, %s\n", h.Kernel, plural.N(h.CPUs, "CPU"), ram, avail)
	tp := r.TargetProcess
	fmt.Fprintf(&b, "target process: %s, nofile %s:%s (%s)\n", checks.DescribeTarget(tp), facts.FmtNofile(tp.NofileSoft), facts.FmtNofile(tp.NofileHard), tp.Source)
	for _, l := range r.Listeners {
		fmt.Fprintf(&b, "listener: %s, listen() backlog %d, %d waiting to be accepted, %s (sock_diag)\n", l.Endpoint(), l.Backlog, l.AcceptQueue, l.Owner())
	}
	if r.IoTDB != nil {
		fmt.Fprintf(&b, "iotdb config: %s", r.IoTDB.Home)
		for _, n := range []string{facts.PropRPCPort, facts.PropMaxClients, facts.PropFrameSize} {
			if p, ok := r.IoTDB.Properties[n]; ok {
				fmt.Fprintf(&b, "; %s", p)
			}
		}
		b.WriteString("\n")
	}
	c := r.Capacity
	fmt.Fprintf(&b, "capacity: %s\n", capacityLine(c))
	if m := c.Measured; m != nil {
		fmt.Fprintf(&b, "measured (--active): opened %d of %s as %d loopback connections: both ends counted (client and accepted side both in the measuring process: 2 sockets, 2 fds per connection), %s, %.0f ms, nofile %s:%s\n",
			m.ReachedSockets, plural.N(m.RequestedSockets, "socket"), m.Connections, plural.N(m.SourceAddresses, "source address"), m.DurationMS, facts.FmtNofile(m.NofileSoft), facts.FmtNofile(m.NofileHard))
		if ok, why := m.CostSignificance(); ok {
			fmt.Fprintf(&b, "  kernel memory: %s per socket (%.0f unreclaimable; slope of Slab over %s, fit R² %.3f, Slab %+d bytes in all); %s -> %s\n",
				plural.N(int(math.Round(m.BytesPerSocket)), "byte"), m.SUnreclaimPerSocket, plural.N(m.Samples, "sample"), m.SlabFitR2, m.SlabDeltaBytes, plural.N(r.Target.Sockets, "socket"), checks.Mib(m.BytesPerSocket*float64(r.Target.Sockets)))
		} else {
			fmt.Fprintf(&b, "  kernel memory: not measured: %s; the estimate of %s per socket is kept (Slab %+d bytes over %s)\n",
				why, plural.N(checks.EstimatedBytesPerSocket, "byte"), m.SlabDeltaBytes, plural.N(m.Samples, "sample"))
		}
		if m.FirstError != "" {
			fmt.Fprintf(&b, "  first error: %s on %s: %s\n", m.FirstError, m.FirstErrorOp, m.FirstErrorMessage)
		}
		if m.LimitNote != "" {
			fmt.Fprintf(&b, "  note: %s\n", m.LimitNote)
		}
	}
	b.WriteString("\n")
	checks := append([]verdict.Check(nil), r.Checks...)
	sort.SliceStable(checks, func(i, j int) bool { return statusRank[checks[i].Status] < statusRank[checks[j].Status] })
	fmt.Fprintf(&b, "%-6s %-19s %s\n", "STATUS", "CHECK", "RESULT")
	for _, ch := range checks {
		st := fmt.Sprintf("%-6s", strings.ToUpper(string(ch.Status)))
		fmt.Fprintf(&b, "%s %-19s %s\n", paint(color, statusColor(ch.Status), st), ch.ID, ch.Summary)
		if ch.Status == verdict.Fail || ch.Status == verdict.Warn {
			for _, kv := range [][2]string{{"observed", ch.Observed}, {"expected", ch.Expected}, {"remedy", ch.Remedy}, {"proof", r.proofLine(ch.ID)}} {
				if kv[1] != "" {
					fmt.Fprintf(&b, "%27s %s: %s\n", "", kv[0], kv[1])
				}
			}
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// proofLine says what a printed remedy was proven to do ("after sysctl
// fs.nr_open=2020000: fd.nr_open passes"), "" when it has no proof or
// was withheld (the remedy line says so).
func (r *Report) proofLine(id string) string {
	for _, p := range r.Remedies {
		if p.Check != id || p.Withheld != "" {
			continue
		}
		if len(p.Passes) == 0 {
			return fmt.Sprintf("after %s, %s does not pass yet", strings.Join(p.Changes, ", "), id)
		}
		return fmt.Sprintf("after %s, with the other checks as they are: %s pass%s", strings.Join(p.Changes, ", "), strings.Join(p.Passes, ", "), map[bool]string{true: "es", false: ""}[len(p.Passes) == 1])
	}
	return ""
}

// capacityLine is the text report's capacity: the smallest known ceiling,
// and the ceilings that could not be read, by name.
func capacityLine(c checks.Capacity) string {
	var unknown []string
	for _, u := range c.Unknown {
		unknown = append(unknown, fmt.Sprintf("%s (%s)", u.Resource, u.Check))
	}
	cost := fmt.Sprintf("%s of kernel memory per socket, %s", plural.N(int(math.Round(c.BytesPerSocket)), "byte"), c.BytesPerSocketSource)
	if len(c.Limits) == 0 {
		return fmt.Sprintf("not known: no ceiling could be read (%s; %s)", strings.Join(unknown, ", "), cost)
	}
	s := fmt.Sprintf("about %s (limited by %s", plural.N(c.Sockets, "socket"), c.LimitedBy)
	for _, l := range c.Limits {
		if l.Check == c.LimitedBy && l.Assumed {
			s += ", " + l.Resource + ": the service's own limit is not known"
			break
		}
	}
	if len(unknown) > 0 {
		s += fmt.Sprintf("; at most that: not known are %s", strings.Join(unknown, ", "))
	}
	return s + "; " + cost + ")"
}
