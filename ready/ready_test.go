package ready

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/iotdb"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/ready/outcome"
	"github.com/hostprep/hostprep/tune"
)

// fakes stand in for the steps only to produce outcomes a healthy host
// cannot (a tune that fails); they record what ran and with what config.
type fakes struct {
	tune, preflight, mqtt, iotdb outcome.Step
	recheck                      []verdict.Check
	ran                          []string
	mqttCfg                      mqtt.Config
	iotdbCfg                     iotdb.Config
}

func pass(summary string) outcome.Step {
	return outcome.Step{Verdict: verdict.Pass, Summary: summary, Checks: []verdict.Check{{ID: "x", Status: verdict.Pass, Summary: summary}}}
}

func newFakes() *fakes {
	return &fakes{tune: pass("applied"), preflight: pass("ok"), mqtt: pass("0 lost"), iotdb: pass("knee")}
}

func (f *fakes) runners() runners {
	return runners{
		tune: func(context.Context, *profiles.Profile, Options) outcome.Step {
			f.ran = append(f.ran, "tune")
			return f.tune
		},
		preflight: func(context.Context, *profiles.Profile, Options) outcome.Step {
			f.ran = append(f.ran, "preflight")
			return f.preflight
		},
		probe: func(_ context.Context, r loadprobe.Run, _ Options) outcome.Step {
			switch j := r.(type) {
			case *mqtt.Job:
				f.ran = append(f.ran, "mqtt")
				f.mqttCfg = j.Config
				return f.mqtt
			case *iotdb.Job:
				f.ran = append(f.ran, "iotdb")
				f.iotdbCfg = j.Config
				return f.iotdb
			}
			panic(fmt.Sprintf("a probe run of type %T", r))
		},
		recheck: func(*profiles.Profile, Options) []verdict.Check {
			f.ran = append(f.ran, "recheck")
			return f.recheck
		},
	}
}

// mqttConfig is the MQTT probe run ready resolves, or why it skips.
func mqttConfig(p *profiles.Profile, o Options) (mqtt.Config, string) {
	r, skip, _ := probeRun(mqtt.Probe, p, o)
	if r == nil {
		return mqtt.Config{}, skip
	}
	return r.(*mqtt.Job).Config, skip
}

// iotdbConfig is the IoTDB probe run ready resolves, or why it skips.
func iotdbConfig(p *profiles.Profile, o Options) (iotdb.Config, string) {
	r, skip, _ := probeRun(iotdb.Probe, p, o)
	if r == nil {
		return iotdb.Config{}, skip
	}
	return r.(*iotdb.Job).Config, skip
}

func stepVerdicts(r *Result) string {
	var s []string
	for _, st := range r.Steps {
		s = append(s, st.Name+"="+string(st.Verdict))
	}
	return strings.Join(s, " ")
}

func TestAllPassIsReady(t *testing.T) {
	f := newFakes()
	f.tune.Changed = true
	res, err := run(context.Background(), Options{Profile: "ready-small", Probes: at("iotdb", "127.0.0.1:6667"), Host: "h1"}, f.runners())
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != outcome.Ready || !res.Changed || res.Host != "h1" || res.Profile != "ready-small" {
		t.Errorf("got %s changed=%v host=%s profile=%s", res.Verdict, res.Changed, res.Host, res.Profile)
	}
	if got := strings.Join(f.ran, ","); got != "tune,preflight,mqtt,iotdb,recheck" {
		t.Errorf("ran %s", got)
	}
	// ready-small names no IoTDB probe: --iotdb gets ready's short default.
	if f.iotdbCfg.Host != "127.0.0.1" || f.iotdbCfg.Port != 6667 || len(f.iotdbCfg.Steps) != 3 || f.iotdbCfg.StepDuration.Seconds() != 5 {
		t.Errorf("iotdb config %+v", f.iotdbCfg)
	}
	if n := f.iotdbCfg.SettingNames["address"]; n != "--iotdb" {
		t.Errorf("the IoTDB probe's errors would name %q, want --iotdb", n)
	}
	// no --mqtt and no broker in the profile: the embedded broker.
	if f.mqttCfg.Broker != "" || f.mqttCfg.Clients != 200 {
		t.Errorf("mqtt config broker %q clients %d, want embedded and the profile's 200", f.mqttCfg.Broker, f.mqttCfg.Clients)
	}
}

