package iotdb

import (
	"fmt"

	"github.com/hostprep/hostprep/internal/plural"
)

// Client paths: how a step's operations are driven (ClientUse.Path).
const (
	// PathLoop: one thread drives every worker of the step over one epoll
	// set (loop.go), waking once for all the answers that arrived
	// meanwhile: the least CPU per operation under concurrency.
	PathLoop = "event_loop"
	// PathDirect: each worker on a locked OS thread of its own, blocking
	// in read(2) on its session's socket for the answer (the Java
	// client's way): one system call per answer instead of epoll_wait and
	// read, the latency path for a step with fewer sessions than CPUs.
	PathDirect = "direct_read"
	// PathGoroutines: a goroutine per worker, through Go's netpoller
	// (mixed, whose read takes three calls, and open-loop steps).
	PathGoroutines = "goroutines"
)

// DirectMaxClientShare is the share (0..1) of the probe's CPUs
// (GOMAXPROCS) the previous step's client may have used for a step to
// take PathDirect: a thread per worker needs CPUs the single loop leaves
// free, and a client already using half of them is better served by the
// loop's fewer wake-ups (bench/README.md).
const DirectMaxClientShare = 0.5

// choosePath is the client path of a step of n workers (this shard's)
// on procs CPUs (GOMAXPROCS), given the client use of the step before it
// (the warm-up for the first step; nil when there is none), and why.
// cfg.clientPath, when set (tests), is taken as given.
func choosePath(cfg *Config, p *sessionPool, n, procs int, prev *ClientUse) (path, why string) {
	if !loopable(p) {
		if cfg.Rate > 0 {
			return PathGoroutines, "an open loop (a rate per worker): each worker keeps its own schedule, a goroutine per worker"
		}
		return PathGoroutines, "the mixed scenario (a read takes three calls): a goroutine per worker"
	}
	if cfg.clientPath != "" {
		return cfg.clientPath, "set by the caller"
	}
	workers := plural.N(n, "worker")
	cpus := plural.N(procs, "CPU")
	switch {
	case n >= procs:
		return PathLoop, fmt.Sprintf("%s on %s: one thread drives them all over epoll (least CPU per operation)", workers, cpus)
	case p.size < n:
		return PathLoop, fmt.Sprintf("%s on a pool of %s: workers wait for sessions, which the one loop hands on", workers, plural.N(p.size, "session"))
	case prev == nil:
		return PathDirect, fmt.Sprintf("%s, fewer than the %s (no step before it): each worker on its own thread, blocking in read(2) on its session", workers, cpus)
	case prev.CPUCores >= DirectMaxClientShare*float64(procs):
		return PathLoop, fmt.Sprintf("%s, fewer than the %s, but the step before used %.2f of them (at least %.0f%%): one thread drives them all over epoll",
			workers, cpus, prev.CPUCores, 100*DirectMaxClientShare)
	}
	return PathDirect, fmt.Sprintf("%s, fewer than the %s, and the step before used %.2f of them (under %.0f%%): each worker on its own thread, blocking in read(2) on its session",
		workers, cpus, prev.CPUCores, 100*DirectMaxClientShare)
}
