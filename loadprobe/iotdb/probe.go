package iotdb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/profiles"
)

// Probe is the IoTDB probe as loadprobe.Probe: `hostprep probe iotdb`,
// ready's probe-iotdb step, and the IoTDB sections of `hostprep report`.
var Probe loadprobe.Probe = probe{}

type probe struct{}

func (probe) Name() string                           { return "iotdb" }
func (probe) Title() string                          { return "IoTDB probe" }
func (probe) CheckProfile(p *profiles.Profile) error { return CheckProfile(p) }
func (probe) InProfile(p *profiles.Profile) bool     { return p.Probe.IoTDB != nil }
func (probe) Command() loadprobe.Command             { return newCommand() }

// CheckTarget refuses an --iotdb that is not host:port.
func (probe) CheckTarget(t loadprobe.Target) error {
	if t.Addr == "" {
		return nil
	}
	if _, _, err := splitHostPort(t.Addr); err != nil {
		return exitcode.BadInputf("--iotdb %q: %v; want host:port of the DataNode RPC, e.g. 127.0.0.1:6667", t.Addr, err)
	}
	return nil
}

// ReadyDefaults is the IoTDB probe ready runs when --iotdb is given and
// the profile has no probe.iotdb section: a short write step load (2, 4
// and 8 workers, 5 s each, SessionPool of 16) that any IoTDB carries,
// failing above 1% errors (DefaultMaxErrorRate).
func ReadyDefaults() Config {
	return Config{Scenario: ScenarioWrite, Steps: []int{2, 4, 8}, StepDuration: 5 * time.Second,
		PoolSize: 16, WaitTimeout: 5 * time.Second}
}

// Ready is ready's IoTDB run: Resolve over ready's built-in probe
// (ReadyDefaults) when the profile has no probe.iotdb section (the
// probe's own defaults when it has one), then the profile's keys, then
// --iotdb, --iotdb-user and the password. Without a host none runs; a
// dry run never runs (the probe creates and deletes a database).
func (probe) Ready(p *profiles.Profile, t loadprobe.Target) (loadprobe.Run, string, error) {
	pp := p.Probe.IoTDB
	if t.Addr == "" && (pp == nil || pp.Host == "") {
		if pp != nil {
			return nil, "not run: the profile's IoTDB probe names no host; pass --iotdb host:port", nil
		}
		return nil, "not run: no IoTDB target (pass --iotdb host:port to probe IoTDB)", nil
	}
	base := ReadyDefaults()
	if pp != nil {
		base = Config{}
	}
	var given Config
	given.Host, given.Port, _ = splitHostPort(t.Addr) // CheckTarget checked it
	given.User, given.Password = t.User, t.Password
	cfg := Resolve(&base, pp, &given, func(key string) bool {
		switch key {
		case "host", "port":
			return t.Addr != ""
		case "user":
			return t.User != ""
		case "password":
			return t.Password != ""
		}
		return false
	})
	cfg.SettingNames = readyNames(pp, t)
	if t.DryRun {
		return nil, fmt.Sprintf("not run: dry run does not load IoTDB at %s:%d (the probe creates and deletes a database there)", cfg.Host, cfg.Port), nil
	}
	return &Job{Config: cfg}, "", nil
}

// Aim is p with its probe.iotdb host and port set to addr (ready's
// --iotdb host:port).
func (probe) Aim(p *profiles.Profile, addr string) *profiles.Profile {
	h, port, err := splitHostPort(addr)
	if err != nil {
		return p // CheckTarget refused it before
	}
	cp := *p
	d := profiles.IoTDBProbe{}
	if p.Probe.IoTDB != nil {
		d = *p.Probe.IoTDB
	}
	d.Host, d.Port = h, port
	cp.Probe.IoTDB = &d
	return &cp
}

