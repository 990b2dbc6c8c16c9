package iotdb

import (
	"time"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/latency"
)

// Result is one probe run; it marshals to the JSON `--output json` prints.
type Result struct {
	// Target is host:port of the DataNode client RPC.
	Target string `json:"target"`
	// ServerVersion is what `show version` answered ("" if it could not
	// be read; see Notes).
	ServerVersion string `json:"server_version"`
	// Database is the database written to: the throwaway
	// root.hostprep_<run id> the probe created (CreatedDatabase), or the
	// existing one given with --database.
	Database string `json:"database"`
	// Prefix is the path the probe's devices were under (Prefix.d<N>):
	// the database itself, or <database>.hostprep_<run id>.
	Prefix string `json:"prefix"`
	// CreatedDatabase is true when the probe created Database (and so
	// deletes all of it); false under --database (only its series are
	// deleted).
	CreatedDatabase bool `json:"created_database"`
	// Kept is true when the probe's data was left in place on purpose
	// (--keep).
	Kept bool `json:"kept"`
	// LeftBehind is true when the clean-up could not delete the probe's
	// data (DeleteError says why; with DeleteUnknown it may have been
	// deleted after all); false with --keep, which is Kept.
	LeftBehind bool `json:"left_behind,omitempty"`
	// UnreachableNodes lists the nodes (of --node-urls, or the one
	// target) where opening a session failed at least once during the
	// setup or the load, as "host:port: last error" (a node that fails
	// only the clean-up is not listed: see DeleteError).
	UnreachableNodes []string `json:"unreachable_nodes,omitempty"`
	// Shard is "K/N" for shard K of a fleet run of N ("" when not sharded).
	Shard string `json:"shard,omitempty"`
	// Redirection echoes Config.Redirection.
	Redirection bool `json:"redirection,omitempty"`
	// Series is the number of time series created before the load.
	Series int `json:"series"`
	// Scenario is write, batch or mixed; Mode is "closed" (each worker
	// starts its next operation when the last returned) or "open" (fixed
	// schedule of RatePerWorker operations/s, latency from scheduled time).
	Scenario      string  `json:"scenario"`
	Mode          string  `json:"mode"`
	RatePerWorker float64 `json:"rate_per_worker,omitempty"`
	// PoolSize, WaitTimeoutMS and CallTimeoutMS echo the pool settings.
	PoolSize      int     `json:"pool_size"`
	WaitTimeoutMS float64 `json:"wait_timeout_ms"`
	CallTimeoutMS float64 `json:"call_timeout_ms"`
	// WarmupOps is how many operations the unmeasured warm-up ran;
	// WarmupS how long it ran (more than --warmup when calls in flight
	// at its end outlived it; a note says so).
	WarmupOps int64   `json:"warmup_ops"`
	WarmupS   float64 `json:"warmup_s,omitempty"`
	// WarmupNoAnswer is the longest time without an answer during the
	// warm-up, on the same timeline as Step.NoAnswer (iotdb.stall judges
	// it too); nil without a warm-up or when it was not judged.
	WarmupNoAnswer *Silence `json:"warmup_no_answer,omitempty"`
	// Steps are the measured steps, in the order run.
	Steps []Step `json:"steps"`
	// Knee is the throughput peak and the knee found in Steps.
	Knee Knee `json:"knee"`
	// Verdict is the worst status of Checks.
	Verdict verdict.Status  `json:"verdict"`
	Checks  []verdict.Check `json:"checks"`
	// Started is when the run began; DurationS its length in seconds,
	// setup and clean-up included.
	Started   time.Time `json:"started"`
	DurationS float64   `json:"duration_s"`
	// Notes are things the reader should know (abandoned calls, clean-up
	// problems, an unreadable version).
	Notes []string `json:"notes,omitempty"`
	// Interrupted is true when the run was cancelled (Ctrl-C, SIGTERM, a
	// caller's deadline) before its last step finished: Steps are partial
	// (the step cut short has Partial set), the check iotdb.complete
	// fails, so Verdict is never pass, and Run returns an
	// exitcode.Environment error (exit 3).
	Interrupted bool `json:"interrupted"`
	// Unreachable is true when the run was stopped because every operation
	// failed to connect for Config.UnreachableAfter (the server went away):
	// like Interrupted, Steps are partial, iotdb.complete fails and Run
	// returns an exitcode.Environment error naming the target.
	Unreachable bool `json:"unreachable,omitempty"`
	// DeleteError is why the database could not be deleted after the run
	// ("" when it was deleted or --keep was given); LeftBehind is then
	// true.
	DeleteError string `json:"delete_error,omitempty"`
	// DeleteUnknown is true when the delete's answer was lost and the
	// re-check got no answer either: the data may or may not be left
	// (DeleteError says so).
	DeleteUnknown bool `json:"delete_unknown,omitempty"`
	// CleanupInterrupted is true when the run was interrupted (Ctrl-C,
	// SIGTERM) after every step had run to its end, during the clean-up:
	// the measurement is complete and the verdict stands on the steps
	// (Interrupted stays false). The clean-up went on; CleanupStopped is
	// true when a second interrupt (Config.StopCleanup) stopped it while
	// it waited for the server: the probe's data may have been left
	// (LeftBehind, DeleteUnknown) and Run returns an
	// exitcode.Environment error saying so (exit 3).
	CleanupInterrupted bool `json:"cleanup_interrupted,omitempty"`
	CleanupStopped     bool `json:"cleanup_stopped,omitempty"`
	// StopReason says why the run ended early ("" when it ran to the end).
	StopReason string `json:"stop_reason,omitempty"`
	// Suggestions are tuning hints derived from the run (pool size
	// against workers, wait-timeout hits, error classes and status codes
	// pointing at server settings); empty when nothing stood out.
	Suggestions []Suggestion `json:"suggestions,omitempty"`

	// targetStep is the worker count the run was judged at (0: the
	// last step), as Job.Run ran it; Headline reads it.
	targetStep int
}

