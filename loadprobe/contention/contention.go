// Package contention measures, over a probe's run, how busy the host's
// CPUs were and how long the probe itself waited for one, so that a
// probe that fell behind its schedule can say whether the host's other
// work (the CPUs were contended while the probe used little of them) or
// the probe itself (it was most of the load) delayed it.
//
// Three kernel sources, read through github.com/prometheus/procfs:
//   - /proc/pressure/cpu (PSI, Documentation/accounting/psi.rst): "some"
//     is the share of time at least one runnable task waited for a CPU;
//     avg10 is its average over the last 10 s, total the stall in µs
//     since boot (the difference over the run is its share of the run);
//   - /proc/stat's cpu line: CPU time used by all tasks (user, nice,
//     system, irq, softirq, steal), in seconds since boot;
//   - /proc/self/task/TID/schedstat of each thread of this process
//     (Documentation/scheduler/sched-stats.rst): time on a CPU and time
//     waiting on a run queue, ns. /proc/self/schedstat alone is the main
//     thread's, so the threads are summed.
package contention

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/prometheus/procfs"
)

// Sample is the counters at one moment; Take reads one.
type Sample struct {
	at time.Time
	// psiTotal is /proc/pressure/cpu "some" total (µs), psiAvg10 its
	// avg10 (%); psi is false when the file could not be read (no PSI:
	// a kernel without CONFIG_PSI or booted with psi=0).
	psi      bool
	psiTotal uint64
	psiAvg10 float64
	// hostBusy is the CPU seconds all tasks used since boot (/proc/stat);
	// host false when not read.
	host     bool
	hostBusy float64
	// runNs and waitNs are this process's threads' time on a CPU and
	// waiting on a run queue (ns); self false when not read.
	self          bool
	runNs, waitNs uint64
}

// Take reads the counters now. What cannot be read is left out and
// named in the Figures computed from it.
func Take() Sample {
	s := Sample{at: time.Now()}
	fs, err := procfs.NewFS("/proc")
	if err != nil {
		return s
	}
	if p, err := fs.PSIStatsForResource("cpu"); err == nil && p.Some != nil {
		s.psi, s.psiTotal, s.psiAvg10 = true, p.Some.Total, p.Some.Avg10
	}
	if st, err := fs.Stat(); err == nil {
		c := st.CPUTotal
		s.host, s.hostBusy = true, c.User+c.Nice+c.System+c.IRQ+c.SoftIRQ+c.Steal
	}
	if ts, err := fs.AllThreads(os.Getpid()); err == nil {
		s.self = true
		for _, t := range ts {
			// A thread that ended between listing and reading is gone
			// with its counts; the rest still add up.
			if ss, err := t.Schedstat(); err == nil {
				s.runNs += ss.RunningNanoseconds
				s.waitNs += ss.WaitingNanoseconds
			}
		}
	}
	return s
}

// Figures are the contention between two samples.
type Figures struct {
	// Seconds is the wall time between the samples; CPUs the logical
	// CPUs this process may run on (runtime.NumCPU: its affinity mask).
	Seconds float64 `json:"seconds"`
	CPUs    int     `json:"cpus"`
	// PSI says /proc/pressure/cpu was read. SomeAvg10 is its "some"
	// avg10 at the end (%: share of the last 10 s in which a runnable
	// task waited for a CPU); SomeShare the same over the whole
	// interval, from the difference of its total (%).
	PSI       bool    `json:"psi"`
	SomeAvg10 float64 `json:"some_avg10_pct"`
	SomeShare float64 `json:"some_share_pct"`
	// HostCPUs is the CPUs all tasks kept busy on average (CPU seconds
	// per second, /proc/stat), ProbeCPUs those this process used
	// (its threads' schedstat run time per second); -1 when not read.
	HostCPUs  float64 `json:"host_cpus"`
	ProbeCPUs float64 `json:"probe_cpus"`
	// RunqueueMsPerS is how long this process's threads together waited
	// on a run queue, ms per second of the interval (schedstat's second
	// field): time it was ready to run and had no CPU. -1 when not read.
	RunqueueMsPerS float64 `json:"runqueue_ms_per_s"`
}

// Since is the contention from s to a sample taken now.
func (s Sample) Since() Figures { return s.To(Take()) }

// To is the contention from s to e.
func (s Sample) To(e Sample) Figures {
	f := Figures{Seconds: e.at.Sub(s.at).Seconds(), CPUs: runtime.NumCPU(), HostCPUs: -1, ProbeCPUs: -1, RunqueueMsPerS: -1}
	if f.Seconds <= 0 {
		return f
	}
	if s.psi && e.psi && e.psiTotal >= s.psiTotal {
		f.PSI = true
		f.SomeAvg10 = e.psiAvg10
		f.SomeShare = min(100, float64(e.psiTotal-s.psiTotal)/1e6/f.Seconds*100)
	}
	if s.host && e.host && e.hostBusy >= s.hostBusy {
		f.HostCPUs = (e.hostBusy - s.hostBusy) / f.Seconds
	}
	if s.self && e.self && e.runNs >= s.runNs && e.waitNs >= s.waitNs {
		f.ProbeCPUs = float64(e.runNs-s.runNs) / 1e9 / f.Seconds
		f.RunqueueMsPerS = float64(e.waitNs-s.waitNs) / 1e6 / f.Seconds
	}
	return f
}

