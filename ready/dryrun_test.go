package ready

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/ready/outcome"
	"github.com/hostprep/hostprep/tune"
)

// TestDryRunTouchesNothing runs the real steps in dry-run mode on this
// host: tune only plans (no root needed, nothing written), preflight
// reads, the MQTT probe loads the in-process embedded broker on loopback,
// and the IoTDB probe is not run because it would write to the target.
// The host's values of every key ready-small tunes, and its owned files,
// are the same afterwards.
func TestDryRunTouchesNothing(t *testing.T) {
	keys := []string{"net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog", "net.ipv4.tcp_fin_timeout", "net.ipv4.ip_local_reserved_ports"}
	files := []string{"/etc/sysctl.d/60-hostprep.conf", "/etc/security/limits.d/60-hostprep.conf", "/var/lib/hostprep/state.json"}
	snap := func() string {
		var b strings.Builder
		for _, k := range keys {
			b.WriteString(k + "=" + testenv.HostSysctl(t, k) + "\n")
		}
		for _, f := range files {
			c, err := os.ReadFile(f)
			b.WriteString(f + "=" + string(c) + "|" + boolStr(err == nil) + "\n")
		}
		return b.String()
	}
	before := snap()
	res, _ := Run(context.Background(), Options{Profile: "ready-small", DryRun: true, Probes: at("iotdb", "127.0.0.1:6667")})
	if res == nil {
		t.Fatal("no result")
	}
	if after := snap(); after != before {
		t.Errorf("dry run changed the host:\nbefore %s\nafter %s", before, after)
	}
	if res.Verdict == outcome.Ready || res.Verdict == outcome.ReadyWithWarnings {
		t.Errorf("a dry run said %s", res.Verdict)
	}
	if !res.DryRun || res.Changed {
		t.Errorf("dry_run %v changed %v", res.DryRun, res.Changed)
	}
	tuneStep := res.Step(outcome.StepTune)
	if tuneStep.Verdict == verdict.Fail || !strings.HasPrefix(tuneStep.Summary, "dry run") {
		t.Errorf("tune step: %+v", tuneStep)
	}
	// The step's result is the plan as `tune plan -o json` reports it.
	if plan, ok := tuneStep.Result.(tune.PlanReport); !ok || plan.Changed || plan.WouldChange != len(plan.Changes) || tuneStep.Changed {
		t.Errorf("dry-run tune result: %T %+v, want a tune.PlanReport with changed false", tuneStep.Result, tuneStep.Result)
	}
	if s := res.Step(outcome.StepPreflight); s.Verdict == verdict.Skip || s.Metrics[outcome.MetricCapacitySockets] <= 0 {
		t.Errorf("preflight did not run: %+v", s)
	}
	m := res.Step(outcome.StepProbeMQTT)
	if m.Verdict == verdict.Skip || m.Error != "" || !strings.Contains(m.Summary, "embedded") || m.Metrics[outcome.MetricClients] != 200 {
		t.Errorf("embedded MQTT probe did not run with ready-small's 200 clients: %+v", m.Summary)
	}
	if m.Metrics[outcome.MetricLoss] != 0 {
		t.Errorf("embedded broker lost messages: %v", m.Metrics)
	}
	if s := res.Step(outcome.StepProbeIoTDB); s.Verdict != verdict.Skip {
		t.Errorf("dry run loaded IoTDB: %+v", s)
	}
}

func boolStr(b bool) string {
	if b {
		return "present"
	}
	return "absent"
}

// TestDryRunTuneIsSkippedNotPassed: a dry run's planned changes are not
// changes made. The tune step of a dry run that plans changes is SKIP,
// each planned change is a skipped JUnit case, and the text still says
// the tuning was planned; once the image matches, the step passes.
func TestDryRunTuneIsSkippedNotPassed(t *testing.T) {
	img := t.TempDir()
	env := tune.Env{Root: img, Image: true, SkipPrivilegeCheck: true}
	p, err := profiles.Load("ready-small", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := tuneStep(context.Background(), p, Options{Profile: "ready-small", DryRun: true, Tune: env})
	planned := int(s.Metrics[outcome.MetricChanges])
	if s.Verdict != verdict.Skip || planned == 0 {
		t.Fatalf("dry-run tune step on an empty image: verdict %s, %d changes planned; want skip with changes", s.Verdict, planned)
	}
	s.Name = outcome.StepTune
	r := &outcome.Result{Host: "h", Profile: p.Name, DryRun: true, Steps: []outcome.Step{s}}
	su := outcome.JUnit(r).Suites[0]
	if su.Skipped != planned || su.Failures != 0 {
		t.Errorf("JUnit tune suite: %d skipped, %d failures; want %d skipped (one per planned change)", su.Skipped, su.Failures, planned)
	}
	var b strings.Builder
	if err := outcome.WriteText(&b, r); err != nil || !strings.Contains(b.String(), "tuning planned, not applied") {
		t.Errorf("text: %v\n%s", err, b.String())
	}

	if _, err := tune.Apply(context.Background(), p, tune.Options{Env: env}); err != nil {
		t.Fatal(err)
	}
	if s := tuneStep(context.Background(), p, Options{Profile: "ready-small", DryRun: true, Tune: env}); s.Verdict != "" && s.Verdict != verdict.Pass {
		t.Errorf("dry run on an image that matches: verdict %s (%s), want pass", s.Verdict, s.Summary)
	}
}
