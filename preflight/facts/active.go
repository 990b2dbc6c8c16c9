package facts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
)

// --active: measure instead of estimate.
//
// The measurement runs in a child process, the hostprep binary itself
// re-executed as `hostprep preflight __active-child`, so that it holds the
// sockets under the TARGET's RLIMIT_NOFILE, not hostprep's (the Go runtime
// raises its own soft limit to the hard limit at start, and a re-executed Go
// binary would do so again). The child therefore sets its own limits with
// setrlimit(RLIMIT_NOFILE) to the target's soft and hard values before it
// opens anything: lowering always works; raising the hard limit above the
// child's inherited one needs CAP_SYS_RESOURCE, and when that is refused
// the child runs at the hard limit it has and says so (LimitNote).
//
// The child opens K sockets as K/2 loopback TCP connections to a listener
// of its own: a loopback connection is two sockets (client and accepted
// server side), so both ends — 2 fds per connection — are in the one
// process, exactly as K sockets are K fds in a broker. Each client binds
// 127.0.0.1, then 127.0.0.2, 127.0.0.3 ... (IP_BIND_ADDRESS_NO_PORT) when
// the connections to the one listener would exceed the ephemeral port range.
// Kernel memory per socket is the change of Slab (and SUnreclaim) in
// /proc/meminfo divided by the sockets opened — /proc/net/sockstat "mem"
// only counts queued buffer pages and stays 0 for idle sockets.
//
// Nothing is left behind: the child is in its own process group with
// Pdeathsig=SIGKILL (it dies with hostprep), the parent kills the whole
// group on timeout or cancellation, the child has its own deadline, and
// sockets are closed with SO_LINGER 0 (RST, so no TIME_WAIT remains).

// MinMeasuredSockets is the fewest sockets (MinMeasuredSockets/2
// loopback connections) whose Slab change is taken as a measurement of
// the kernel memory per socket. Below it the slab allocator's granularity
// dominates: Slab grows in whole slab pages (32 KiB for the TCP cache) and
// per-CPU partial slabs absorb the first allocations. On the build host
// (kernel 6.18, 2 CPUs; `preflight --active --sockets K`, six runs each)
// K=50 gave 0-1050 bytes per socket, K=200 384-2231, K=500 2618-3505,
// K=1000 3234-3666, K=2000 3485-3928 (a second series 3334-4151) and
// K=10000 3684-4554: from 2000 sockets the slope is within about 15 % of
// the large-run figure; below it the slope is biased low.
const MinMeasuredSockets = 2000

// MinSlabFitR2 is the least R² of the Slab fit taken as a measurement:
// below it Slab did not follow the sockets (other processes' slab
// activity, or a change smaller than one slab page). Real runs from 500
// sockets up fit with R² 0.92-0.999 on the build host; K=10 fits near 0.
const MinSlabFitR2 = 0.9

// CostSignificance says whether the Slab slope of m measures the kernel
// memory per socket: at least MinMeasuredSockets sockets opened, a
// positive slope, and a fit with R² >= MinSlabFitR2 (checked when the
// result has more than two samples). When not, why says so in words for
// the report. It is a pure function of m.
func (m *ActiveResult) CostSignificance() (ok bool, why string) {
	switch {
	case m.ReachedSockets < MinMeasuredSockets:
		return false, fmt.Sprintf("the run was too small to measure kernel memory per socket: %s opened, fewer than the %d (%d loopback connections) a measurement needs (Slab grows in whole slab pages and per-CPU caches absorb the first sockets)",
			plural.N(m.ReachedSockets, "socket"), MinMeasuredSockets, MinMeasuredSockets/2)
	case m.BytesPerSocket <= 0:
		return false, fmt.Sprintf("Slab did not grow with the %s opened (slope <= 0, Slab %+d bytes): other kernel activity swamped the change", plural.N(m.ReachedSockets, "socket"), m.SlabDeltaBytes)
	case m.Samples > 2 && m.SlabFitR2 < MinSlabFitR2:
		return false, fmt.Sprintf("Slab followed the sockets too loosely to measure (fit R² %.2f < %.1f): other kernel activity swamped the change", m.SlabFitR2, MinSlabFitR2)
	}
	return true, ""
}

// ActiveChildArg is the hidden subcommand of `hostprep preflight` that runs
// the measurement child.
const ActiveChildArg = "__active-child"

// activeFDHeadroom is the fds the child needs besides its sockets (stdio,
// epoll, the listener, runtime pipes).
const activeFDHeadroom = 64