// Suggestion is one tuning hint: the setting concerned, what the run
// observed (with the numbers) and the fix.
type Suggestion struct {
	// Setting is the probe or server setting concerned: a probe setting
	// by the run's name for it (Config.SettingNames: "--pool-size" for
	// `hostprep probe iotdb`, "probe.iotdb.pool_size" for `hostprep
	// ready`), or "DataNode memory", "privileges".
	Setting string `json:"setting"`
	// Observed is what the run saw, one line with the numbers.
	Observed string `json:"observed"`
	// Fix is what to change, one line.
	Fix string `json:"fix"`
}

// Bound values of Step.Bound: what limited a step's throughput.
const (
	// BoundPool: the session pool (use >= 90% with workers waiting for a
	// session).
	BoundPool = "pool"
	// BoundClient: the probe itself (its CPU or scheduler lag).
	BoundClient = "client"
	// BoundErrors: failed operations (error rate above the limit).
	BoundErrors = "errors"
	// BoundWorkers: an open loop's workers (--rate) were too few for
	// the rate x latency: more than ScheduleWarnShare of the operations
	// due never started.
	BoundWorkers = "workers"
	// BoundServer: latency rose while pool and client had headroom.
	BoundServer = "server"
)

// SecondStats is one second of a step: operations finished in it and
// their latency, ms (HdrHistogram per second; as Step.Latency, failures
// without an answer at the time they had waited).
type SecondStats struct {
	// Second counts from the step's start (0 = the first second).
	Second int   `json:"second"`
	Ops    int64 `json:"ops"`
	Errors int64 `json:"errors"`
	// Answered are the operations the server answered in that second:
	// successes and errors with a status (a refused write is an answer;
	// a timeout or a dropped connection is not).
	Answered int64   `json:"answered"`
	P50Ms    float64 `json:"p50_ms"`
	P95Ms    float64 `json:"p95_ms"`
	P99Ms    float64 `json:"p99_ms"`
	MaxMs    float64 `json:"max_ms"`
}

