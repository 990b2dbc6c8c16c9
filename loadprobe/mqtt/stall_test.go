package mqtt

import (
	"encoding/csv"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// stallBroker stops m (SIGSTOP) after stop and resumes it (SIGCONT)
// after resume; the cleanup resumes it before it is killed.
func stallBroker(t *testing.T, m *ownMosquitto, stop, resume time.Duration) {
	t.Helper()
	sig := func(s syscall.Signal) func() { return func() { _ = m.cmd.Process.Signal(s) } }
	a, b := time.AfterFunc(stop, sig(syscall.SIGSTOP)), time.AfterFunc(resume, sig(syscall.SIGCONT))
	t.Cleanup(func() { a.Stop(); b.Stop(); sig(syscall.SIGCONT)() })
}

// A broker stopped mid-window and resumed during the drain delivers its
// backlog in the run's last, partial second. The series dropped that
// second (the sampler returned without it) and the received rate counted
// messages by their scheduled time, so the CSV, the charts and the
// headline showed a healthy broker at the requested rate. Field case:
// 67% of the messages arrived in the last 0.65 s; the CSV summed to 216
// of 649 received, the heat map spanned 1.11-1.19 ms, the headline said
// 100.0 msg/s received.
func TestSeriesShowsStallAndBurst(t *testing.T) {
	noLeak(t)
	m := startMosquitto(t, "allow_anonymous true")
	cfg := small(m.url, 20)
	cfg.PubInterval, cfg.Duration, cfg.Grace = 100*time.Millisecond, 3*time.Second, 6*time.Second
	stallBroker(t, m, 1500*time.Millisecond, 5*time.Second)
	res, err := runProbe(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var got int64
	var worst float64
	for _, s := range res.Series {
		got += s.Received
		worst = max(worst, s.E2EP95)
	}
	if m := res.Messages; got < m.Received || m.Received == 0 {
		t.Errorf("series received %d in all, the run %d: the drain's deliveries are missing", got, m.Received)
	}
	last := res.Series[len(res.Series)-1]
	if last.Seconds <= 0 || last.Seconds >= 1 || last.Received == 0 {
		t.Errorf("last row %+v: want the run's last, partial second with the backlog in it", last)
	}
	if worst < 2000 {
		t.Errorf("highest per-second e2e p95 %.1f ms: the ~3 s stall does not show", worst)
	}
	th := res.Throughput
	if th.ReceivedPerSec > 0.8*th.RequestedPerSec || th.ReceiveSeconds < res.WindowSeconds+1 {
		t.Errorf("received %.1f msg/s over %.1f s (window %.1f s): want by arrival, well under the requested %.1f", th.ReceivedPerSec, th.ReceiveSeconds, res.WindowSeconds, th.RequestedPerSec)
	}
	var b strings.Builder
	if err := res.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(strings.NewReader(b.String())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var fromCSV float64
	for _, row := range rows[1:] {
		rate, _ := strconv.ParseFloat(row[4], 64)
		dur, _ := strconv.ParseFloat(row[9], 64)
		fromCSV += rate * dur
	}
	if fromCSV < float64(res.Messages.Received)-1 {
		t.Errorf("CSV received_per_s × duration_s sums to %.1f, the run received %d:\n%s", fromCSV, res.Messages.Received, b.String())
	}
	if !strings.Contains(res.ArrivalNote(), "to arrive") {
		t.Errorf("headline does not say the window's messages arrived late: %q", res.ArrivalNote())
	}
}

// An interrupt during a broker stall: every publish still waiting for its
// ack or delivery is in the percentiles, censored at the time it had
// waited. They were left out (in flight, not censored), so the checks
// judged the survivors: field case PASS mqtt.e2e_p99 1.448 ms and PASS
// mqtt.ack_p95 1.141 ms with 38% of the messages stuck for >= 1 s.
func TestInterruptedStallInPercentiles(t *testing.T) {
	noLeak(t)
	m := startMosquitto(t, "allow_anonymous true")
	cfg := small(m.url, 50)
	cfg.PubInterval, cfg.Duration = 100*time.Millisecond, time.Minute
	cfg.Thresholds.AckP95, cfg.Thresholds.E2EP99 = 100*time.Millisecond, 250*time.Millisecond
	stallBroker(t, m, 1500*time.Millisecond, time.Hour)
	res := runInterrupted(t, cfg, 3*time.Second)
	var txt strings.Builder
	_ = res.WriteText(&txt)
	t.Log("\n" + txt.String())
	ms := res.Messages
	if ms.AckInFlight < 100 || ms.InFlight < 100 {
		t.Fatalf("ack in flight %d, in flight %d: the stall did not hold ~1.5 s of publishes", ms.AckInFlight, ms.InFlight)
	}
	l := res.Latency
	if l.Ack.Censored != ms.AckInFlight || l.Ack.P95 < 500 || l.E2E.P99 < 500 {
		t.Errorf("ack p95 %.1f ms (%d censored), e2e p99 %.1f ms: want the %d publishes stuck in the stall in them, at their wait", l.Ack.P95, l.Ack.Censored, l.E2E.P99, ms.AckInFlight)
	}
	if l.Ack.Max >= float64(cfg.Grace.Milliseconds()) {
		t.Errorf("ack max %.1f ms: the stuck publishes are censored at their wait (< 2 s), not at the %v grace", l.Ack.Max, cfg.Grace)
	}
	for _, id := range []string{"mqtt.ack_p95", "mqtt.e2e_p99"} {
		if c := testenv.CheckByID(t, res.Checks, id); c.Status != verdict.Fail || !strings.Contains(c.Observed, "at the time they had waited") {
			t.Errorf("%s %s %q (%s): want fail on the stalled publishes", id, c.Status, c.Summary, c.Observed)
		}
	}
}

// Connects that failed are in the connect percentiles, censored at the
// time they waited. Only the successful ones were recorded, so a broker
// stopped for 3 s during the ramp passed mqtt.connect_p95: field case
// PASS, connect p95 846 ms, censored 0, with 20 of 50 connects timed out
// after >= 1000 ms.
func TestFailedConnectsInConnectPercentiles(t *testing.T) {
	noLeak(t)
	m := startMosquitto(t, "allow_anonymous true")
	cfg := small(m.url, 50)
	cfg.ConnRate, cfg.Duration, cfg.Grace, cfg.ConnectTimeout = 10, 3*time.Second, 2*time.Second, time.Second
	half := 0.5
	cfg.Thresholds.ConnectFailRate, cfg.Thresholds.ConnectP95 = &half, 990*time.Millisecond
	stallBroker(t, m, 2*time.Second, 5*time.Second)
	res, err := runProbe(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cn, l := res.Connects, res.Latency.Connect
	// A stopped broker's kernel still accepts TCP: no CONNACK, not a
	// TCP timeout.
	if cn.Failed < 10 || cn.FailedBy["no_connack"] == 0 {
		t.Fatalf("connects %+v: want the 3 s stall to leave at least 10 connects without CONNACK", cn)
	}
	if l.Censored != cn.Failed || l.Count != cn.OK+cn.Failed {
		t.Errorf("connect latency count %d, censored %d: want every attempt (%d ok, %d failed), the failed censored", l.Count, l.Censored, cn.OK, cn.Failed)
	}
	if l.P95 < 1000 {
		t.Errorf("connect p95 %.1f ms: want the timed-out connects (>= 1000 ms) in it", l.P95)
	}
	c := testenv.CheckByID(t, res.Checks, "mqtt.connect_p95")
	if c.Status != verdict.Fail || !strings.Contains(c.Observed, "censored at the time they waited") {
		t.Errorf("mqtt.connect_p95 %s %q (%s): want fail, naming the censored failed connects", c.Status, c.Summary, c.Observed)
	}
	var txt strings.Builder
	_ = res.WriteText(&txt)
	if !strings.Contains(txt.String(), "censored: "+itoa(cn.Failed)+" connects that failed") {
		t.Errorf("text report does not say how many connects were censored:\n%s", txt.String())
	}
}

// A run interrupted during its drain reports the drain as it ran, up to
// the interrupt: drain_s was 0 while the CSV had rows after the window.
// Here the broker stalls before the window ends, so the drain waits for
// its acks and deliveries until the interrupt ~1.3 s into it.
func TestInterruptedDrainSeconds(t *testing.T) {
	noLeak(t)
	m := startMosquitto(t, "allow_anonymous true")
	cfg := small(m.url, 20)
	cfg.Grace = 5 * time.Second
	stallBroker(t, m, 800*time.Millisecond, time.Hour)
	res := runInterrupted(t, cfg, 2500*time.Millisecond)
	if res.WindowSeconds < 0.99*cfg.Duration.Seconds() {
		t.Fatalf("window %.3f s: the interrupt came before the drain", res.WindowSeconds)
	}
	var series float64
	for _, s := range res.Series {
		series += s.length()
	}
	ran := res.RampSeconds + res.WindowSeconds + res.DrainSeconds
	if res.DrainSeconds < 0.8 || res.DrainSeconds >= cfg.Grace.Seconds() || series-ran > 0.3 || ran-series > 0.3 {
		t.Errorf("drain_s %.3f (ramp %.3f + window %.3f + drain = %.3f s), the series spans %.3f s: want the drain as it ran up to the interrupt",
			res.DrainSeconds, res.RampSeconds, res.WindowSeconds, ran, series)
	}
}
