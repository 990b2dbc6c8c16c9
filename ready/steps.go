package ready

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/iotdb"
	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/ready/outcome"
	"github.com/hostprep/hostprep/tune"
)

// errStep is a step that could not run or failed with an error.
func errStep(err error) outcome.Step {
	return outcome.Step{Verdict: verdict.Fail, Summary: "could not run", Error: err.Error(), ExitCode: exitcode.Code(err)}
}

// probeOutcome finishes a probe's step: a failed verdict is exit 1; a
// run error is the step's error and exit code, and the whole step when
// the probe returned no result (ran is false).
func probeOutcome(s outcome.Step, ran bool, err error) outcome.Step {
	if ran && s.Verdict == verdict.Fail {
		s.ExitCode = exitcode.Failed
	}
	if err != nil {
		e := errStep(err)
		if !ran {
			return e
		}
		s.Verdict, s.Error, s.ExitCode = verdict.Fail, e.Error, e.ExitCode
	}
	return s
}

// tuneChecks turns a tune result into checks: one per change made (pass),
// one per key or file tune skipped with its reason (pass: already as
// wanted), one per warning, one per failed --pid/--service prlimit.
func tuneChecks(r *tune.Result) []verdict.Check {
	var cs []verdict.Check
	for _, c := range r.Changes {
		cs = append(cs, verdict.Check{ID: "tune." + c.Layer + "." + c.Target(), Status: verdict.Pass,
			Summary: fmt.Sprintf("%s %s: %s -> %s", c.Layer, c.Target(), c.From, c.To), Observed: c.From, Expected: c.To})
	}
	for _, s := range r.Skipped {
		cs = append(cs, verdict.Check{ID: "tune.skipped." + s.Layer + "." + s.Target(), Status: verdict.Pass,
			Summary: fmt.Sprintf("%s %s: no change (%s)", s.Layer, s.Target(), s.Reason), Observed: s.Current})
	}
	for i, w := range r.Warnings {
		cs = append(cs, verdict.Check{ID: fmt.Sprintf("tune.warning.%d", i+1), Status: verdict.Warn, Summary: w})
	}
	for _, p := range r.Processes {
		if p.Error != "" {
			cs = append(cs, verdict.Check{ID: fmt.Sprintf("tune.prlimit.%d", p.PID), Status: verdict.Fail,
				Summary: p.Error, Observed: p.Now, Expected: p.To})
		}
	}
	return uniqueIDs(cs)
}

// plannedChecks marks the first n checks of a dry run's tuneChecks (one
// per planned change) skipped: a change planned is not a change made, so
// JUnit shows it as <skipped/>, not as a passing case.
func plannedChecks(cs []verdict.Check, n int) []verdict.Check {
	for i := range cs[:n] {
		cs[i].Status = verdict.Skip
		cs[i].Summary = "planned, not applied: " + cs[i].Summary
	}
	return cs
}

// uniqueIDs makes every check ID distinct (a repeated one gets "#2",
// "#3", ... in order): one file can be both changed and kept for another
// item (soft and hard nofile, "*" and root lines), and a JUnit test case
// or Prometheus series must not appear twice (node_exporter rejects the
// whole textfile).
func uniqueIDs(cs []verdict.Check) []verdict.Check {
	seen := map[string]int{}
	for i := range cs {
		id := cs[i].ID
		seen[id]++
		if n := seen[id]; n > 1 {
			cs[i].ID = fmt.Sprintf("%s#%d", id, n)
		}
	}
	return cs
}

