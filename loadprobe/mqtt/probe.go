package mqtt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hostprep/hostprep/internal/brokerurl"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/profiles"
)

// Probe is the MQTT probe as loadprobe.Probe: `hostprep probe mqtt`,
// ready's probe-mqtt step, and the MQTT sections of `hostprep report`.
var Probe loadprobe.Probe = probe{}

type probe struct{}

func (probe) Name() string                           { return "mqtt" }
func (probe) Title() string                          { return "MQTT probe" }
func (probe) CheckProfile(p *profiles.Profile) error { return CheckProfile(p) }
func (probe) InProfile(p *profiles.Profile) bool     { return p.Probe.MQTT != nil }
func (probe) Command() loadprobe.Command             { return newCommand() }

// CheckTarget refuses a --mqtt that is not a broker URL the probe takes,
// naming ready's flags.
func (probe) CheckTarget(t loadprobe.Target) error {
	if t.Addr == "" {
		return nil
	}
	if _, err := brokerurl.Parse(t.Addr, "--mqtt", brokerurl.Login{User: "--mqtt-user", Password: "--mqtt-password-file or $" + PasswordEnv}); err != nil {
		return exitcode.New(exitcode.BadInput, err)
	}
	return nil
}

// Ready is ready's MQTT run: Resolve over Defaults, the profile's
// probe.mqtt, then --mqtt and --mqtt-user (the password is ready's,
// never layered). With neither a profile section nor --mqtt none runs;
// a dry run does not load an external broker (without a target the
// embedded broker on loopback runs).
func (probe) Ready(p *profiles.Profile, t loadprobe.Target) (loadprobe.Run, string, error) {
	if p.Probe.MQTT == nil && t.Addr == "" {
		return nil, "not run: the profile names no MQTT probe and no --mqtt target was given", nil
	}
	explicit := Defaults()
	explicit.Broker, explicit.Username, explicit.Password = t.Addr, t.User, t.Password
	cfg := Resolve(p.Probe.MQTT, explicit, func(flag string) bool {
		return (flag == "broker" && t.Addr != "") || (flag == "username" && t.User != "")
	})
	cfg.SettingNames = readyNames(t)
	if err := cfg.Validate(); err != nil {
		return nil, "", exitcode.BadInputf("profile %s, probe.mqtt: %v", p.Name, err)
	}
	if t.DryRun && cfg.Broker != "" {
		return nil, "not run: dry run does not load the external broker " + cfg.Broker + " (without a target the embedded broker would run)", nil
	}
	return &Job{Config: cfg}, "", nil
}

// Aim is p with its probe.mqtt broker set to addr (ready's --mqtt).
func (probe) Aim(p *profiles.Profile, addr string) *profiles.Profile {
	cp := *p
	mq := profiles.MQTTProbe{}
	if p.Probe.MQTT != nil {
		mq = *p.Probe.MQTT
	}
	mq.Broker = addr
	cp.Probe.MQTT = &mq
	return &cp
}

// ReadyFlags words --mqtt, --mqtt-user and --mqtt-password-file.
func (probe) ReadyFlags() loadprobe.ReadyFlags {
	return loadprobe.ReadyFlags{
		Addr:         "MQTT broker `URL` the MQTT probe loads (tcp://host:1883, mqtts://host:8883); default: the profile's, else the embedded broker",
		AddrArg:      "URL",
		User:         "MQTT username",
		PasswordFile: "read the MQTT password from `file` (default: $" + PasswordEnv + "); never printed",
		PasswordEnv:  PasswordEnv,
	}
}

// readyNames names the MQTT probe's settings in its errors as ready
// offers them: the broker is --mqtt when given, else the profile's
// probe.mqtt.broker; the login is --mqtt-user and --mqtt-password-file;
// the TLS files, MQTT version and client id, which ready has no flag or
// profile key for, are "the MQTT <setting> setting".
func readyNames(t loadprobe.Target) map[string]string {
	names := map[string]string{"broker": "probe.mqtt.broker", "username": "--mqtt-user", "password-file": "--mqtt-password-file"}
	if t.Addr != "" {
		names["broker"] = "--mqtt"
	}
	for _, s := range []string{"ca", "cert", "key", "mqtt-version", "client-id"} {
		names[s] = "the MQTT " + s + " setting"
	}
	return names
}