// ReadyFlags words --iotdb, --iotdb-user and --iotdb-password-file.
func (probe) ReadyFlags() loadprobe.ReadyFlags {
	return loadprobe.ReadyFlags{
		Addr:         "IoTDB DataNode `host:port` the IoTDB probe loads; default: the profile's host, else no IoTDB probe",
		AddrArg:      "host:port",
		User:         "IoTDB user (default root)",
		PasswordFile: "read the IoTDB password from `file` (default: $" + PasswordEnv + ", else root); never printed",
		PasswordEnv:  PasswordEnv,
	}
}

// readyOnlyByProbe are the IoTDB probe's settings that ready can set
// neither by flag nor by profile key, only `hostprep probe iotdb` can (by
// the flag "--" + the key with - for _); ready runs them at the probe's
// defaults.
var readyOnlyByProbe = []string{"node_urls", "redirection", "warmup", "connect_timeout", "call_timeout", "rate", "database", "keep", "shard", "run_id"}

// readyNames names the IoTDB probe's settings (Config.SettingNames) as
// ready offers them, so its errors, remedies and suggestions never name a
// flag of `hostprep probe iotdb` as if ready had it: the address (and
// host, port) is --iotdb when given, else the profile's probe.iotdb.host
// and probe.iotdb.port; the user --iotdb-user, or "probe.iotdb.user (or
// --iotdb-user)" when the profile pp gave it and --iotdb-user did not;
// the password --iotdb-password-file or $HOSTPREP_IOTDB_PASSWORD; the
// JSON result --output json; every other profile key probe.iotdb.<key>
// (SettingName); a setting only `hostprep probe iotdb` has
// (readyOnlyByProbe) is "`hostprep probe iotdb --<flag>` (ready uses the
// default)". Settings no command sets (unreachable_after,
// sample_interval) keep the library's default name.
func readyNames(pp *profiles.IoTDBProbe, t loadprobe.Target) map[string]string {
	names := map[string]string{}
	for _, k := range SettingKeys() {
		if n := SettingName(k); strings.HasPrefix(n, "probe.iotdb.") {
			names[k] = n
		}
	}
	for _, k := range readyOnlyByProbe {
		names[k] = "`hostprep probe iotdb --" + strings.ReplaceAll(k, "_", "-") + "` (ready uses the default)"
	}
	names["address"] = "probe.iotdb.host and probe.iotdb.port"
	if t.Addr != "" {
		names["address"], names["host"], names["port"] = "--iotdb", "--iotdb", "--iotdb"
	}
	names["user"] = "--iotdb-user"
	if t.User == "" && pp != nil && pp.User != "" {
		names["user"] = "probe.iotdb.user (or --iotdb-user)"
	}
	names["password"] = "--iotdb-password-file or $" + PasswordEnv
	names["output"] = "--output json"
	return names
}

// splitHostPort splits host:port, the port 1..65535.
func splitHostPort(s string) (string, int, error) {
	h, ps, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.Atoi(ps)
	if err != nil || p < 1 || p > 65535 {
		return "", 0, fmt.Errorf("port %q is not 1..65535", ps)
	}
	if h == "" {
		return "", 0, fmt.Errorf("no host")
	}
	return h, p, nil
}

// Decode reads a `hostprep probe iotdb -o json` result (or a ready
// step's): a JSON object with "target", "scenario" and "steps".
func (probe) Decode(b []byte) (loadprobe.Result, bool) {
	var has struct {
		Target   *string          `json:"target"`
		Scenario *string          `json:"scenario"`
		Steps    *json.RawMessage `json:"steps"`
	}
	if json.Unmarshal(b, &has) != nil || has.Target == nil || has.Scenario == nil || has.Steps == nil {
		return nil, false
	}
	var r Result
	if json.NewDecoder(bytes.NewReader(b)).Decode(&r) != nil {
		return nil, false
	}
	return &r, true
}

// Job is one resolved IoTDB probe run (loadprobe.Run).
type Job struct{ Config Config }