func tuneStep(ctx context.Context, p *profiles.Profile, o Options) outcome.Step {
	opts := tune.Options{Env: o.Tune}
	if o.DryRun {
		pl, err := tune.PlanFor(p, opts)
		if err != nil {
			return errStep(err)
		}
		r := pl.Report()
		s := outcome.Step{Checks: plannedChecks(tuneChecks(&r.Result), len(r.Changes)), Result: r,
			Metrics: map[string]float64{outcome.MetricChanges: float64(len(r.Changes))}}
		s.Summary = fmt.Sprintf("dry run: would make %s (%s shows %s); nothing applied", plural.N(len(r.Changes), "change"), o.Tune.Suggest("plan", tune.ProfileArgs(p)...), plural.Them(len(r.Changes)))
		if r.WouldChange == 0 {
			s.Summary = "dry run: no change needed, the host already matches " + p.Name
		} else if w := verdict.Worst(s.Checks); w == verdict.Pass || w == verdict.Skip {
			// The host does not match the profile yet: nothing here
			// passed, the tuning was skipped.
			s.Verdict = verdict.Skip
		}
		return s
	}
	r, err := tune.Apply(ctx, p, opts)
	if err != nil {
		s := errStep(err)
		if r != nil {
			s.Result, s.Changed, s.Checks = *r, r.Changed, tuneChecks(r)
		}
		return s
	}
	s := outcome.Step{Changed: r.Changed, Checks: tuneChecks(r), Result: *r,
		Metrics: map[string]float64{outcome.MetricChanges: float64(len(r.Changes))}}
	if r.Changed {
		s.Summary = fmt.Sprintf("%s applied (%s undoes %s)", plural.N(len(r.Changes), "change"), o.Tune.Suggest("rollback"), plural.Them(len(r.Changes)))
	} else {
		s.Summary = "no change: the host already matches " + p.Name
	}
	if len(r.Restart) > 0 {
		s.Summary += "; restart " + strings.Join(r.Restart, ", ") + " to pick up the new limits"
	}
	return s
}

// recheckTune re-plans the profile against the host at the end of a run
// (tune.NewPlan reads every key and owned file again): right after a
// successful apply the plan is empty, so each change it now lists is a
// value undone while ready ran — a `hostprep tune rollback`, another
// tool, a package's sysctl.d — and is a failed "tune.drift.LAYER.TARGET"
// check (observed: the live value, expected: the profile's). With no
// drift it is one passed "tune.still-applied" check. A plan that cannot
// be made is a warning: the run's result stands, unconfirmed.
func recheckTune(p *profiles.Profile, o Options) []verdict.Check {
	pl, err := tune.NewPlan(p, o.Tune)
	if err != nil {
		return []verdict.Check{{ID: "tune.still-applied", Status: verdict.Warn,
			Summary: "could not re-read the tuning at the end of the run: " + err.Error()}}
	}
	if !pl.Changed {
		return []verdict.Check{{ID: "tune.still-applied", Status: verdict.Pass,
			Summary: "re-read at the end of the run: the host still matches " + p.Name}}
	}
	var cs []verdict.Check
	for _, c := range pl.Changes {
		cs = append(cs, verdict.Check{ID: "tune.drift." + c.Layer + "." + c.Target(), Status: verdict.Fail,
			Summary:  fmt.Sprintf("%s %s is %s again at the end of the run, not %s as applied: undone while ready ran (hostprep tune rollback, another tool?)", c.Layer, c.Target(), c.From, c.To),
			Observed: c.From, Expected: c.To,
			Remedy: "find what reset it (hostprep tune status shows the drift), then run hostprep ready again"})
	}
	return cs
}