// Decode reads a `hostprep probe mqtt -o json` result (or a ready
// step's): a JSON object with a "run_id".
func (probe) Decode(b []byte) (loadprobe.Result, bool) {
	var has struct {
		RunID *string `json:"run_id"`
	}
	if json.Unmarshal(b, &has) != nil || has.RunID == nil {
		return nil, false
	}
	var r Result
	if json.NewDecoder(bytes.NewReader(b)).Decode(&r) != nil {
		return nil, false
	}
	return &r, true
}

// Job is one resolved MQTT probe run (loadprobe.Run).
type Job struct{ Config Config }

// Validate is Config.Validate.
func (j *Job) Validate() error { return j.Config.Validate() }

// Run runs the probe (Run) with its progress on env.Progress.
func (j *Job) Run(ctx context.Context, env loadprobe.Env) (loadprobe.Result, error) {
	cfg := j.Config
	if env.Progress != nil {
		cfg.Progress, cfg.ProgressTTY = env.Progress, env.TTY
	}
	r, err := Run(ctx, cfg)
	if r == nil {
		return nil, err
	}
	return r, err
}

// Judged is the run's verdict and checks.
func (res *Result) Judged() (verdict.Status, []verdict.Check) { return res.Verdict, res.Checks }

// Measured: the run scheduled a message or has a per-second series.
func (res *Result) Measured() bool { return len(res.Series) > 0 || res.Messages.Scheduled > 0 }

// MarkIncomplete sets StoppedEarlyReason unless it is set.
func (res *Result) MarkIncomplete(reason string) {
	if res.StoppedEarlyReason == "" {
		res.StoppedEarlyReason = reason
	}
}

// Headline is the run as ready's probe-mqtt step shows it: clients
// connected, messages received and lost, ack p95, e2e p99 and msg/s; the
// connect, ack and e2e latency percentiles as series.
func (res *Result) Headline() loadprobe.Headline {
	h := loadprobe.Headline{
		Metrics: map[string]float64{
			"clients":         float64(res.Connects.OK),
			"connect_p95_ms":  res.Latency.Connect.P95,
			"ack_p95_ms":      res.Latency.Ack.P95,
			"e2e_p95_ms":      res.Latency.E2E.P95,
			"e2e_p99_ms":      res.Latency.E2E.P99,
			"loss":            res.Messages.LossRate,
			"msgs_per_s":      res.Throughput.ReceivedPerSec,
			"baseline_rtt_ms": res.Baseline.RoundTrip.P50,
		},
		Series: map[string][]loadprobe.Point{},
	}
	for _, s := range []struct {
		name string
		pts  []loadprobe.Point
	}{
		{"ack_latency_ms", loadprobe.Percentiles(res.Latency.Ack)},
		{"e2e_latency_ms", loadprobe.Percentiles(res.Latency.E2E)},
		{"connect_latency_ms", loadprobe.Percentiles(res.Latency.Connect)},
	} {
		if s.pts != nil {
			h.Series[s.name] = s.pts
		}
	}
	h.Summary = fmt.Sprintf("%s: %d/%s connected, %d of %s received (%d lost), ack p95 %.1f ms, e2e p99 %.1f ms, %.0f msg/s",
		res.Broker, res.Connects.OK, plural.N(res.Connects.Target, "client"), res.Messages.Received, plural.N(res.Messages.Expected, "message"), res.Messages.Lost,
		res.Latency.Ack.P95, res.Latency.E2E.P99, res.Throughput.ReceivedPerSec)
	if len(res.Failures) > 0 {
		h.Summary += "; " + strings.Join(res.Failures, "; ")
	}
	return h
}