func TestTuneFailureStopsTheRest(t *testing.T) {
	f := newFakes()
	f.tune = errStep(exitcode.Environmentf("tune apply: needs root (CAP_SYS_ADMIN): run with sudo"))
	res, err := run(context.Background(), Options{Profile: "ready-small"}, f.runners())
	if exitcode.Code(err) != exitcode.Environment {
		t.Fatalf("err %v (code %d), want exit 3", err, exitcode.Code(err))
	}
	if res.Verdict != outcome.NotReady || res.Changed {
		t.Errorf("verdict %s changed %v", res.Verdict, res.Changed)
	}
	if got := strings.Join(f.ran, ","); got != "tune" {
		t.Errorf("ran %s after a failed tune", got)
	}
	if got := stepVerdicts(res); got != "tune=fail preflight=skip probe-mqtt=skip probe-iotdb=skip" {
		t.Errorf("steps %s", got)
	}
	if len(res.Failing) == 0 || !strings.Contains(res.Failing[0], "needs root") {
		t.Errorf("failing %q", res.Failing)
	}
}

func TestFailedCheckIsExit1FailuresFirst(t *testing.T) {
	f := newFakes()
	f.preflight = outcome.Step{Verdict: verdict.Fail, ExitCode: 1, Summary: "1 failed", Checks: []verdict.Check{
		{ID: "fd.hard", Status: verdict.Fail, Summary: "hard nofile 20000 < 1000064"},
		{ID: "clock", Status: verdict.Warn, Summary: "clock not synchronised"},
	}}
	res, err := run(context.Background(), Options{Profile: "ready-small", Sockets: 1000000}, f.runners())
	if exitcode.Code(err) != exitcode.Failed || !strings.Contains(err.Error(), "NOT READY: preflight: fd.hard") {
		t.Fatalf("err %v (code %d)", err, exitcode.Code(err))
	}
	if got := strings.Join(f.ran, ","); got != "tune,preflight,mqtt,recheck" {
		t.Errorf("ran %s: a failed preflight must not stop the probes", got)
	}
	// failing names failures only (the NOT READY reasons); the warning
	// is listed apart, and the one-line error (stderr) does not name it.
	if len(res.Failing) != 1 || res.Failing[0] != "preflight: fd.hard: hard nofile 20000 < 1000064" {
		t.Errorf("failing %q: want the failed check only", res.Failing)
	}
	if len(res.Warnings) != 1 || res.Warnings[0] != "preflight: clock: clock not synchronised" {
		t.Errorf("warnings %q", res.Warnings)
	}
	if strings.Contains(err.Error(), "clock") {
		t.Errorf("error line names a warning: %v", err)
	}
	if s := res.Step(outcome.StepProbeIoTDB); s == nil || s.Verdict != verdict.Skip || !strings.Contains(s.Summary, "--iotdb") {
		t.Errorf("iotdb step %+v: want skip naming --iotdb", s)
	}
}

func TestWarningIsReadyExit0(t *testing.T) {
	f := newFakes()
	f.mqtt = outcome.Step{Checks: []verdict.Check{{ID: "mqtt.overruns", Status: verdict.Warn, Summary: "12 overruns"}}}
	res, err := run(context.Background(), Options{Profile: "ready-small"}, f.runners())
	if err != nil || res.Verdict != outcome.ReadyWithWarnings {
		t.Fatalf("%v %v", err, res.Verdict)
	}
	if s := res.Step(outcome.StepProbeMQTT); s.Verdict != verdict.Warn {
		t.Errorf("a step without a verdict takes its checks' worst: %s", s.Verdict)
	}
}