// mqttConfig is the MQTT probe a run makes, or why it is skipped.
func mqttConfig(p *profiles.Profile, o Options) (mqtt.Config, string) {
	if p.Probe.MQTT == nil && o.MQTT == "" {
		return mqtt.Config{}, "not run: the profile names no MQTT probe and no --mqtt target was given"
	}
	// One resolver, as `hostprep probe mqtt` uses: defaults, the
	// profile, then what ready's flags give (--mqtt, --mqtt-user).
	explicit := mqtt.Defaults()
	explicit.Broker, explicit.Username, explicit.Password = o.MQTT, o.MQTTUser, o.MQTTPassword
	cfg := mqtt.Resolve(p.Probe.MQTT, explicit, func(flag string) bool {
		return (flag == "broker" && o.MQTT != "") || (flag == "username" && o.MQTTUser != "")
	})
	cfg.SettingNames = readyNames(o)
	if o.DryRun && cfg.Broker != "" {
		return cfg, "not run: dry run does not load the external broker " + cfg.Broker + " (without a target the embedded broker would run)"
	}
	if o.Progress != nil {
		cfg.Progress, cfg.ProgressTTY = o.Progress, o.ProgressTTY
	}
	return cfg, ""
}

// readyNames names the MQTT probe's settings in its errors as ready
// offers them: the broker is --mqtt when given, else the profile's
// probe.mqtt.broker; the login is --mqtt-user and --mqtt-password-file;
// the TLS files, MQTT version and client id, which ready has no flag or
// profile key for, are "the MQTT <setting> setting".
func readyNames(o Options) map[string]string {
	names := map[string]string{"broker": "probe.mqtt.broker", "username": "--mqtt-user", "password-file": "--mqtt-password-file"}
	if o.MQTT != "" {
		names["broker"] = "--mqtt"
	}
	for _, s := range []string{"ca", "cert", "key", "mqtt-version", "client-id"} {
		names[s] = "the MQTT " + s + " setting"
	}
	return names
}

// checkProbes refuses, before anything is tuned, a probe ready would run
// with a setting the probe itself refuses (mqtt.CheckProfile,
// iotdb.CheckProfile: the profile's file:line:col and key; then the MQTT
// probe as --mqtt changes it): exitcode.BadInput naming the setting and
// the rule. Dry runs are checked too.
func checkProbes(p *profiles.Profile, o Options) error {
	for _, check := range []func(*profiles.Profile) error{mqtt.CheckProfile, iotdb.CheckProfile} {
		if err := check(p); err != nil {
			return err
		}
	}
	if p.Probe.MQTT == nil && o.MQTT == "" {
		return nil
	}
	cfg, _ := mqttConfig(p, o)
	if err := cfg.Validate(); err != nil {
		return exitcode.BadInputf("profile %s, probe.mqtt: %v", p.Name, err)
	}
	return nil
}

// DefaultIoTDBProbe is the IoTDB probe ready runs when --iotdb is given
// and the profile has no probe.iotdb section: a short write step load
// (2, 4 and 8 workers, 5 s each, SessionPool of 16) that any IoTDB
// carries, failing above 1% errors (iotdb.DefaultMaxErrorRate).
func DefaultIoTDBProbe() iotdb.Config {
	return iotdb.Config{Scenario: iotdb.ScenarioWrite, Steps: []int{2, 4, 8}, StepDuration: 5 * time.Second,
		PoolSize: 16, WaitTimeout: 5 * time.Second}
}

// iotdbConfig is the IoTDB probe a run makes, or why it is skipped.
func iotdbConfig(p *profiles.Profile, o Options) (iotdb.Config, string) {
	pp := p.Probe.IoTDB
	if o.IoTDB == "" && (pp == nil || pp.Host == "") {
		if pp != nil {
			return iotdb.Config{}, "not run: the profile's IoTDB probe names no host; pass --iotdb host:port"
		}
		return iotdb.Config{}, "not run: no IoTDB target (pass --iotdb host:port to probe IoTDB)"
	}
	// iotdb.Resolve: ready's built-in probe when the profile has no
	// probe.iotdb section (the probe's own defaults when it has one), then
	// the profile's keys, then --iotdb, --iotdb-user and the password.
	base := DefaultIoTDBProbe()
	if pp != nil {
		base = iotdb.Config{}
	}
	var given iotdb.Config
	given.Host, given.Port, _ = splitHostPort(o.IoTDB) // validated in validate
	given.User, given.Password = o.IoTDBUser, o.IoTDBPassword
	cfg := iotdb.Resolve(&base, pp, &given, func(key string) bool {
		switch key {
		case "host", "port":
			return o.IoTDB != ""
		case "user":
			return o.IoTDBUser != ""
		case "password":
			return o.IoTDBPassword != ""
		}
		return false
	})
	cfg.SettingNames = iotdbNames(pp, o)
	if o.DryRun {
		return cfg, fmt.Sprintf("not run: dry run does not load IoTDB at %s:%d (the probe creates and deletes a database there)", cfg.Host, cfg.Port)
	}
	return cfg, ""
}

