package iotdb

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/loadprobe/latency"
)

// Every format lists the same parts of a step's censored latencies:
// failures without an answer, operations never started, operations cut;
// the HTML cell leaves none of them out where the text names it.
func TestCensoredPartsAlikeInEveryFormat(t *testing.T) {
	st := Step{Workers: 2, Ops: 1000, OK: 996, Errors: 4, ErrorsByClass: map[string]int64{ClassDeadline: 4},
		Missed: 393, Cut: 4, Partial: true, Latency: latency.Summary{Count: 1401, Censored: 401}}
	st.Unanswered = unanswered(&st)
	r := &Result{Target: "127.0.0.1:6667", Scenario: ScenarioWrite, Mode: "open", RatePerWorker: 100, Steps: []Step{st}}
	var txt, page bytes.Buffer
	if err := r.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"4 operations failed without an answer", "393 operations never started", "4 operations in flight when the step was cut"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if want := "401 (4 no answer, 393 never started, 4 cut)"; !strings.Contains(page.String(), want) {
		t.Errorf("HTML lacks %q", want)
	}
	for col, want := range map[string]string{"unanswered": "4", "missed": "393", "cut": "4", "censored": "401"} {
		if got := csvColumn(t, r, col); got != want {
			t.Errorf("CSV %s = %q, want %s", col, got, want)
		}
	}
}
