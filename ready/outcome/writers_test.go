package outcome

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/verdict"
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
	return &Result{Host: "lg-01", Profile: "ready-small", Verdict: Fold(steps), Changed: true,
		Started: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), DurationMS: 10600, Failing: Findings(steps), Steps: steps}
}

func TestJUnit(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, sample()); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	// tune 1 + preflight 3 + mqtt 1 + iotdb (no checks: the step) 1
	if got.Tests != 6 || got.Failures != 1 || got.Errors != 1 || got.Skipped != 1 {
		t.Errorf("tests/failures/errors/skipped = %d/%d/%d/%d, want 6/1/1/1\n%s", got.Tests, got.Failures, got.Errors, got.Skipped, b.String())
	}
	for _, s := range got.Suites {
		for _, c := range s.Cases {
			if c.Name == `preflight/clock "sync"` {
				if c.Failure != nil || c.Skipped != nil || !strings.HasPrefix(c.SystemOut, "WARNING") {
					t.Errorf("a warning must be a passing case with system-out: %+v", c)
				}
			}
			if c.Name == "preflight/fd.hard" && (c.Failure == nil || !strings.Contains(c.Failure.Text, "fix: LimitNOFILE=1048576")) {
				t.Errorf("fd.hard failure lacks the fix: %+v", c.Failure)
			}
			if c.Name == "probe-iotdb" && (c.Error == nil || !strings.Contains(c.Error.Message, "connection refused")) {
				t.Errorf("iotdb could-not-run is not an <error>: %+v", c)
			}
		}
	}
}

var (
	promSample = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\[\\"n])*",?)*)\} (-?[0-9.e+-]+)$`)
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
		`hostprep_ready{profile="ready-small"}`:                                                        "0",
		`hostprep_ready_changed{profile="ready-small"}`:                                                "1",
		`hostprep_ready_step_status{profile="ready-small",step="preflight"}`:                           "2",
		`hostprep_ready_check_status{profile="ready-small",step="preflight",check="clock \"sync\""}`:   "1",
		`hostprep_ready_step_metric{profile="ready-small",step="preflight",metric="capacity_sockets"}`: "19936",
		`hostprep_ready_step_metric{profile="ready-small",step="probe-mqtt",metric="ack_p95_ms"}`:      "1.25",
		`hostprep_ready_last_run_timestamp_seconds{profile="ready-small"}`:                             "1795946400",
	} {
		if samples[k] != want {
			t.Errorf("%s = %q, want %s", k, samples[k], want)
		}
	}
}

func TestText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, sample()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if !strings.HasPrefix(out, "hostprep ready: NOT READY\n") {
		t.Errorf("first line:\n%s", out)
	}
	// failing steps first, in run order: preflight, probe-iotdb, then tune.
	ip, ii, it := strings.Index(out, "FAIL  preflight"), strings.Index(out, "FAIL  probe-iotdb"), strings.Index(out, "PASS  tune")
	if ip < 0 || ii < ip || it < ii {
		t.Errorf("order wrong:\n%s", out)
	}
	for _, want := range []string{"fail fd.hard: hard nofile 20000", "fix: LimitNOFILE=1048576", "error: dial tcp 127.0.0.1:6667"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "hostprep.prom")
	if err := WriteFileAtomic(p, func(w io.Writer) error { return WriteProm(w, sample()) }); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || !bytes.HasPrefix(b, []byte("# HELP hostprep_ready ")) {
		t.Fatalf("%v %q", err, b)
	}
	ents, _ := os.ReadDir(filepath.Dir(p))
	if len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}