func TestProbeCouldNotRunIsExit3(t *testing.T) {
	f := newFakes()
	f.iotdb = errStep(exitcode.Environmentf("iotdb: dial tcp 127.0.0.1:1: connection refused"))
	res, err := run(context.Background(), Options{Profile: "ready-small", Probes: at("iotdb", "127.0.0.1:1")}, f.runners())
	if exitcode.Code(err) != exitcode.Environment || res.Verdict != outcome.NotReady {
		t.Fatalf("%v %v", err, res.Verdict)
	}
	if !strings.Contains(err.Error(), "probe-iotdb: iotdb: dial tcp") {
		t.Errorf("error %q does not name the step and cause", err)
	}
}

func TestNoTuneAndDryRun(t *testing.T) {
	f := newFakes()
	res, err := run(context.Background(), Options{Profile: "ready-small", NoTune: true, Probes: at("mqtt", "tcp://127.0.0.1:1883")}, f.runners())
	if err != nil || res.Steps[0].Verdict != verdict.Skip || strings.Join(f.ran, ",") != "preflight,mqtt" {
		t.Fatalf("--no-tune: %v %s ran %v", err, stepVerdicts(res), f.ran)
	}
	if f.mqttCfg.Broker != "tcp://127.0.0.1:1883" {
		t.Errorf("--mqtt not passed: %q", f.mqttCfg.Broker)
	}

	// dry run: the embedded broker runs, external targets are not loaded.
	f = newFakes()
	res, err = run(context.Background(), Options{Profile: "ready-small", DryRun: true, Probes: at("iotdb", "127.0.0.1:6667")}, f.runners())
	if err != nil || !res.DryRun || strings.Join(f.ran, ",") != "tune,preflight,mqtt" {
		t.Fatalf("dry run: %v ran %v", err, f.ran)
	}
	if s := res.Step(outcome.StepProbeIoTDB); s.Verdict != verdict.Skip || !strings.Contains(s.Summary, "dry run") {
		t.Errorf("dry run iotdb: %+v", s)
	}
	f = newFakes()
	res, _ = run(context.Background(), Options{Profile: "ready-small", DryRun: true, Probes: at("mqtt", "tcp://10.0.0.1:1883")}, f.runners())
	if s := res.Step(outcome.StepProbeMQTT); s.Verdict != verdict.Skip || !strings.Contains(s.Summary, "tcp://10.0.0.1:1883") {
		t.Errorf("dry run external mqtt: %+v", s)
	}
}

func TestBadInputTouchesNothing(t *testing.T) {
	for _, o := range []Options{
		{},
		{Profile: "ready-small", Probes: at("iotdb", "127.0.0.1")},
		{Profile: "ready-small", Probes: at("iotdb", "127.0.0.1:99999")},
		{Profile: "ready-small", Probes: at("mqtt", "http://x:1883")},
		{Profile: "ready-small", Sockets: -1},
		{Profile: "no-such-profile-anywhere"},
		{Profile: "ready-small", Sets: []string{"nonsense"}},
	} {
		f := newFakes()
		res, err := run(context.Background(), o, f.runners())
		if exitcode.Code(err) != exitcode.BadInput || res != nil || len(f.ran) != 0 {
			t.Errorf("%+v: err %v code %d, ran %v; want exit 2 and nothing run", o, err, exitcode.Code(err), f.ran)
		}
	}
}

// --mqtt takes every scheme the MQTT probe takes (one list:
// mqtt.BrokerSchemes), and a wrong one is refused naming them all.
func TestMQTTSchemesAreTheProbes(t *testing.T) {
	for _, scheme := range mqtt.BrokerSchemes {
		if err := validate(Options{Profile: "ready-small", Probes: at("mqtt", scheme+"://broker.example:1883")}); err != nil {
			t.Errorf("--mqtt %s://: %v", scheme, err)
		}
	}
	err := validate(Options{Profile: "ready-small", Probes: at("mqtt", "http://broker.example:1883")})
	if err == nil || !strings.Contains(err.Error(), mqtt.BrokerSchemesHelp) {
		t.Errorf("--mqtt http://: %v, want the schemes %q", err, mqtt.BrokerSchemesHelp)
	}
}