// BusyShare is the "some" share (%) at or above which the CPUs count as
// busy: tasks waited for a CPU a tenth of the time or more. PSI's own
// documentation gives no threshold; a tenth is where a 1 ms-scheduled
// probe starts to see slots late by its 10 ms overrun threshold
// (several wake-ups per second wait behind another task's time slice).
const BusyShare = 10.0

// Cause is what most likely delayed a probe that fell behind.
type Cause int

const (
	// Unknown: no PSI to tell (the figures could not be read).
	Unknown Cause = iota
	// HostBusy: the CPUs were busy and the probe used less than half of
	// the CPU time the host spent: other work delayed it.
	HostBusy
	// ProbeLoad: the CPUs were busy and the probe (with an embedded
	// broker, the broker too) used half or more of it: it was the load.
	ProbeLoad
	// NotCPU: the CPUs were not busy: the delay was elsewhere (a write
	// that blocked on the socket, a GC pause, the broker).
	NotCPU
)

// Busy says whether the CPUs were contended over the interval or at
// its end: "some" share or avg10 at or above BusyShare.
func (f Figures) Busy() bool { return f.PSI && max(f.SomeShare, f.SomeAvg10) >= BusyShare }

// Cause judges what delayed the probe (see Cause).
func (f Figures) Cause() Cause {
	switch {
	case !f.PSI:
		return Unknown
	case !f.Busy():
		return NotCPU
	case f.ProbeCPUs >= 0 && f.HostCPUs > 0 && f.ProbeCPUs >= f.HostCPUs/2:
		return ProbeLoad
	}
	return HostBusy
}

// Text is the figures in one clause: "the host's CPUs were busy (some
// avg10 38%, 35% of the run) ...", for a report line.
func (f Figures) Text() string {
	if !f.PSI {
		return "CPU pressure not known (/proc/pressure/cpu not readable)"
	}
	s := fmt.Sprintf("CPU pressure some avg10 %.0f%%, %.0f%% of the run", f.SomeAvg10, f.SomeShare)
	if f.HostCPUs >= 0 {
		s += fmt.Sprintf("; host %.1f of %s busy", f.HostCPUs, plural.N(f.CPUs, "CPU"))
	}
	if f.ProbeCPUs >= 0 {
		s += fmt.Sprintf(", this process %.2f, waiting %.0f ms/s on a run queue", f.ProbeCPUs, f.RunqueueMsPerS)
	}
	return s
}

// Behind says why a probe that fell behind its schedule did, and the fix
// that fits: the host's other work (run it when the host is idle), the
// probe itself (another host, a lower rate), or neither (the CPUs were
// free). what names the probe's lateness ("the probe fell behind its
// schedule 4 times (> 10ms late)").
func (f Figures) Behind(what string) (why, fix string) {
	switch f.Cause() {
	case HostBusy:
		return fmt.Sprintf("%s: the host's CPUs were busy (some avg10 %.0f%%, %.0f%% of the run) with other work: the host kept %.1f of %s busy, this process %.2f, and it waited %.0f ms/s for a CPU",
				what, f.SomeAvg10, f.SomeShare, f.HostCPUs, plural.N(f.CPUs, "CPU"), f.ProbeCPUs, f.RunqueueMsPerS),
			"run the probe when the host is idle: stop the other work (top or `ps -eo pid,pcpu,comm --sort=-pcpu` shows it), or lower the rate"
	case ProbeLoad:
		return fmt.Sprintf("%s: the probe itself was the load: it used %.2f of the %.1f CPUs busy on this host of %s (some avg10 %.0f%%, %.0f%% of the run)",
				what, f.ProbeCPUs, f.HostCPUs, plural.N(f.CPUs, "CPU"), f.SomeAvg10, f.SomeShare),
			"run the probe on another host, split it over hosts (--shard), or lower the rate"
	case NotCPU:
		return fmt.Sprintf("%s, while the CPUs were free (some avg10 %.0f%%, %.0f%% of the run): the probe waited elsewhere (a socket write that blocked on the broker, a GC pause)", what, f.SomeAvg10, f.SomeShare),
			"see the ack latency and the broker; lower the rate"
	}
	return fmt.Sprintf("%s: the probe or the socket was the bottleneck (CPU pressure not known: /proc/pressure/cpu not readable)", what),
		"run the probe on another host or lower the rate; see the calibration's scheduler jitter (a probe paused or starved of CPU falls behind too)"
}

// Delayed is what the figures add to a latency over its limit: on a host
// busy with other work, that the latency holds the probe's wait for a
// CPU and the fix is an idle host; with the probe itself the load, that
// it is its own; "" when the CPUs were free or the figures are not known
// (the latency is then the server's or the network's to explain).
func (f Figures) Delayed() string {
	switch f.Cause() {
	case HostBusy:
		return fmt.Sprintf("the host's CPUs were busy with other work during the run (some avg10 %.0f%%, %.0f%% of the run; this process waited %.0f ms/s for a CPU), so the latency holds that wait: run it again when the host is idle",
			f.SomeAvg10, f.SomeShare, f.RunqueueMsPerS)
	case ProbeLoad:
		return fmt.Sprintf("the probe itself was the load (it used %.2f of the %.1f CPUs busy, some avg10 %.0f%%), so the latency holds its own wait for a CPU: run it on another host, split it (--shard) or lower the rate",
			f.ProbeCPUs, f.HostCPUs, f.SomeAvg10)
	}
	return ""
}
