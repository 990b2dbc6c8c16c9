package iotdb

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/rate"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/profiles"
	"github.com/spf13/pflag"
)

// command is `hostprep probe iotdb` (loadprobe.Command): its flags are
// bound to cfg, and Resolve layers them over the profile.
type command struct {
	cfg          Config
	maxErrorRate float64
}

func newCommand() *command {
	c := &command{cfg: Defaults, maxErrorRate: DefaultMaxErrorRate}
	c.cfg.Password = ""
	c.cfg.Steps = slices.Clone(c.cfg.Steps)
	return c
}

func (c *command) Help() loadprobe.Help {
	return loadprobe.Help{
		Short: "Step load through the IoTDB SessionPool: latency, TPS, errors and pool use per concurrency step, and the knee",
		Long: `Runs --steps of concurrent workers against an IoTDB DataNode through the Go
client's SessionPool (tree model), each for --step-duration: closed loop by
default (each worker starts its next operation when the last returned), or
with --rate an open-loop schedule of RATE operations/s per worker with
latency measured from each operation's scheduled start.

Scenarios: write (insertRecord of two FLOAT measurements, temperature and
humidity, one device per worker; 2 points/op), batch (InsertTablets of 10
devices x 50 rows x 2 measurements; 1,000 points/op), mixed (70% reads of 100
points, 30% writes of 300 points).

Before the load it reads the server version and creates the database
root.hostprep_<run id> and its time series; afterwards it deletes it
(unless --keep). Nothing outside that database is written. With --database
root.x (an existing database, for users who may write but not create
databases) the devices go under root.x.hostprep_<run id>, only time series
are created, and only those are deleted afterwards.

Each step says what bounded it: the pool (use >= 90% with workers waiting),
the client (the probe's own CPU or scheduling lag), errors, the workers (an
open loop that missed more than 1% of its schedule: too few for the rate x
latency; iotdb.schedule warns, and fails above 5%), or the server
(latency rising while pool and client had headroom); the knee line names it
with the fix, and suggestions follow. IoTDB status codes met are explained.

Per step: mean, p50, p95, p99, max response time (ms), TPS, points/s, error
rate, errors by class (wait_timeout, connect, status, deadline, panic, other)
and SessionPool utilisation as counted by the probe. The knee is the first
step whose throughput grows < 5% while p95 grows > 50%.

The password comes from --password-file or $` + PasswordEnv + ` (default
root) and is never printed. Exit codes: 0 pass, 1 a threshold failed, 2 bad
input (a 0 duration, pool size or port, steps not increasing), 3 could not
run (IoTDB unreachable, or gone for 5 s mid-run; database not creatable;
interrupted before the last step ended: the partial report says
INCOMPLETE and never PASS). An interrupt after the last step, during the
clean-up, keeps the verdict; the clean-up goes on (--log-level info shows
its waits) until a second interrupt stops it: exit 3, the database may have
been left (the report names the statement that deletes it).`,
		Example: `  hostprep probe iotdb --scenario write --steps 10,20,30,40,50 --step-duration 30s
  hostprep probe iotdb --scenario batch --steps 50,100,150,200 --pool-size 200 --html report.html
  hostprep probe iotdb --scenario mixed --steps 200,300,400,500 --max-p95 200ms --min-tps 1000 -o json
  hostprep probe iotdb --profile iotdb`,
		PasswordEnv:  PasswordEnv,
		PasswordFile: "file holding the IoTDB password (else $" + PasswordEnv + ", else root); never printed",
		Shard:        "run shard `K/N` of a fleet run of N load generators: this host's share of each step's workers, its own devices; every shard gets the same --run-id",
		CSV:          "also write one row per step to this CSV `FILE`",
		HTML:         "also write a self-contained HTML report with response-time and throughput charts to `FILE`",
	}
}

