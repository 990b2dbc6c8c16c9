package mqtt

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/latency"
)

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
		c := testenv.CheckByID(t, judge(&cfg, res), "mqtt.schedule")
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
	if c := testenv.CheckByID(t, cs, "mqtt.complete"); c.Status != verdict.Fail || c.Observed != "interrupted" || !strings.Contains(c.Summary, "interrupted after 6.0 s") {
		t.Errorf("mqtt.complete %+v", c)
	}
}

// A run interrupted before anything was published has nothing to judge
// but its completeness: mqtt.complete fails it, and the loss, unacked,
// connect and latency checks skip with the reason instead of failing
// on rates nobody measured.
func TestInterruptedNothingMeasuredSkips(t *testing.T) {
	cfg := Defaults()
	res := &Result{Interrupted: true, StoppedEarlyReason: "interrupted after 0.1 s: partial results",
		Connects: Connects{Target: 100}}
	cs := judge(&cfg, res)
	if v := verdict.Worst(cs); v != verdict.Fail {
		t.Errorf("verdict %s, want fail", v)
	}
	if c := testenv.CheckByID(t, cs, "mqtt.complete"); c.Status != verdict.Fail || c.Observed != "interrupted" {
		t.Errorf("mqtt.complete %+v", c)
	}
	for _, id := range []string{"mqtt.loss", "mqtt.unacked", "mqtt.connect_fail_rate", "mqtt.connect_p95", "mqtt.ack_p95", "mqtt.e2e_p99", "mqtt.schedule"} {
		if c := testenv.CheckByID(t, cs, id); c.Status != verdict.Skip || !strings.Contains(c.Summary, "interrupted") {
			t.Errorf("%s: %s %q, want skip saying the run was interrupted", id, c.Status, c.Summary)
		}
	}
	// A run that went its full window yet measured nothing still fails.
	full := &Result{Connects: Connects{Target: 100, OK: 100}}
	for _, id := range []string{"mqtt.loss", "mqtt.ack_p95", "mqtt.e2e_p99"} {
		if c := testenv.CheckByID(t, judge(&cfg, full), id); c.Status != verdict.Fail {
			t.Errorf("complete run, nothing measured: %s %s, want fail", id, c.Status)
		}
	}
}

// The connect accounting of an interrupted run: connects the interrupt
// cut short are Canceled and clients never attempted NotStarted, neither
// failed; the fail rate is over the connects that got an outcome. A run
// that was not interrupted keeps a canceled connect as failed.
func TestConnectsOfInterruptedRun(t *testing.T) {
	r := &run{n: 100}
	r.connectOK, r.connectFailed = 30, map[string]int64{"refused": 10, "canceled": 5}
	r.wasInterrupted.Store(true)
	cn, _ := r.connects()
	if cn.OK != 30 || cn.Failed != 10 || cn.Canceled != 5 || cn.NotStarted != 55 || cn.FailRate != 0.25 || cn.FailedBy["canceled"] != 0 || cn.FailedBy["not_attempted"] != 0 {
		t.Errorf("interrupted: %+v, want 30 ok, 10 failed (rate 25%%), 5 canceled, 55 not started", cn)
	}
	r = &run{n: 45}
	r.connectOK, r.connectFailed = 30, map[string]int64{"refused": 10, "canceled": 5}
	cn, _ = r.connects()
	if cn.Failed != 15 || cn.Canceled != 0 || cn.NotStarted != 0 || cn.FailRate != 15.0/45 {
		t.Errorf("not interrupted: %+v, want 15 failed of 45, none canceled or not started", cn)
	}
}

// Merging shards of an older hostprep, which counted clients never
// started as failed ("not_attempted"), moves them to NotStarted.
func TestMergeOldNotAttempted(t *testing.T) {
	var m Result
	old := &Result{Connects: Connects{Target: 10, OK: 4, Failed: 6, FailedBy: map[string]int64{"not_attempted": 6}}}
	if err := m.add(old, &[5]*latency.Recorder{latency.New(), latency.New(), latency.New(), latency.New(), latency.New()}); err != nil {
		t.Fatal(err)
	}
	m.Connects.setFailRate()
	if c := m.Connects; c.Failed != 0 || c.NotStarted != 6 || c.FailRate != 0 || len(c.FailedBy) != 0 {
		t.Errorf("merged %+v, want 6 not started and none failed", c)
	}
}

// mqtt.delivery: QoS 2 promises exactly once, so a duplicate fails there
// and passes at QoS 1 (at least once); a message out of its publisher's
// order fails at QoS 2 and warns below. Both counts were measured but
// judged by no check, so a broker duplicating QoS 2 messages passed.
func TestDeliveryCheck(t *testing.T) {
	for _, tc := range []struct {
		qos       int
		dup, ooo  int64
		status    verdict.Status
		mentioned string
	}{
		{2, 0, 0, verdict.Pass, "0 duplicated"},
		{2, 21, 0, verdict.Fail, "exactly once"},
		{1, 21, 0, verdict.Pass, "21 duplicated"},
		{2, 0, 5, verdict.Fail, "out of the order"},
		{1, 0, 5, verdict.Warn, "out of the order"},
		{0, 0, 5, verdict.Warn, "out of the order"},
	} {
		cfg := Defaults()
		cfg.QoS = tc.qos
		res := &Result{Messages: Messages{Scheduled: 100, Published: 100, Acked: 100, Expected: 100, Received: 100, Duplicated: tc.dup, OutOfOrder: tc.ooo}}
		c := testenv.CheckByID(t, judge(&cfg, res), "mqtt.delivery")
		if c.Status != tc.status || !strings.Contains(c.Summary, tc.mentioned) {
			t.Errorf("QoS %d, %d duplicated, %d out of order: %s %q; want %s mentioning %q", tc.qos, tc.dup, tc.ooo, c.Status, c.Summary, tc.status, tc.mentioned)
		}
	}
}

// A second in which the broker acked or delivered nothing (stopped with
// SIGSTOP) has no latency: the CSV leaves its p95 empty and the JSON has
// null, never 0.000 ms (an instant answer); a decoded null is 0.
func TestSecondWithoutSampleHasNoLatency(t *testing.T) {
	res := &Result{Series: []Second{{T: 4, Published: 50, Acked: 50, Received: 50, AckP95: 1.5, E2EP95: 2.5}, {T: 5, Published: 50}}}
	var csvOut strings.Builder
	if err := res.WriteCSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(csvOut.String()), "\n"); len(lines) != 3 || lines[1] != "4,0,50,50,50,1.500,2.500,0,false,1.000" || lines[2] != "5,0,50,0,0,,,0,false,1.000" {
		t.Errorf("csv:\n%s", csvOut.String())
	}
	b, err := json.Marshal(res.Series)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"ack_p95_ms":1.5`) || !strings.Contains(string(b), `"t_s":5,"duration_s":0,"connected":0,"published":50,"acked":0,"received":0,"lost":0,"ack_p95_ms":null,"e2e_p95_ms":null`) {
		t.Errorf("json: %s", b)
	}
	var back []Second
	if err := json.Unmarshal(b, &back); err != nil || back[1].AckP95 != 0 || back[0].E2EP95 != 2.5 {
		t.Errorf("decoded %+v, %v", back, err)
	}
}
