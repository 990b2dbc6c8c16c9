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
