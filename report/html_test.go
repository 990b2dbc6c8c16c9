package report

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
	"github.com/hostprep/hostprep/ready/outcome"
)

// mergedPage merges files and returns the fleet and its HTML page.
func mergedPage(t *testing.T, files ...string) (*Fleet, string) {
	t.Helper()
	return mergedAs(t, (*Fleet).WriteHTML, files...)
}

// mergedAs merges files and returns the fleet and what write prints of
// it (WriteText, WriteJSON, WriteHTML).
func mergedAs(t *testing.T, write func(*Fleet, io.Writer) error, files ...string) (*Fleet, string) {
	t.Helper()
	f, err := Merge(files)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := write(f, &b); err != nil {
		t.Fatal(err)
	}
	return f, b.String()
}

// TestHTMLFullResults: from the JSON of a real `hostprep ready` run
// (preflight, MQTT probe against the embedded broker, IoTDB probe against
// the test server) the merged page carries each probe's own report: the
// MQTT charts over time with one point per second and series, the heat
// maps, and the IoTDB charts with one point per step.
func TestHTMLFullResults(t *testing.T) {
	f, page := mergedPage(t, "testdata/lg-05-full.json", "testdata/lg-01.json")
	if regexp.MustCompile(`(?i)https?://|<script|<link|<img|url\(`).MatchString(page) {
		t.Error("the page fetches something")
	}
	run := f.Rows[0].run
	if run.Host != "lg-05" {
		t.Fatalf("first row %s", run.Host)
	}
	decoded, ok := decodeResult(mqtt.Probe, run.Step(outcome.StepProbeMQTT).Result)
	res, _ := decoded.(*mqtt.Result)
	if !ok || res == nil || len(res.Series) < 5 {
		t.Fatalf("MQTT result not decoded: %v", ok)
	}
	section := page[strings.Index(page, `<section id="host-lg-05">`):]
	section = section[:strings.Index(section, "</section>")]
	figs := regexp.MustCompile(`(?s)<figure class="chart"><figcaption>([^<]*)</figcaption>(.*?)</figure>`).FindAllStringSubmatch(section, -1)
	got := map[string]string{}
	for _, m := range figs {
		got[m[1]] = m[2]
	}
	n := len(res.Series)
	for caption, points := range map[string]int{
		"Connections over time":                  n,
		"Messages per second":                    3 * n, // QoS 1: published, received, acknowledged
		"Latency over time (p95 of each second)": 2 * n,
		"Response time against concurrency":      4 * 3, // mean, p50, p95, p99 at 3 steps
		"Throughput against concurrency":         3,
	} {
		fig, ok := got[caption]
		if !ok {
			t.Errorf("lg-05 lacks chart %q", caption)
			continue
		}
		if c := strings.Count(fig, "<circle"); c != points {
			t.Errorf("%s: %d points, want %d", caption, c, points)
		}
	}
	if _, ok := got["Latency heat map: p95 of each second"]; !ok {
		t.Error("no MQTT heat map")
	}
	if _, ok := got["Latency heat map: each second of each step"]; !ok {
		t.Error("no IoTDB heat map")
	}
	// lg-01 has no full results: its step series are charted instead.
	for _, want := range []string{"lg-01: MQTT latency percentiles", "lg-01: IoTDB throughput per step", "Capacity per host (preflight)", "MQTT end-to-end p95 per host"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestWriteHostHTMLInProcess: `ready --html` renders from the step's
// result as the probe returned it (a *mqtt.Result, not JSON), and a
// partial probe says INCOMPLETE.
func TestWriteHostHTMLInProcess(t *testing.T) {
	res := &mqtt.Result{Broker: "tcp://b:1883", Config: mqtt.Config{Clients: 2, QoS: 1}, Interrupted: true, StoppedEarlyReason: "interrupted after 3.0 s",
		Series: []mqtt.Second{{T: 1, Connected: 2, Published: 4, Received: 4, Acked: 4, AckP95: 1, E2EP95: 2}, {T: 2, Connected: 2, Published: 4, Received: 4, Acked: 4, AckP95: 1, E2EP95: 2}}}
	r := &outcome.Result{Host: "h<1>", Profile: "ready-small", Verdict: outcome.NotReady, Steps: []outcome.Step{
		{Name: outcome.StepPreflight, Verdict: verdict.Pass, Summary: "ok", Checks: []verdict.Check{{ID: "fd.hard", Status: verdict.Pass, Summary: "fine"}}},
		{Name: outcome.StepProbeMQTT, Verdict: verdict.Fail, Summary: "interrupted", Result: res, Checks: []verdict.Check{{ID: "mqtt.complete", Status: verdict.Fail}}},
	}}
	var b bytes.Buffer
	if err := WriteHostHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{"hostprep ready on h&lt;1&gt;", "Connections over time", "INCOMPLETE: interrupted after 3.0 s", "fd.hard", "checks (1)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "h<1>") {
		t.Error("host name not escaped")
	}
}

// TestHTMLFleetRun: merged shards of a fleet MQTT run show the fleet's
// verdict, a row per shard, the fleet checks once, and the merged run's
// charts from the combined per-second series; a missing shard is named
// and no merged figures are shown.
func TestHTMLFleetRun(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	all := [2]*latency.Recorder{latency.New(), latency.New()}
	var paths []string
	for k := 1; k <= 3; k++ {
		paths = append(paths, writeResult(t, dir, fmt.Sprintf("shard%d.json", k), shardResult(t, k, 3, "fleet-h", rng, &all)))
	}
	_, full := mergedPage(t, paths...)
	for _, want := range []string{"Fleet MQTT run fleet-h: <span class=\"pass\">pass</span>", "3 of 3 shards reported", "<td>2/3</td>", "fleet.shards",
		"The fleet as one run", "Messages per second", "Delivery accounting"} {
		if !strings.Contains(full, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(full, "<td class=\"l\">fleet.shards</td>"); n != 1 {
		t.Errorf("fleet.shards listed %d times, want once", n)
	}
	// The merged series has 2 seconds: published and received, acked at QoS 1.
	msgs := full[strings.Index(full, "<figcaption>Messages per second</figcaption>"):]
	msgs = msgs[:strings.Index(msgs, "</figure>")]
	if n := strings.Count(msgs, "<circle"); n != 2*3 {
		t.Errorf("messages chart: %d points, want 6", n)
	}
	_, missing := mergedPage(t, paths[:2]...)
	for _, want := range []string{"Fleet MQTT run fleet-h: <span class=\"fail\">fail</span>", "2 of 3 shards reported", "missing: shard 3/3"} {
		if !strings.Contains(missing, want) {
			t.Errorf("page with a missing shard lacks %q", want)
		}
	}
	if strings.Contains(missing, "The fleet as one run") {
		t.Error("merged figures shown without every shard")
	}
}