// Validate is Config.Validate.
func (j *Job) Validate() error { return j.Config.Validate() }

// Run runs the probe (Run), writing its warnings (Config.Warnings) and
// one line per finished step to env.Progress; env.Again stops the
// clean-up's wait. The result remembers the target step, which its
// Headline reads.
func (j *Job) Run(ctx context.Context, env loadprobe.Env) (loadprobe.Result, error) {
	cfg := j.Config
	if w := env.Progress; w != nil {
		for _, warning := range cfg.Warnings() {
			fmt.Fprintf(w, "probe iotdb: warning: %s\n", warning)
		}
		if cfg.OnStep == nil {
			cfg.OnStep = func(s Step) {
				fmt.Fprintf(w, "probe iotdb: %s: %.1f TPS, p95 %.2f ms, errors %.2f%%, pool %.0f%%\n",
					plural.N(s.Workers, "worker"), s.TPS, s.Latency.P95, 100*s.ErrorRate, 100*s.Pool.MeanUtil)
			}
		}
	}
	if env.Again != nil {
		cfg.StopCleanup = env.Again // a second Ctrl-C stops the clean-up's wait
	}
	r, err := Run(ctx, cfg)
	if r == nil {
		return nil, err
	}
	r.targetStep = cfg.Thresholds.TargetStep
	return r, err
}

// Judged is the run's verdict and checks.
func (r *Result) Judged() (verdict.Status, []verdict.Check) { return r.Verdict, r.Checks }

// Measured: at least one step was measured.
func (r *Result) Measured() bool { return len(r.Steps) > 0 }

// MarkIncomplete sets StopReason unless it is set, or the interrupt came
// in the clean-up after every step ran (CleanupInterrupted): the
// measurement is complete then, and the report is not INCOMPLETE.
func (r *Result) MarkIncomplete(reason string) {
	if r.StopReason == "" && !r.CleanupInterrupted {
		r.StopReason = reason
	}
}

// Headline is the run as ready's probe-iotdb step shows it, judged at
// the target step (0: the last): the TPS and p95 per step as series, and
// the metrics (knee_workers only when a step was a knee).
func (r *Result) Headline() loadprobe.Headline {
	h := loadprobe.Headline{Metrics: map[string]float64{}, Series: map[string][]loadprobe.Point{}}
	maxErr := 0.0
	var at *Step
	for i := range r.Steps {
		st := &r.Steps[i]
		if st.ErrorRate > maxErr {
			maxErr = st.ErrorRate
		}
		if r.targetStep == 0 || st.Workers == r.targetStep {
			at = st // the target step, or the last one
		}
		h.Series["tps"] = append(h.Series["tps"], loadprobe.Point{X: float64(st.Workers), Y: st.TPS})
		h.Series["p95_ms"] = append(h.Series["p95_ms"], loadprobe.Point{X: float64(st.Workers), Y: st.Latency.P95})
	}
	h.Metrics["error_rate"] = maxErr
	if len(r.Steps) > 0 {
		h.Metrics["peak_workers"] = float64(r.Knee.PeakWorkers)
		h.Metrics["peak_tps"] = r.Knee.PeakTPS
	}
	if r.Knee.Workers > 0 {
		h.Metrics["knee_workers"] = float64(r.Knee.Workers)
	}
	if at != nil {
		h.Metrics["p95_ms"] = at.Latency.P95
		h.Metrics["tps"] = at.TPS
		h.Summary = fmt.Sprintf("%s, %s scenario, %s: at %s %.0f TPS, p95 %.1f ms; highest error rate %.2g%%; %s",
			r.Target, r.Scenario, plural.N(len(r.Steps), "step"), plural.N(at.Workers, "worker"), at.TPS, at.Latency.P95, maxErr*100, r.Knee.Reading)
	} else {
		h.Summary = fmt.Sprintf("%s: no step measured", r.Target)
	}
	return h
}