// iotdbProbeOnly are the IoTDB probe's settings that ready can set
// neither by flag nor by profile key, only `hostprep probe iotdb` can (by
// the flag "--" + the key with - for _); ready runs them at the probe's
// defaults.
var iotdbProbeOnly = []string{"node_urls", "redirection", "warmup", "connect_timeout", "call_timeout", "rate", "database", "keep", "shard", "run_id"}

// iotdbNames names the IoTDB probe's settings (iotdb.Config.SettingNames)
// as ready offers them, so its errors, remedies and suggestions never
// name a flag of `hostprep probe iotdb` as if ready had it: the address
// (and host, port) is --iotdb when given, else the profile's
// probe.iotdb.host and probe.iotdb.port; the user --iotdb-user, or
// "probe.iotdb.user (or --iotdb-user)" when the profile pp gave it and
// --iotdb-user did not; the password --iotdb-password-file or
// $HOSTPREP_IOTDB_PASSWORD; the JSON result --output json; every other
// profile key probe.iotdb.<key> (iotdb.SettingName); a setting only
// `hostprep probe iotdb` has (iotdbProbeOnly) is
// "`hostprep probe iotdb --<flag>` (ready uses the default)". Settings
// no command sets (unreachable_after, sample_interval) keep the
// library's default name.
func iotdbNames(pp *profiles.IoTDBProbe, o Options) map[string]string {
	names := map[string]string{}
	for _, k := range iotdb.SettingKeys() {
		if n := iotdb.SettingName(k); strings.HasPrefix(n, "probe.iotdb.") {
			names[k] = n
		}
	}
	for _, k := range iotdbProbeOnly {
		names[k] = "`hostprep probe iotdb --" + strings.ReplaceAll(k, "_", "-") + "` (ready uses the default)"
	}
	names["address"] = "probe.iotdb.host and probe.iotdb.port"
	if o.IoTDB != "" {
		names["address"], names["host"], names["port"] = "--iotdb", "--iotdb", "--iotdb"
	}
	names["user"] = "--iotdb-user"
	if o.IoTDBUser == "" && pp != nil && pp.User != "" {
		names["user"] = "probe.iotdb.user (or --iotdb-user)"
	}
	names["password"] = "--iotdb-password-file or $" + iotdb.PasswordEnv
	names["output"] = "--output json"
	return names
}

// percentiles is a latency summary as chart points (X = percentile).
func percentiles(s latency.Summary) []outcome.Point {
	if s.Count == 0 {
		return nil
	}
	return []outcome.Point{{X: 50, Y: s.P50}, {X: 90, Y: s.P90}, {X: 95, Y: s.P95}, {X: 99, Y: s.P99}, {X: 99.9, Y: s.P999}, {X: 100, Y: s.Max}}
}

