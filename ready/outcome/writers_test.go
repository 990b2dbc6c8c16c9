package outcome

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func sample() *Result {
	steps := []Step{
		{Name: StepTune, Verdict: verdict.Pass, Summary: "3 changes applied", Changed: true, DurationMS: 12,
			Checks: []verdict.Check{{ID: "tune.apply", Status: verdict.Pass, Summary: "3 changes"}}},
		{Name: StepPreflight, Verdict: verdict.Fail, Summary: "1 failed, 1 warning", ExitCode: 1, DurationMS: 80,
			Checks: []verdict.Check{
				{ID: "fd.hard", Status: verdict.Fail, Summary: "hard nofile 20000 < 1000064", Observed: "20000 fds", Expected: ">= 1000064 fds", Remedy: "LimitNOFILE=1048576"},
				{ID: `clock "sync"`, Status: verdict.Warn, Summary: "clock not synchronised"},
				{ID: "conntrack", Status: verdict.Skip, Summary: "nf_conntrack not loaded"},
			},
			Metrics: map[string]float64{MetricCapacitySockets: 19936, MetricTargetSockets: 1e6}},
		{Name: StepProbeMQTT, Verdict: verdict.Pass, Summary: "0 lost", DurationMS: 10500,
			Checks:  []verdict.Check{{ID: "mqtt.loss", Status: verdict.Pass, Summary: "loss 0 <= 0"}},
			Metrics: map[string]float64{MetricAckP95MS: 1.25, MetricLoss: 0}},
		{Name: StepProbeIoTDB, Verdict: verdict.Fail, Summary: "could not run", Error: "dial tcp 127.0.0.1:6667: connection refused", ExitCode: 3},
	}
	fails, warns := Findings(steps)
	return &Result{Host: "lg-01", Profile: "ready-small", Verdict: Fold(steps), Changed: true,
		Started: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), DurationMS: 10600, Failing: fails, Warnings: warns, Steps: steps}
}

func TestJUnit(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, sample()); err != nil {
		t.Fatal(err)
	}
	var got verdict.JUnitTestSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	// tune 1 + preflight 3 + mqtt 1 + iotdb (no checks: the step) 1;
	// failures: fd.hard and iotdb's could-not-run.
	if got.Tests != 6 || got.Failures != 2 || got.Skipped != 1 || len(got.Suites) != 4 {
		t.Errorf("tests/failures/skipped/suites = %d/%d/%d/%d, want 6/2/1/4\n%s", got.Tests, got.Failures, got.Skipped, len(got.Suites), b.String())
	}
	for _, s := range got.Suites {
		for _, c := range s.Cases {
			if c.Name == `clock "sync"` {
				if c.Failure != nil || c.Skipped != nil || !strings.HasPrefix(c.SystemOut, "WARNING") {
					t.Errorf("a warning must be a passing case with system-out: %+v", c)
				}
			}
			if c.Name == "fd.hard" && (c.Failure == nil || !strings.Contains(c.Failure.Text, "remedy: LimitNOFILE=1048576")) {
				t.Errorf("fd.hard failure lacks the fix: %+v", c.Failure)
			}
			if c.Name == "probe-iotdb" && (c.Failure == nil || c.Failure.Type != "could-not-run" || !strings.Contains(c.Failure.Message, "connection refused")) {
				t.Errorf("iotdb could-not-run is not an <error>: %+v", c)
			}
		}
	}
}

var (
	promSample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\})? (-?[0-9.e+-]+)$`)
	promMeta   = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) .+$`)
)

func TestProm(t *testing.T) {
	var b bytes.Buffer
	if err := WriteProm(&b, sample()); err != nil {
		t.Fatal(err)
	}
	typed := map[string]bool{}
	samples := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
		if m := promMeta.FindStringSubmatch(line); m != nil {
			if m[1] == "TYPE" {
				typed[m[2]] = true
			}
			continue
		}
		m := promSample.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("not exposition format: %q", line)
		}
		if !typed[m[1]] {
			t.Errorf("sample before its TYPE line: %q", line)
		}
		samples[m[1]+"{"+m[2]+"}"] = m[3]
	}
	for k, want := range map[string]string{
		`hostprep_ready{profile="ready-small"}`:                                  "0",
		`hostprep_ready_verdict{}`:                                               "2",
		`hostprep_ready_changed{}`:                                               "1",
		`hostprep_ready_step_status{step="preflight"}`:                           "2",
		`hostprep_ready_check_status{check="preflight/clock \"sync\""}`:          "1",
		`hostprep_ready_check_status{check="probe-iotdb/could-not-run"}`:         "2",
		`hostprep_ready_step_metric{metric="capacity_sockets",step="preflight"}`: "19936",
		`hostprep_ready_step_metric{metric="ack_p95_ms",step="probe-mqtt"}`:      "1.25",
		`hostprep_ready_last_run_timestamp_seconds{}`:                            "1.7959464e+09",
	} {
		if samples[k] != want {
			t.Errorf("%s = %q, want %s", k, samples[k], want)
		}
	}
}

// TestPromParsesWithPrometheus parses the file with Prometheus' own text
// parser, as node_exporter's textfile collector does.
func TestPromParsesWithPrometheus(t *testing.T) {
	var b bytes.Buffer
	if err := WriteProm(&b, sample()); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("does not parse: %v\n%s", err, b.String())
	}
	for name, n := range map[string]int{"hostprep_ready": 1, "hostprep_ready_check_status": 6, "hostprep_ready_step_status": 4, "hostprep_ready_step_metric": 4} {
		if f := fams[name]; f == nil || len(f.Metric) != n || f.GetType().String() != "GAUGE" {
			t.Errorf("%s: %v, want %d gauges", name, f, n)
		}
	}
}