// ActiveResult is what the --active child measured.
type ActiveResult struct {
	// RequestedSockets is K, the sockets the child tried to open.
	RequestedSockets int `json:"requested_sockets"`
	// ReachedSockets were open at once (client plus accepted server sides).
	ReachedSockets int `json:"reached_sockets"`
	// Connections is the number of loopback connections (2 sockets each).
	Connections int `json:"connections"`
	// SourceAddresses is how many of 127.0.0.1, 127.0.0.2, ... were used.
	SourceAddresses int `json:"source_addresses"`
	// FirstError is the errno name of the first failure (EMFILE, ENFILE,
	// EADDRNOTAVAIL, ENOBUFS, ENOMEM, ETIMEDOUT ...), "" if none.
	FirstError string `json:"first_error,omitempty"`
	// FirstErrorOp is the call that failed (connect, accept, listen).
	FirstErrorOp string `json:"first_error_op,omitempty"`
	// FirstErrorMessage is the full error text.
	FirstErrorMessage string `json:"first_error_message,omitempty"`
	// SlabDeltaBytes and SUnreclaimDeltaBytes are the change of Slab and
	// SUnreclaim in /proc/meminfo between before and with all sockets open.
	SlabDeltaBytes       int64 `json:"slab_delta_bytes"`
	SUnreclaimDeltaBytes int64 `json:"sunreclaim_delta_bytes"`
	// BytesPerSocket is the kernel memory of one idle established socket
	// on this host, bytes: the slope of a least-squares fit of Slab
	// against sockets open, sampled Samples times while opening (robust
	// to other processes' slab activity, which a single difference is not).
	BytesPerSocket float64 `json:"bytes_per_socket"`
	// SUnreclaimPerSocket is the same fit for SUnreclaim (the part the
	// kernel cannot reclaim under memory pressure), bytes.
	SUnreclaimPerSocket float64 `json:"sunreclaim_per_socket"`
	// Samples is the number of (sockets, Slab) points fitted.
	Samples int `json:"samples"`
	// SlabFitR2 is the coefficient of determination (0..1) of the Slab
	// fit: how closely Slab followed the sockets opened; 0 when the slope
	// was not positive.
	SlabFitR2 float64 `json:"slab_fit_r2"`
	// CostMeasured is true when BytesPerSocket is a measurement worth
	// using (see CostSignificance); when false CostNote says why and the
	// estimate EstimatedBytesPerSocket is used. Set by Run.
	CostMeasured bool   `json:"cost_measured"`
	CostNote     string `json:"cost_note,omitempty"`
	// NofileSoft and NofileHard are the limits the child ran with.
	NofileSoft uint64 `json:"nofile_soft"`
	NofileHard uint64 `json:"nofile_hard"`
	// LimitNote says when the child could not take the target's limits.
	LimitNote string `json:"limit_note,omitempty"`
	// DurationMS is how long opening took, milliseconds.
	DurationMS float64 `json:"duration_ms"`
	// TimedOut is true when the time bound stopped the child early.
	TimedOut bool `json:"timed_out,omitempty"`
}

// ActiveOptions control --active.
type ActiveOptions struct {
	// Exe is the hostprep binary to re-execute; "" = os.Executable().
	Exe string
	// Sockets is K; 0 = min(target sockets, target soft nofile - 64).
	Sockets int
	// Timeout bounds the child (default 60 s).
	Timeout time.Duration
}

// defaultActiveSockets is K when not given: the target, but no more than
// the target's soft fd limit allows, rounded down to an even number (two
// sockets per loopback connection).
func DefaultActiveSockets(n int, soft uint64) int {
	k := uint64(n)
	if soft > activeFDHeadroom && soft-activeFDHeadroom < k {
		k = soft - activeFDHeadroom
	}
	return int(k &^ 1)
}

// measureActive runs the child with the target's limits and returns what
// it measured. Errors are exitcode.Environment (could not run).
func MeasureActive(ctx context.Context, o ActiveOptions, k int, target ProcessFacts) (*ActiveResult, error) {
	exe := o.Exe
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return nil, exitcode.Environmentf("--active: cannot find the hostprep binary to re-execute: %v", err)
		}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+10*time.Second)
	defer cancel()

	// Pdeathsig fires when the thread that started the child exits; pin
	// this goroutine to its thread until the child is reaped.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	cmd := exec.CommandContext(ctx, exe, "preflight", ActiveChildArg,
		"--sockets", strconv.Itoa(k),
		"--nofile", FmtNofile(target.NofileSoft)+":"+FmtNofile(target.NofileHard),
		"--timeout", timeout.String())
	slog.Debug("preflight --active: starting the measuring child", "command", strings.Join(cmd.Args, " "), "timeout", timeout.String())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole group
	}
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // nothing of the group survives
	}
	if ctx.Err() != nil {
		return nil, exitcode.Environmentf("--active: the measuring child did not finish within %s and was killed", timeout+10*time.Second)
	}
	if err != nil {
		return nil, exitcode.Environmentf("--active: measuring child failed: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var r ActiveResult
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		return nil, exitcode.Environmentf("--active: cannot read the child's result: %v (output %q)", err, stdout.String())
	}
	slog.Debug("preflight --active: child finished", "pid", cmd.Process.Pid, "reached_sockets", r.ReachedSockets, "requested_sockets", r.RequestedSockets,
		"connections", r.Connections, "first_error", r.FirstError, "slab_delta_bytes", r.SlabDeltaBytes, "bytes_per_socket", r.BytesPerSocket,
		"slab_fit_r2", r.SlabFitR2, "samples", r.Samples, "duration_ms", r.DurationMS, "stderr", strings.TrimSpace(stderr.String()))
	return &r, nil
}

// ParseNofile parses "SOFT:HARD" (each a number or "infinity") as the
// child's --nofile flag takes it.
func ParseNofile(s string) (soft, hard uint64, err error) {
	l, err := parseSystemdLimit(s)
	if err != nil {
		return 0, 0, fmt.Errorf("--nofile %q: %v", s, err)
	}
	return l.Soft, l.Hard, nil
}