func mqttStep(ctx context.Context, cfg mqtt.Config) outcome.Step {
	r, err := mqtt.Run(ctx, cfg)
	var s outcome.Step
	if r != nil {
		s = outcome.Step{Verdict: r.Verdict, Checks: r.Checks, Result: r,
			Metrics: map[string]float64{
				outcome.MetricClients:      float64(r.Connects.OK),
				outcome.MetricConnectP95MS: r.Latency.Connect.P95,
				outcome.MetricAckP95MS:     r.Latency.Ack.P95,
				outcome.MetricE2EP95MS:     r.Latency.E2E.P95,
				outcome.MetricE2EP99MS:     r.Latency.E2E.P99,
				outcome.MetricLoss:         r.Messages.LossRate,
				outcome.MetricMsgsPerS:     r.Throughput.ReceivedPerSec,
				outcome.MetricRTTMS:        r.Baseline.RoundTrip.P50,
			},
			Series: map[string][]outcome.Point{},
		}
		for name, sum := range map[string]latency.Summary{"ack_latency_ms": r.Latency.Ack, "e2e_latency_ms": r.Latency.E2E, "connect_latency_ms": r.Latency.Connect} {
			if pts := percentiles(sum); pts != nil {
				s.Series[name] = pts
			}
		}
		s.Summary = fmt.Sprintf("%s: %d/%s connected, %d of %s received (%d lost), ack p95 %.1f ms, e2e p99 %.1f ms, %.0f msg/s",
			r.Broker, r.Connects.OK, plural.N(r.Connects.Target, "client"), r.Messages.Received, plural.N(r.Messages.Expected, "message"), r.Messages.Lost,
			r.Latency.Ack.P95, r.Latency.E2E.P99, r.Throughput.ReceivedPerSec)
		if len(r.Failures) > 0 {
			s.Summary += "; " + strings.Join(r.Failures, "; ")
		}
	}
	return probeOutcome(s, r != nil, err)
}

func iotdbStep(ctx context.Context, cfg iotdb.Config) outcome.Step {
	r, err := iotdb.Run(ctx, cfg)
	var s outcome.Step
	if r != nil {
		s = iotdbOutcome(r, cfg.Thresholds.TargetStep)
	}
	return probeOutcome(s, r != nil, err)
}

// iotdbOutcome is the ready step of an IoTDB probe result r, judged at
// the target step (0: the last): its checks, the TPS and p95 series, and
// the metrics (knee_workers only when a step was a knee).
func iotdbOutcome(r *iotdb.Result, target int) outcome.Step {
	s := outcome.Step{Verdict: r.Verdict, Checks: r.Checks, Result: r, Metrics: map[string]float64{}, Series: map[string][]outcome.Point{}}
	maxErr := 0.0
	var at *iotdb.Step
	for i := range r.Steps {
		st := &r.Steps[i]
		if st.ErrorRate > maxErr {
			maxErr = st.ErrorRate
		}
		if target == 0 || st.Workers == target {
			at = st // the target step, or the last one
		}
		s.Series["tps"] = append(s.Series["tps"], outcome.Point{X: float64(st.Workers), Y: st.TPS})
		s.Series["p95_ms"] = append(s.Series["p95_ms"], outcome.Point{X: float64(st.Workers), Y: st.Latency.P95})
	}
	s.Metrics[outcome.MetricErrorRate] = maxErr
	if len(r.Steps) > 0 {
		s.Metrics[outcome.MetricPeakWorkers] = float64(r.Knee.PeakWorkers)
		s.Metrics[outcome.MetricPeakTPS] = r.Knee.PeakTPS
	}
	if r.Knee.Workers > 0 {
		s.Metrics[outcome.MetricKneeWorkers] = float64(r.Knee.Workers)
	}
	if at != nil {
		s.Metrics[outcome.MetricP95MS] = at.Latency.P95
		s.Metrics[outcome.MetricTPS] = at.TPS
		s.Summary = fmt.Sprintf("%s, %s scenario, %s: at %s %.0f TPS, p95 %.1f ms; highest error rate %.2g%%; %s",
			r.Target, r.Scenario, plural.N(len(r.Steps), "step"), plural.N(at.Workers, "worker"), at.TPS, at.Latency.P95, maxErr*100, r.Knee.Reading)
	} else {
		s.Summary = fmt.Sprintf("%s: no step measured", r.Target)
	}
	return s
}