// Silence is a time without any answer from the server.
type Silence struct {
	// S is its length in seconds.
	S float64 `json:"s"`
	// FromStep is the index in Result.Steps of the step it began in (-1:
	// the warm-up), and FromS how far into that step it began (s): at its
	// latest answer before, or at the step's start when it had none.
	FromStep int     `json:"from_step"`
	FromS    float64 `json:"from_s"`
}

// Step is one load step with a fixed number of workers.
type Step struct {
	// Workers is the number of concurrent workers (the step's concurrency;
	// of the whole fleet when sharded).
	Workers int `json:"workers"`
	// ShardWorkers is how many of them this shard ran (sharded runs only).
	ShardWorkers int `json:"shard_workers,omitempty"`
	// DurationS is the measured length of the step in seconds: from the
	// first operation's start until the last worker finished (an open
	// loop's workers wait out --step-duration, so TPS is over all of it).
	DurationS float64 `json:"duration_s"`
	// Ops are operations finished (OK + Errors); Reads and Writes split
	// them for the mixed scenario.
	Ops    int64 `json:"ops"`
	OK     int64 `json:"ok"`
	Errors int64 `json:"errors"`
	Reads  int64 `json:"reads,omitempty"`
	Writes int64 `json:"writes,omitempty"`
	// ErrorRate is Errors/Ops (0..1).
	ErrorRate float64 `json:"error_rate"`
	// ErrorsByClass counts errors per class (see Classes).
	ErrorsByClass map[string]int64 `json:"errors_by_class,omitempty"`
	// StatusCodes counts ClassStatus errors per TSStatus code ("301").
	StatusCodes map[string]int64 `json:"status_codes,omitempty"`
	// ErrorSamples holds the first error message seen per class.
	ErrorSamples map[string]string `json:"error_samples,omitempty"`
	// Latency is the response time of the operations, ms (HdrHistogram):
	// closed loop from the operation's start, waiting for a session
	// included; open loop from its scheduled start. Operations the server
	// answered (successes and error statuses) are recorded as measured;
	// those that failed without an answer (deadline, dropped connection,
	// wait timeout, no session) at the time they had waited, and each
	// Missed operation at what it had waited by the step's end, both
	// censored: Latency.Censored counts them, and their true latency was
	// at least that.
	Latency latency.Summary `json:"latency"`
	// TPS is successful operations per second.
	TPS float64 `json:"tps"`
	// Points are values written plus read by successful operations;
	// PointsPerS is Points per second.
	Points     int64   `json:"points"`
	PointsPerS float64 `json:"points_per_s"`
	// Pool is the sampled session-pool utilisation.
	Pool PoolUse `json:"pool"`
	// Client is the probe's own load during the step.
	Client ClientUse `json:"client"`
	// Redirects counts write answers that recommended another DataNode
	// (REDIRECTION_RECOMMEND, 400); followed with --redirection.
	Redirects int64 `json:"redirects,omitempty"`
	// Unanswered counts the step's failures without an answer from the
	// server (every error but a status: wait_timeout, connect, deadline,
	// panic, other), each a censored latency (Latency.Censored).
	Unanswered int64 `json:"unanswered,omitempty"`
	// Missed counts operations the open-loop schedule (--rate) had due
	// before the step's end that never started because the workers were
	// still busy with earlier ones: the offered rate was above what client
	// and server carried. The step ends at its duration either way (the
	// ones that did run were measured from their scheduled time). For a
	// step cut short (Partial) it counts those due before the cut, each
	// censored at the cut; those the schedule had after it were never
	// due and are not counted.
	Missed int64 `json:"missed,omitempty"`
	// Cut counts operations under way (a call in flight, a wait for a
	// session) when the step was cut short (run interrupted, server
	// unreachable): each is a latency censored at what it had waited,
	// and not in Ops or Errors. Latency.Censored is the step's failures
	// without an answer (Unanswered), plus Missed, plus Cut.
	Cut int64 `json:"cut,omitempty"`
	// Partial is true when the step was cut short (run interrupted or
	// stopped); it is shown but left out of the knee.
	Partial bool `json:"partial,omitempty"`
	// Seconds is the step's per-second latency (for the heat map), in
	// order; a second with no operation is present with zeros.
	Seconds []SecondStats `json:"seconds,omitempty"`
	// NoAnswer is the longest time without any answer from the server
	// (a success or an error status; a timeout or a dropped connection is
	// none) that ended in this step or was still open at its end,
	// measured between answers on the run's one timeline (iotdb.stall):
	// from the warm-up's start to the step's end, the warm-up and the
	// steps back to back, so a silence that began in the warm-up or an
	// earlier step counts whole here. Nil when the step was not judged
	// (an open loop owing less than one operation a second).
	NoAnswer *Silence `json:"no_answer,omitempty"`
	// Bound is what limited the step: BoundPool, BoundClient,
	// BoundErrors, BoundWorkers, BoundServer, or "" when nothing did (throughput still
	// grew with workers); BoundReason is one line with the numbers.
	Bound       string `json:"bound,omitempty"`
	BoundReason string `json:"bound_reason,omitempty"`
}