func TestErrStepKeepsCode(t *testing.T) {
	s := errStep(errors.New("plain"))
	if s.ExitCode != exitcode.Failed || s.Verdict != verdict.Fail {
		t.Errorf("%+v", s)
	}
}

func TestInterruptedRunIsNotReady(t *testing.T) {
	f := newFakes()
	ctx, cancel := context.WithCancel(context.Background())
	rn := f.runners()
	tuneRun := rn.tune
	rn.tune = func(c context.Context, p *profiles.Profile, o Options) outcome.Step {
		cancel() // Ctrl-C while tuning
		return tuneRun(c, p, o)
	}
	res, err := run(ctx, Options{Profile: "ready-small"}, rn)
	if exitcode.Code(err) != exitcode.Environment || res.Verdict != outcome.NotReady {
		t.Fatalf("err %v verdict %v", err, res.Verdict)
	}
	if got := strings.Join(f.ran, ","); got != "tune,recheck" {
		t.Errorf("ran %s after the interrupt: want only the read-only recheck", got)
	}
	if s := res.Step(outcome.StepPreflight); !strings.Contains(s.Error, "interrupted") {
		t.Errorf("preflight step %+v", s)
	}
}

// An IoTDB probe interrupted in its clean-up, after every step, keeps its
// verdict (the measurement is complete), so the run can still be READY:
// then the end-of-run recheck must still run after the interrupt, or a
// tuning undone during the run would read as READY.
func TestInterruptInLastCleanupStillRechecks(t *testing.T) {
	f := newFakes()
	f.recheck = []verdict.Check{{ID: "tune.drift.runtime.net.core.somaxconn", Status: verdict.Fail, Summary: "somaxconn is 4096 again"}}
	ctx, cancel := context.WithCancel(context.Background())
	rn := f.runners()
	probeRun := rn.probe
	rn.probe = func(c context.Context, r loadprobe.Run, o Options) outcome.Step {
		if _, ok := r.(*iotdb.Job); ok {
			cancel() // Ctrl-C during the clean-up; the probe keeps its verdict
		}
		return probeRun(c, r, o)
	}
	res, err := run(ctx, Options{Profile: "ready-small", Probes: at("iotdb", "127.0.0.1:6667")}, rn)
	if got := strings.Join(f.ran, ","); got != "tune,preflight,mqtt,iotdb,recheck" {
		t.Errorf("ran %s", got)
	}
	if exitcode.Code(err) != exitcode.Failed || res.Verdict != outcome.NotReady {
		t.Fatalf("err %v verdict %v: want NOT READY on the drift the recheck found", err, res.Verdict)
	}
	if testenv.CheckByID(t, res.Step(outcome.StepTune).Checks, "tune.drift.runtime.net.core.somaxconn").Status != verdict.Fail {
		t.Errorf("tune step checks %+v", res.Step(outcome.StepTune).Checks)
	}
}

// TestDryRunNeverSaysReady: with every step that ran passing, a dry run's
// verdict is DRY RUN (exit 0), the skipped steps are listed; a failure in a
// step that ran is NOT READY (exit 1).
func TestDryRunNeverSaysReady(t *testing.T) {
	f := newFakes()
	res, err := run(context.Background(), Options{Profile: "ready-small", DryRun: true}, f.runners())
	if err != nil || res.Verdict != outcome.DryRun {
		t.Fatalf("verdict %s err %v: want DRY RUN, exit 0", res.Verdict, err)
	}
	if len(res.Skipped) != 1 || !strings.HasPrefix(res.Skipped[0], "probe-iotdb: not run") {
		t.Errorf("skipped %q: want the IoTDB probe (no target)", res.Skipped)
	}
	f = newFakes()
	f.preflight = outcome.Step{Verdict: verdict.Fail, ExitCode: 1, Checks: []verdict.Check{{ID: "fd.hard", Status: verdict.Fail, Summary: "too low"}}}
	res, err = run(context.Background(), Options{Profile: "ready-small", DryRun: true}, f.runners())
	if exitcode.Code(err) != exitcode.Failed || res.Verdict != outcome.NotReady {
		t.Errorf("dry run with a failed preflight: verdict %s err %v, want NOT READY exit 1", res.Verdict, err)
	}
}