func TestText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, sample()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "hostprep ready: NOT READY (failing: preflight, probe-iotdb)\n") {
		t.Errorf("first line:\n%s", out)
	}
	// Steps in the order they ran: tune, preflight, probe-mqtt, probe-iotdb.
	it, ip, im, ii := strings.Index(out, "PASS  tune"), strings.Index(out, "FAIL  preflight"), strings.Index(out, "PASS  probe-mqtt"), strings.Index(out, "FAIL  probe-iotdb")
	if it < 0 || ip < it || im < ip || ii < im {
		t.Errorf("steps not in run order:\n%s", out)
	}
	for _, want := range []string{"fail fd.hard: hard nofile 20000", "fix: LimitNOFILE=1048576", "error: dial tcp 127.0.0.1:6667"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

// TestTextAndPromDryRun: the text of a dry run says the tuning was only
// planned and how many steps were skipped, and never READY; the textfile
// says hostprep_ready 0.
func TestTextAndPromDryRun(t *testing.T) {
	steps := []Step{
		{Name: StepTune, Verdict: verdict.Skip, Summary: "dry run: would make 17 changes", Metrics: map[string]float64{MetricChanges: 17}},
		{Name: StepPreflight, Verdict: verdict.Skip, Summary: "not run: no preflight target"},
		{Name: StepProbeMQTT, Verdict: verdict.Skip, Summary: "not run: no MQTT probe"},
		{Name: StepProbeIoTDB, Verdict: verdict.Skip, Summary: "not run: no IoTDB target"},
	}
	r := &Result{Host: "h", Profile: "sys-tune", DryRun: true, Verdict: VerdictOf(steps, true), Skipped: SkippedSteps(steps), Steps: steps}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"hostprep ready: DRY RUN\n", "dry run: tuning planned, not applied (17 changes); 3 other steps skipped", "not a readiness verdict"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ready: READY") {
		t.Errorf("dry run text claims READY:\n%s", out)
	}
	b.Reset()
	if err := WriteProm(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nhostprep_ready{profile=\"sys-tune\"} 0\n") {
		t.Errorf("prom: want hostprep_ready 0 for a dry run:\n%s", b.String())
	}
}

// The text says "changed: yes|no" exactly when the JSON says "changed":
// true|false, and its counts read right for 1 ("1 change", "1 step
// skipped").
func TestTextChangedAndCounts(t *testing.T) {
	for _, changed := range []bool{true, false} {
		r := sample()
		r.Changed = changed
		var b bytes.Buffer
		if err := WriteText(&b, r); err != nil {
			t.Fatal(err)
		}
		js, _ := json.Marshal(r)
		var back struct{ Changed bool }
		if err := json.Unmarshal(js, &back); err != nil {
			t.Fatal(err)
		}
		want := map[bool]string{true: "changed: yes,", false: "changed: no,"}[back.Changed]
		if !strings.Contains(b.String(), want) {
			t.Errorf("JSON changed %v, text lacks %q:\n%s", back.Changed, want, b.String())
		}
	}
	steps := []Step{
		{Name: StepTune, Verdict: verdict.Pass, Metrics: map[string]float64{MetricChanges: 1}},
		{Name: StepPreflight, Verdict: verdict.Pass},
		{Name: StepProbeMQTT, Verdict: verdict.Pass},
		{Name: StepProbeIoTDB, Verdict: verdict.Skip, Summary: "not run: no IoTDB target"},
	}
	r := &Result{Host: "h", Profile: "p", DryRun: true, Verdict: VerdictOf(steps, true), Skipped: SkippedSteps(steps), Steps: steps}
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if want := "tuning planned, not applied (1 change); 1 other step skipped"; !strings.Contains(b.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, b.String())
	}
}

// A READY result still carries "failing", "warnings" and "skipped" as
// empty lists: the README's JSON shape, read by playbooks as
// (stdout | from_json).failing | length.
func TestReadyJSONAlwaysHasTheLists(t *testing.T) {
	steps := []Step{{Name: "preflight", Verdict: verdict.Pass, Checks: []verdict.Check{{ID: "fd.soft", Status: verdict.Pass}}}}
	r := Result{Verdict: Fold(steps), Steps: steps}
	r.Failing, r.Warnings = Findings(steps)
	r.Skipped = SkippedSteps(steps)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"failing", "warnings", "skipped"} {
		if l, ok := m[k].([]any); !ok || len(l) != 0 {
			t.Errorf("%q = %#v, want an empty list", k, m[k])
		}
	}
}

// A READY with no probe run says so: the verdict then rests on the
// tuning and the preflight alone.
func TestTextSaysWhenNoProbeRan(t *testing.T) {
	steps := []Step{
		{Name: StepTune, Verdict: verdict.Skip, Summary: "--no-tune"},
		{Name: StepPreflight, Verdict: verdict.Pass},
		{Name: StepProbeMQTT, Verdict: verdict.Skip, Summary: "not run: no MQTT probe"},
		{Name: StepProbeIoTDB, Verdict: verdict.Skip, Summary: "not run: no IoTDB target"},
	}
	for _, probe := range []verdict.Status{verdict.Skip, verdict.Pass} {
		steps[2].Verdict = probe
		r := &Result{Host: "h", Profile: "p", Verdict: VerdictOf(steps, false), Steps: steps}
		var b bytes.Buffer
		if err := WriteText(&b, r); err != nil {
			t.Fatal(err)
		}
		if said := strings.Contains(b.String(), "no probe ran"); said != (probe == verdict.Skip) || r.Verdict != Ready {
			t.Errorf("MQTT probe %s: verdict %s, says no probe ran: %v\n%s", probe, r.Verdict, said, b.String())
		}
	}
}