// PoolUse is the session pool's utilisation during a step, counted by the
// probe (sessions handed out and not yet put back, abandoned calls
// included), sampled every Config.SampleInterval.
type PoolUse struct {
	Size     int     `json:"size"`
	MeanUsed float64 `json:"mean_in_use"`
	MaxUsed  int64   `json:"max_in_use"`
	// MeanUtil and MaxUtil are MeanUsed/Size and MaxUsed/Size (0..1).
	MeanUtil float64 `json:"mean_util"`
	MaxUtil  float64 `json:"max_util"`
	Samples  int     `json:"samples"`
	// MeanWaiting is the mean number of workers waiting for a session;
	// WaitingShare the fraction (0..1) of samples with any worker waiting.
	MeanWaiting  float64 `json:"mean_waiting"`
	WaitingShare float64 `json:"waiting_share"`
}

// ClientUse is the probe process's own load during a step: whether the
// load generator, not the server, was the limit.
type ClientUse struct {
	// CPUCores is the process's CPU time (user + system, getrusage) over
	// the step's wall time: 1.0 = one core busy all the time.
	CPUCores float64 `json:"cpu_cores"`
	// CPUPerOpUs is that CPU time per operation, µs.
	CPUPerOpUs float64 `json:"cpu_per_op_us"`
	// SchedLagMeanMs and SchedLagMaxMs are how late the pool sampler's
	// ticks were handled, ms: the time a runnable goroutine of the probe
	// waited for a CPU (high when the probe's host is CPU-bound).
	SchedLagMeanMs float64 `json:"sched_lag_mean_ms"`
	SchedLagMaxMs  float64 `json:"sched_lag_max_ms"`
	// Cores is the number of CPUs the probe's operations could use:
	// GOMAXPROCS with a goroutine per worker, 1 on the event loop (one
	// thread drives every worker), the workers on PathDirect (a thread
	// each).
	Cores int `json:"cores"`
	// EventLoop is true when the step ran on event loops (closed-loop
	// write and batch: PathLoop or PathDirect), false with a goroutine
	// per worker (mixed, --rate).
	EventLoop bool `json:"event_loop"`
	// Path is how the step's operations were driven: PathLoop
	// ("event_loop"), PathDirect ("direct_read": the latency path for
	// fewer sessions than CPUs) or PathGoroutines ("goroutines");
	// PathReason says why (choosePath: the step's workers against the
	// CPUs, and the CPU the step before used).
	Path       string `json:"path"`
	PathReason string `json:"path_reason"`
}
