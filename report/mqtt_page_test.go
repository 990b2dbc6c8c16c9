package report

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
)

// mqttPageRun is a QoS 1 run as a newcomer's screenshot showed it: every
// message published, acked and received (three equal lines), end-to-end
// p95 just above ack p95, a slow first second of the connect ramp, and a
// last, partial second (the drain) in which nothing was published and
// nothing completed.
func mqttPageRun() *mqtt.Result {
	res := &mqtt.Result{RunID: "r1", Broker: "tcp://127.0.0.1:18831", Config: mqtt.Config{Clients: 200, ConnRate: 200, QoS: 1, Size: 64, PubInterval: time.Second, MQTTVersion: "3.1.1", Subscribers: 1},
		StartedAt: time.Unix(0, 0), RampSeconds: 1, WindowSeconds: 10, Verdict: verdict.Warn,
		Checks: []verdict.Check{{ID: "mqtt.loss", Status: verdict.Warn, Summary: strings.Repeat("a long summary line ", 30)}}}
	for t := 1; t <= 11; t++ {
		ack := 1.2 + 0.01*float64(t%3)
		res.Series = append(res.Series, mqtt.Second{T: t, Seconds: 1, Connected: 200, Published: 200, Acked: 200, Received: 200, AckP95: ack, E2EP95: ack + 0.02})
	}
	res.Series[0].AckP95, res.Series[0].E2EP95 = 79.8, 80
	res.Series = append(res.Series, mqtt.Second{T: 12, Seconds: 0.3, Connected: 200})
	res.Throughput.RequestedPerSec = 200
	return res
}

// figures maps each chart's caption to its figure's HTML.
func figures(page string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<figure class="chart"><figcaption>([^<]*)</figcaption>(.*?)</figure>`).FindAllStringSubmatch(page, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// dashOf is the dash array of the data line of colour rgb ("" solid),
// and whether the chart draws one.
func dashOf(fig, rgb string) (string, bool) {
	m := regexp.MustCompile(`(?s)<path (?:stroke-dasharray="([^"]*)")?\s*d="M[^"]*" style="stroke-width:[2-9];stroke:rgba\(` + rgb + `,`).FindStringSubmatch(fig)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// cxAt is the x (SVG units) of the dots of colour rgb: one per point.
func cxAt(fig, rgb string) []int {
	var out []int
	for _, m := range regexp.MustCompile(`<circle cx="(\d+)" cy="\d+" r="\d+" style="[^"]*stroke:rgba\(`+rgb+`,`).FindAllStringSubmatch(fig, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// xTickLabels are the x axis's labels of a chart, left to right: the
// labels that share one y (a y axis's share one x).
func xTickLabels(fig string) []string {
	byY := map[string][]string{}
	var most string
	for _, m := range regexp.MustCompile(`<text x="\d+" y="(\d+)"[^>]*>([0-9.]+)</text>`).FindAllStringSubmatch(fig, -1) {
		byY[m[1]] = append(byY[m[1]], m[2])
		if len(byY[m[1]]) > len(byY[most]) {
			most = m[1]
		}
	}
	return byY[most]
}

const (
	blue   = "78,121,167" // published, connected
	orange = "242,142,43" // acknowledged, ack p95
	red    = "225,87,89"  // end-to-end p95
	green  = "89,161,79"  // received
)

// TestMQTTPageReadable guards each point of the MQTT report a newcomer
// could not read: equal series drawn apart with a legend, ack p95 visible
// under end-to-end p95, no 0 msg/s for the partial last second, every
// chart over time on one x axis, the ramp's first second off the latency
// scale, the printed text wrapped, and the banner worded as printed.
func TestMQTTPageReadable(t *testing.T) {
	var b bytes.Buffer
	if err := mqttPageRun().WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	figs := figures(page)
	conn, msgs, lat := figs["Connections over time"], figs["Messages per second"], figs["Latency over time (p95 of each second)"]
	if conn == "" || msgs == "" || lat == "" {
		t.Fatalf("charts missing: %v", len(figs))
	}

	t.Run("published, acked and received apart", func(t *testing.T) {
		pub, ok1 := dashOf(msgs, blue)
		rec, ok2 := dashOf(msgs, green)
		ack, ok3 := dashOf(msgs, orange)
		if !ok1 || !ok2 || !ok3 || pub != "" || rec == "" || ack == "" || rec == ack {
			t.Errorf("published %q, received %q, acked %q: want solid and two different dashes", pub, rec, ack)
		}
		for _, want := range []string{"received by the subscribers (lies on published)", "acknowledged (PUBACK/PUBCOMP) (lies on published)"} {
			if !strings.Contains(msgs, want) {
				t.Errorf("legend lacks %q", want)
			}
		}
	})
	t.Run("ack p95 not hidden by e2e p95", func(t *testing.T) {
		ack, ok1 := dashOf(lat, orange)
		e2e, ok2 := dashOf(lat, red)
		if !ok1 || !ok2 || ack != "" || e2e == "" {
			t.Errorf("ack p95 %q, e2e p95 %q: the later line must be dashed over the earlier", ack, e2e)
		}
	})
	t.Run("partial last second not drawn as a rate", func(t *testing.T) {
		if n := len(cxAt(msgs, blue)); n != 11 {
			t.Errorf("published: %d points, want 11 (second 12 is the drain)", n)
		}
		if !strings.Contains(msgs, "second 12 (0.30 s, the drain after the load) is not drawn") {
			t.Error("the chart does not say why second 12 is left out")
		}
	})
	t.Run("one x axis for every chart over time", func(t *testing.T) {
		c, m, l := xTickLabels(conn), xTickLabels(msgs), xTickLabels(lat)
		if len(c) < 3 || c[len(c)-1] != "12" {
			t.Fatalf("connections x ticks %v, want up to 12", c)
		}
		if strings.Join(m, " ") != strings.Join(c, " ") || strings.Join(l, " ") != strings.Join(c, " ") {
			t.Errorf("x ticks: connections %v, messages %v, latency %v", c, m, l)
		}
	})
	t.Run("ramp's first second off the latency scale", func(t *testing.T) {
		if strings.Contains(lat, ">80<") || strings.Contains(lat, ">100<") || !strings.Contains(lat, ">1.50<") {
			t.Error("latency scale set by the first second (want top 1.50 ms)")
		}
		if !strings.Contains(lat, "end-to-end p95 above the scale, drawn at its top: 80 at 1") {
			t.Error("the first second's value is not given")
		}
		heat := figs["Latency heat map: p95 of each second"]
		if strings.Contains(heat, "80 ms (log scale)") || !strings.Contains(heat, "above the scale, drawn darkest: end-to-end p95 80 ms at 1") {
			t.Error("the heat map's colour scale is set by the first second")
		}
	})
	t.Run("printed text wraps", func(t *testing.T) {
		rule := regexp.MustCompile(`(?m)^pre\{[^}]*\}`).FindString(page)
		if !strings.Contains(rule, "white-space:pre-wrap") || !strings.Contains(page, "<h2>As printed</h2>") {
			t.Errorf("the As printed block does not wrap: %q", rule)
		}
	})
	t.Run("banner as printed", func(t *testing.T) {
		if !strings.Contains(page, `<p class="banner warn">Verdict: WARN</p>`) || strings.Contains(page, "Verdict: warn") {
			t.Error("the banner does not say Verdict: WARN")
		}
		var text bytes.Buffer
		if err := mqttPageRun().WriteText(&text); err != nil || !strings.Contains(text.String(), "verdict: WARN") {
			t.Errorf("the text report no longer says verdict: WARN: %v", err)
		}
	})
}