// TestDriftDuringRunFailsTune: a value the end-of-run re-check finds
// undone fails the tune step (NOT READY, exit 1, named in failing); no
// re-check with --no-tune or --dry-run (nothing was applied).
func TestDriftDuringRunFailsTune(t *testing.T) {
	f := newFakes()
	f.recheck = []verdict.Check{{ID: "tune.drift.runtime.net.core.somaxconn", Status: verdict.Fail, Summary: "runtime net.core.somaxconn is 4096 again"}}
	res, err := run(context.Background(), Options{Profile: "ready-small"}, f.runners())
	if exitcode.Code(err) != exitcode.Failed || res.Verdict != outcome.NotReady {
		t.Fatalf("verdict %s err %v: want NOT READY exit 1", res.Verdict, err)
	}
	ts := res.Step(outcome.StepTune)
	if ts.Verdict != verdict.Fail || !strings.Contains(ts.Summary, "; 1 value no longer as applied") {
		t.Errorf("tune step %s %q", ts.Verdict, ts.Summary)
	}
	if len(res.Failing) != 1 || !strings.HasPrefix(res.Failing[0], "tune: tune.drift.runtime.net.core.somaxconn") {
		t.Errorf("failing %q", res.Failing)
	}
	for _, o := range []Options{{Profile: "ready-small", NoTune: true}, {Profile: "ready-small", DryRun: true}} {
		f := newFakes()
		f.recheck = []verdict.Check{{ID: "x", Status: verdict.Fail}}
		run(context.Background(), o, f.runners())
		if strings.Contains(strings.Join(f.ran, ","), "recheck") {
			t.Errorf("%+v: re-checked tuning that was not applied", o)
		}
	}
}

// A file both changed and kept for another item, or kept twice, still
// gives every tune check its own ID (JUnit test cases and Prometheus
// series must be unique).
func TestTuneChecksHaveUniqueIDs(t *testing.T) {
	f := "/etc/security/limits.d/60-hostprep.conf"
	r := &tune.Result{
		Changes: []tune.Change{{File: f, Layer: "persistent", From: "absent", To: "3 lines"}},
		Skipped: []tune.Skip{{File: f, Layer: "persistent", Reason: "nofile soft kept"}, {File: f, Layer: "persistent", Reason: "nofile hard kept"}},
	}
	seen := map[string]bool{}
	for _, c := range tuneChecks(r) {
		if seen[c.ID] {
			t.Errorf("check ID %q twice", c.ID)
		}
		seen[c.ID] = true
	}
	if len(seen) != 3 {
		t.Errorf("%d distinct checks, want 3", len(seen))
	}
}

// --no-tune with a profile that has no preflight target and no probe
// (and no --sockets, --mqtt or --iotdb) checks nothing: it is refused as
// bad input before any step, not a READY (exit 0) that rests on nothing.
// With a target or a probe, or without --no-tune, it runs.
func TestNothingToCheckIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(path, []byte("name: empty\nsysctl:\n  net.core.somaxconn: {value: \"4096\", mode: at-least}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFakes()
	_, err := run(context.Background(), Options{Profile: path, NoTune: true}, f.runners())
	if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "nothing to check") || len(f.ran) != 0 {
		t.Errorf("--no-tune on a profile with nothing to check: %v (ran %v), want exit 2 before any step", err, f.ran)
	}
	for _, o := range []Options{{Profile: path, NoTune: true, Sockets: 100}, {Profile: path, NoTune: true, Probes: at("mqtt", "tcp://127.0.0.1:1883")}, {Profile: path}} {
		f := newFakes()
		if _, err := run(context.Background(), o, f.runners()); exitcode.Code(err) == exitcode.BadInput {
			t.Errorf("%+v: refused: %v", o, err)
		}
	}
}

// at is Options.Probes with one probe's server flag (--NAME addr).
func at(name, addr string) map[string]loadprobe.Target {
	return map[string]loadprobe.Target{name: {Addr: addr}}
}
