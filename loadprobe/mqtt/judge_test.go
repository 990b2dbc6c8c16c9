package mqtt

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
)

func checkByID(t *testing.T, cs []verdict.Check, id string) verdict.Check {
	t.Helper()
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s in %+v", id, cs)
	return verdict.Check{}
}

// mqtt.schedule states its 1% allowance: expected and observed say how
// many publishes were late out of how many, and a pass within the
// allowance does not pretend nothing was late.
func TestScheduleCheckStatesAllowance(t *testing.T) {
	cfg := Defaults()
	for _, tc := range []struct {
		overruns, scheduled int64
		status              verdict.Status
		observed            string
	}{
		{0, 30000, verdict.Pass, "0 of 30000 (0.00%)"},
		{200, 30000, verdict.Pass, "200 of 30000 (0.67%)"},
		{349, 30000, verdict.Warn, "349 of 30000 (1.16%)"},
	} {
		res := &Result{Messages: Messages{Scheduled: tc.scheduled, Published: tc.scheduled, Overruns: tc.overruns}}
		c := checkByID(t, judge(&cfg, res), "mqtt.schedule")
		if c.Status != tc.status || c.Observed != tc.observed || c.Expected != "<= 1% of publishes more than 10ms late" {
			t.Errorf("%d of %d late: got status %s observed %q expected %q", tc.overruns, tc.scheduled, c.Status, c.Observed, c.Expected)
		}
		if !strings.Contains(c.Summary, tc.observed) || !strings.Contains(c.Summary, "1% allowance") {
			t.Errorf("summary %q: want the count and the 1%% allowance", c.Summary)
		}
	}
}

// An interrupted run never passes, however good its partial counts.
func TestInterruptedNeverPasses(t *testing.T) {
	cfg := Defaults()
	m := Messages{Scheduled: 100, Published: 100, Acked: 100, Expected: 100, Received: 100}
	healthy := &Result{Messages: m, Connects: Connects{Target: 100, OK: 100}}
	healthy.Latency.Connect.Count, healthy.Latency.Ack.Count, healthy.Latency.E2E.Count = 100, 100, 100
	if v := verdict.Worst(judge(&cfg, healthy)); v != verdict.Pass {
		t.Fatalf("healthy counts: verdict %s, want pass", v)
	}
	cut := *healthy
	cut.Interrupted, cut.StoppedEarlyReason = true, "interrupted after 6.0 s: partial results"
	cs := judge(&cfg, &cut)
	if v := verdict.Worst(cs); v != verdict.Fail {
		t.Errorf("interrupted: verdict %s, want fail", v)
	}
	if c := checkByID(t, cs, "mqtt.complete"); c.Status != verdict.Fail || c.Observed != "interrupted" || !strings.Contains(c.Summary, "interrupted after 6.0 s") {
		t.Errorf("mqtt.complete %+v", c)
	}
}
