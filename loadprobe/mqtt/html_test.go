package mqtt

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/verdict"
)

func htmlSample(qos int) *Result {
	res := &Result{RunID: "r1", Broker: "tcp://broker:1883", Config: Config{Clients: 10, ConnRate: 10, QoS: qos, Size: 64, PubInterval: time.Second, MQTTVersion: "3.1.1", Subscribers: 1},
		StartedAt: time.Unix(0, 0), RampSeconds: 1, WindowSeconds: 3, Verdict: verdict.Pass,
		Checks: []verdict.Check{{ID: "mqtt.loss", Status: verdict.Pass, Summary: "messages lost 0%"}}}
	for t := 1; t <= 5; t++ {
		res.Series = append(res.Series, Second{T: t, Connected: 10, Published: 10, Acked: 10, Received: 10, AckP95: float64(t), E2EP95: 2 * float64(t)})
	}
	res.Series[2].E2EP95, res.Series[2].AckP95 = 0, 0 // a second in which nothing completed
	res.Throughput.RequestedPerSec = 10
	return res
}

// TestWriteHTML: the page holds the four charts with one point per second
// and series, a heat map cell per second and row (a second without a
// sample shown as such), the window markers, and fetches nothing.
func TestWriteHTML(t *testing.T) {
	for _, qos := range []int{0, 1} {
		res := htmlSample(qos)
		var b bytes.Buffer
		if err := res.WriteHTML(&b); err != nil {
			t.Fatal(err)
		}
		page := b.String()
		if regexp.MustCompile(`(?i)https?://|<script|<link|<img|url\(`).MatchString(page) {
			t.Errorf("qos %d: the page fetches something", qos)
		}
		if n := strings.Count(page, `<figure class="chart">`); n != 4 {
			t.Errorf("qos %d: %d charts, want 4", qos, n)
		}
		// Points: connections 1 series, messages 2 (+ acked at QoS>0),
		// latency 1 (+ ack at QoS>0), 5 seconds each.
		want := 5 * (1 + 2 + 1 + 2*min(qos, 1))
		if n := strings.Count(page, "<circle"); n != want {
			t.Errorf("qos %d: %d points, want %d", qos, n, want)
		}
		for _, s := range []string{"steady window starts (1.0 s", "window ends (4.0 s)", "Verdict: PASS", "no sample", "Delivery accounting"} {
			if !strings.Contains(page, s) {
				t.Errorf("qos %d: page lacks %q", qos, s)
			}
		}
		if strings.Contains(page, "INCOMPLETE") {
			t.Errorf("qos %d: a complete run says INCOMPLETE", qos)
		}
	}
}

func TestWriteHTMLIncomplete(t *testing.T) {
	res := htmlSample(1)
	res.Interrupted, res.StoppedEarlyReason, res.Verdict = true, "interrupted after 2.0 s: partial results", verdict.Fail
	s, err := res.HTMLSection()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(s), "INCOMPLETE: interrupted after 2.0 s: partial results") || strings.Contains(string(s), "Verdict:") {
		t.Errorf("section does not say INCOMPLETE and why: %.500s", s)
	}
	// No series at all (stopped in the first second): notes, not empty frames.
	res.Series = nil
	var b bytes.Buffer
	if err := res.WriteHTML(&b); err != nil || !strings.Contains(b.String(), "no data was measured") {
		t.Errorf("empty series: %v", err)
	}
}

// A shard's page shows its own part of the fleet's load: its clients and
// connect rate, and the connections chart's target line at its clients
// (it showed the fleet's 300 clients at 300/s for a shard of 150).
func TestShardHTMLShowsItsOwnLoad(t *testing.T) {
	res := htmlSample(1)
	res.Config.Clients, res.Config.ConnRate = 300, 300
	res.Config.Shard.K, res.Config.Shard.N = 1, 2
	var b bytes.Buffer
	if err := res.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"Shard 1/2: 150 clients of the fleet's 300 connecting at 150 connections/s (the fleet's 300/s)", "target (150 clients)"} {
		if !strings.Contains(page, want) {
			i := strings.Index(page, "Shard")
			t.Errorf("page lacks %q: %s", want, page[max(i, 0):min(len(page), max(i, 0)+200)])
		}
	}
	if strings.Contains(page, "target (300 clients)") {
		t.Error("the shard's chart shows the fleet's target")
	}
}