// Flags declares a flag for every setting FlagOf names.
func (c *command) Flags(fl *pflag.FlagSet) {
	cfg := &c.cfg
	fl.StringVar(&cfg.Host, "host", cfg.Host, "IoTDB DataNode host")
	fl.IntVar(&cfg.Port, "port", cfg.Port, "IoTDB DataNode client RPC port")
	fl.StringSliceVar(&cfg.NodeURLs, "node-urls", nil, "DataNodes' client RPC addresses host:port,... (the SessionPool's NodeUrls; a new session goes to the first that answers); replaces --host/--port")
	fl.BoolVar(&cfg.Redirection, "redirection", false, "follow the server's redirection of writes to the DataNode leading the device's region (the Java SessionPool's enableRedirection)")
	fl.StringVar(&cfg.RunID, "run-id", "", "run id naming the database root.hostprep_<run id> (lower-case letters, digits, _); the same on every shard of a fleet run (default: random)")
	fl.StringVar(&cfg.Database, "database", "", "write under this existing database (root.x): devices root.x.hostprep_<run id>.d<N>, only time series created and deleted (default: create and delete root.hostprep_<run id>)")
	fl.StringVar(&cfg.User, "user", cfg.User, "IoTDB user")
	fl.StringVar(&cfg.Scenario, "scenario", cfg.Scenario, "load: write, batch or mixed")
	fl.IntSliceVar(&cfg.Steps, "steps", cfg.Steps, "worker counts of the steps, strictly increasing (e.g. 10,20,30,40,50)")
	fl.DurationVar(&cfg.StepDuration, "step-duration", cfg.StepDuration, "how long each step runs")
	fl.DurationVar(&cfg.Warmup, "warmup", cfg.Warmup, "unmeasured warm-up with the first step's workers (negative: none)")
	fl.IntVar(&cfg.PoolSize, "pool-size", cfg.PoolSize, "SessionPool size (sessions)")
	fl.DurationVar(&cfg.WaitTimeout, "wait-timeout", cfg.WaitTimeout, "how long a worker waits for a free session")
	fl.DurationVar(&cfg.ConnectTimeout, "connect-timeout", cfg.ConnectTimeout, "bound on opening a new session: the TCP connect, then again the OpenSession handshake")
	fl.DurationVar(&cfg.CallTimeout, "call-timeout", cfg.CallTimeout, "the probe's deadline on every call (the client has no socket timeout)")
	fl.IntVar(&cfg.FetchSize, "fetch-size", cfg.FetchSize, "query fetch size (rows)")
	fl.Var((*rate.PerSecond)(&cfg.Rate), "rate", "open loop: operations per second per worker (10, 10/s or 600/m) on a fixed schedule, latency from the scheduled start (0: closed loop)")
	fl.BoolVar(&cfg.Keep, "keep", false, "keep the database root.hostprep_<run id> (with --database: the probe's time series) after the run")
	fl.Float64Var(&c.maxErrorRate, "max-error-rate", c.maxErrorRate, "highest acceptable fraction (0..1) of failed operations in any step")
	fl.DurationVar(&cfg.Thresholds.P95, "max-p95", 0, "highest acceptable p95 response time at the target step (0: not checked)")
	fl.Var((*rate.PerSecond)(&cfg.Thresholds.MinTPS), "min-tps", "lowest acceptable TPS at the target step: 1000, 1000/s or 60000/m (0: not checked)")
	fl.IntVar(&cfg.Thresholds.TargetStep, "target-step", 0, "worker count --max-p95 and --min-tps apply to (0: the last step)")
}

// Resolve is Resolve over Defaults, the profile's probe.iotdb (p nil:
// none) and the flags changed names (FlagOf), validated; settings are
// named by their flags (CommandNames, FlagError).
func (c *command) Resolve(p *profiles.Profile, changed func(string) bool, shard fleet.Shard, password string) (loadprobe.Run, error) {
	cfg := c.cfg
	cfg.Steps = slices.Clone(cfg.Steps)
	cfg.Shard = shard
	maxErrorRate := c.maxErrorRate
	cfg.Thresholds.MaxErrorRate = &maxErrorRate
	var sec *profiles.IoTDBProbe
	if p != nil {
		sec = p.Probe.IoTDB
	}
	cfg = Resolve(&Defaults, sec, &cfg, func(key string) bool { return changed(FlagOf(key)) })
	cfg.Password = password
	cfg.SettingNames = CommandNames(&cfg)
	if err := cfg.Validate(); err != nil {
		return nil, FlagError(err)
	}
	return &commandJob{Job{Config: cfg}}, nil
}

// commandJob is a run of `hostprep probe iotdb`: its errors name flags
// (FlagError), and an interrupt that failed the run is exit 3.
type commandJob struct{ Job }

func (j *commandJob) Run(ctx context.Context, env loadprobe.Env) (loadprobe.Result, error) {
	res, err := j.Job.Run(ctx, env)
	err = FlagError(err)
	if res != nil && err != nil {
		res.MarkIncomplete(err.Error()) // the report says INCOMPLETE and why
	}
	if exitcode.Code(err) == exitcode.Failed {
		err = exitcode.Environmentf("probe iotdb interrupted: %v", err)
	}
	return res, err
}

// FlagOf is the flag of `hostprep probe iotdb` that gives the setting key
// of Resolve ("" for settings without a flag).
func FlagOf(key string) string {
	switch key {
	case "thresholds.max_error_rate":
		return "max-error-rate"
	case "thresholds.p95":
		return "max-p95"
	case "thresholds.min_tps":
		return "min-tps"
	case "thresholds.target_step":
		return "target-step"
	case "password", "unreachable_after", "sample_interval", "on_step", "stop_cleanup", "setting_names":
		return ""
	}
	return strings.ReplaceAll(key, "_", "-")
}

// CommandNames names cfg's settings in the probe's errors, remedies and
// suggestions (Config.SettingNames) by the command's flags: every key
// with a flag (FlagOf) as "--flag"; the address as --node-urls when cfg
// has node URLs, else --host/--port; the password as --password-file or
// $HOSTPREP_IOTDB_PASSWORD; the JSON result as --output json. Keys
// without a flag keep the library's names.
func CommandNames(cfg *Config) map[string]string {
	names := map[string]string{}
	for _, k := range SettingKeys() {
		if f := FlagOf(k); f != "" {
			names[k] = "--" + f
		}
	}
	names["address"] = "--host/--port"
	if len(cfg.NodeURLs) > 0 {
		names["address"] = "--node-urls"
	}
	names["password"] = "--password-file or $" + PasswordEnv
	names["output"] = "--output json"
	return names
}

// FlagError names an invalid setting of err by its flag as well as its
// profile key ("--pool-size (probe.iotdb.pool_size) 0: ..."); other
// errors are returned as they are.
func FlagError(err error) error {
	var se *SettingError
	if !errors.As(err, &se) {
		return err
	}
	flag := FlagOf(se.Key)
	if flag == "" {
		return err
	}
	name := "--" + flag
	if sn := SettingName(se.Key); strings.HasPrefix(sn, "probe.iotdb.") {
		name += " (" + sn + ")"
	}
	return exitcode.New(exitcode.Code(err), se.Named(name))
}
