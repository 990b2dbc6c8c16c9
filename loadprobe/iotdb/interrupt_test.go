package iotdb

import (
	"bytes"
	"context"
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
)

// A run cancelled in its last (here: only) step must not read as a pass:
// exit-3 error, Interrupted, the step marked partial, verdict fail.
func TestInterruptInLastStepIsNotAPass(t *testing.T) {
	cfg := realConfig(t, ScenarioWrite)
	cfg.Steps, cfg.StepDuration = []int{1}, 20*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(2500*time.Millisecond, cancel)
	t0 := time.Now()
	res, err := Run(ctx, cfg)
	if took := time.Since(t0); took > 12*time.Second {
		t.Errorf("Run took %v after cancel at 2.5s", took)
	}
	if exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("Run: %v (code %d), want exit 3 'interrupted'", err, exitcode.Code(err))
	}
	if res == nil {
		t.Fatal("no partial result")
	}
	if !res.Interrupted || res.Verdict == verdict.Pass || len(res.Steps) != 1 || !res.Steps[0].Partial {
		t.Fatalf("interrupted=%v verdict=%s steps=%+v, want interrupted, not pass, one partial step", res.Interrupted, res.Verdict, res.Steps)
	}
	var csvOut bytes.Buffer
	if err := res.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if rows, err := csv.NewReader(&csvOut).ReadAll(); err != nil || len(rows) != 2 || rows[0][len(rows[0])-1] != "partial" || rows[1][len(rows[1])-1] != "true" {
		t.Errorf("CSV of the cut-short step: %v %q, want its partial column true", err, rows)
	}
	var txt bytes.Buffer
	if err := res.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	out := txt.String()
	if !strings.Contains(res.Knee.Reading, "no step ran to the end") {
		t.Errorf("knee reading %q, want it to say no step ran to the end", res.Knee.Reading)
	}
	for _, want := range []string{"interrupted", "partial", CheckComplete} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "verdict: PASS") {
		t.Errorf("text report of an interrupted run says PASS:\n%s", out)
	}
}
