package outcome

import (
	"reflect"
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
)

func TestFold(t *testing.T) {
	for _, tc := range []struct {
		in   []verdict.Status
		want Verdict
	}{
		{nil, Ready},
		{[]verdict.Status{verdict.Pass, verdict.Skip}, Ready},
		{[]verdict.Status{verdict.Pass, verdict.Warn, verdict.Skip}, ReadyWithWarnings},
		{[]verdict.Status{verdict.Warn, verdict.Fail, verdict.Pass}, NotReady},
		{[]verdict.Status{verdict.Skip, verdict.Skip}, Ready},
	} {
		var steps []Step
		for _, s := range tc.in {
			steps = append(steps, Step{Name: "x", Verdict: s})
		}
		if got := Fold(steps); got != tc.want {
			t.Errorf("Fold(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestFindingsFailuresApartFromWarnings(t *testing.T) {
	steps := []Step{
		{Name: "tune", Verdict: verdict.Pass},
		{Name: "preflight", Verdict: verdict.Fail, Checks: []verdict.Check{
			{ID: "clock", Status: verdict.Warn, Summary: "clock not synchronised"},
			{ID: "fd.hard", Status: verdict.Fail, Summary: "hard nofile 20000 < 1000000"},
		}},
		{Name: "probe-iotdb", Verdict: verdict.Fail, Error: "connect 127.0.0.1:6667: refused"},
	}
	wantFails := []string{
		"preflight: fd.hard: hard nofile 20000 < 1000000",
		"probe-iotdb: connect 127.0.0.1:6667: refused",
	}
	wantWarns := []string{"preflight: clock: clock not synchronised"}
	fails, warns := Findings(steps)
	if !reflect.DeepEqual(fails, wantFails) || !reflect.DeepEqual(warns, wantWarns) {
		t.Errorf("Findings = %q, %q; want failures %q and warnings %q apart", fails, warns, wantFails, wantWarns)
	}
}

// TestVerdictOfDryRun: a dry run never says READY; a failure found by a
// step that ran is still NOT READY.
func TestVerdictOfDryRun(t *testing.T) {
	pass := []Step{{Name: StepTune, Verdict: verdict.Pass}, {Name: StepPreflight, Verdict: verdict.Skip}}
	warn := []Step{{Name: StepTune, Verdict: verdict.Warn}}
	fail := []Step{{Name: StepTune, Verdict: verdict.Pass}, {Name: StepPreflight, Verdict: verdict.Fail}}
	for _, tc := range []struct {
		steps []Step
		dry   bool
		want  Verdict
	}{
		{pass, false, Ready}, {warn, false, ReadyWithWarnings}, {fail, false, NotReady},
		{pass, true, DryRun}, {warn, true, DryRun}, {fail, true, NotReady},
	} {
		if got := VerdictOf(tc.steps, tc.dry); got != tc.want {
			t.Errorf("VerdictOf(%v, dry=%v) = %s, want %s", tc.steps, tc.dry, got, tc.want)
		}
	}
	if got := SkippedSteps(pass); len(got) != 1 || got[0] != "preflight: " {
		t.Errorf("SkippedSteps = %q", got)
	}
}
