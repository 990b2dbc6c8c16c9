package mqtt

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"

	"github.com/hostprep/hostprep/internal/chart"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/loadprobe/latency"
)

// WriteHTML writes a self-contained HTML report of the run (nothing is
// fetched: no script, stylesheet, font or image; charts are inline SVG in
// the shared style of internal/chart): the load, a banner saying
// INCOMPLETE and why when the run stopped early or was interrupted, then
// the charts of HTMLCharts, the latency percentiles, the delivery
// accounting, the connects, the kernel counters, what was observed and
// every check. Errors come from rendering a chart or from w.
func (res *Result) WriteHTML(w io.Writer) error {
	return chart.Page{Title: "hostprep probe mqtt: " + res.Broker, Heading: "MQTT probe: " + res.Broker}.
		WriteRun(w, res.HTMLSection, res.WriteText)
}

// HTMLSection is the report without the page around it (heading level
// h3 and below), for pages that show many runs: `hostprep ready --html`
// and `hostprep report merge --html`. A result without checks (a fleet's
// merged run, whose checks the caller shows) has no checks table.
func (res *Result) HTMLSection() (template.HTML, error) {
	charts, err := res.HTMLCharts()
	if err != nil {
		return "", err
	}
	return res.htmlBody(charts), nil
}

func (res *Result) htmlBody(charts []template.HTML) template.HTML {
	var b bytes.Buffer
	own, ownRate := res.ownLoad()
	if err := htmlBody.Execute(&b, map[string]any{"R": res, "Charts": charts, "Lat": res.latencyRows(), "Own": own, "OwnRate": ownRate, "OneShard": res.oneShard(),
		"Incomplete": res.Interrupted || res.StoppedEarlyReason != ""}); err != nil {
		return template.HTML(template.HTMLEscapeString("report section: " + err.Error()))
	}
	return template.HTML(b.String())
}

// HTMLCharts are the run's charts over time, one point per second of the
// per-second series (Result.Series): connections against the target,
// published/acked/received msg/s against the requested rate, ack and
// end-to-end p95 in ms, and a heat map of those p95s per second. The
// steady window's start and end are marked.
func (res *Result) HTMLCharts() ([]template.HTML, error) {
	n := len(res.Series)
	ts := make([]float64, n)
	col := func(f func(Second) float64) []float64 {
		out := make([]float64, n)
		for i, s := range res.Series {
			out[i] = f(s)
		}
		return out
	}
	for i, s := range res.Series {
		ts[i] = float64(s.T)
	}
	flat := func(v float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	marks := res.windowMarkers()
	own, _ := res.ownLoad()
	// Every chart over time spans every second of the series, so their
	// axes end together.
	var span chart.Span
	if n > 0 {
		span = chart.Span{Min: ts[0], Max: ts[n-1]}
	}
	// The run's last row is shorter than a second and holds the drain
	// after the load (Second): its rates are not the load's, so the
	// messages chart leaves it out and says so.
	rates, rateTs := res.Series, ts
	var rateNotes []string
	if last := res.Series[max(n-1, 0):]; len(last) == 1 && last[0].Seconds > 0 && last[0].Seconds < 1 {
		rates, rateTs = res.Series[:n-1], ts[:n-1]
		rateNotes = []string{fmt.Sprintf("second %d (%.2f s, the drain after the load) is not drawn: a rate over part of a second in which nothing was scheduled is not the load's", last[0].T, last[0].Seconds)}
	}
	rate := func(f func(Second) int64) []float64 {
		out := make([]float64, len(rates))
		for i, s := range rates {
			out[i] = s.rate(f(s))
		}
		return out
	}
	const xName = "time since the load started (s)"
	charts := []chart.Line{
		{Title: "Connections over time", XName: xName, YName: "connected publishers", Markers: marks, XSpan: span, Series: []chart.Series{
			{Name: "connected", X: ts, Y: col(func(s Second) float64 { return float64(s.Connected) })},
			{Name: fmt.Sprintf("target (%s)", plural.N(own, "client")), X: ts, Y: flat(float64(own)), Dashed: true, Color: "7f7f7f"},
		}},
		{Title: "Messages per second", XName: xName, YName: "msg/s", Markers: marks, XSpan: span, Notes: rateNotes, Series: []chart.Series{
			{Name: offeredName(res.Offered), X: rateTs, Y: rate(func(s Second) int64 { return s.Published })},
			{Name: "received by the subscribers", X: rateTs, Y: rate(func(s Second) int64 { return s.Received }), Color: chart.Palette[4]},
			{Name: fmt.Sprintf("requested (%s msg/s)", chart.FormatNumber(res.Throughput.RequestedPerSec, res.Throughput.RequestedPerSec)),
				X: rateTs, Y: flat(res.Throughput.RequestedPerSec)[:len(rateTs)], Dashed: true, Color: "7f7f7f"},
		}},
	}
	// The connect ramp's first second (connects queue behind one another)
	// does not set the latency scale: the steady seconds do.
	lat := chart.Line{Title: "Latency over time (p95 of each second)", XName: xName, YName: "latency (ms)", Markers: marks, XSpan: span,
		YScaleFrom: latencyScaleFrom(res.RampSeconds)}
	if res.Config.QoS > 0 {
		charts[1].Series = append(charts[1].Series, chart.Series{Name: "acknowledged (PUBACK/PUBCOMP)", X: rateTs,
			Y: rate(func(s Second) int64 { return s.Acked }), Color: chart.Palette[1]})
		lat.Series = append(lat.Series, chart.Series{Name: "publish -> ack p95", X: ts, Y: col(func(s Second) float64 { return noSample(s.AckP95, s.Acked) }), Color: chart.Palette[1]})
	}
	lat.Series = append(lat.Series, chart.Series{Name: "end-to-end p95", X: ts, Y: col(func(s Second) float64 { return noSample(s.E2EP95, s.e2eSamples()) }), Color: chart.Palette[2]})
	charts = append(charts, lat)
	out, err := chart.LinesHTML(charts)
	if err != nil {
		return nil, err
	}
	h, err := res.heatMap().HTML()
	if err != nil {
		return nil, err
	}
	return append(out, h), nil
}

// latencyScaleFrom is the first second whose latency sets the latency
// chart's scale: the first after the connect ramp, and never the run's
// first second.
func latencyScaleFrom(rampSeconds float64) float64 {
	return max(2, math.Floor(rampSeconds)+1)
}

// windowMarkers mark the end of the connect ramp (the steady window's
// start) and the window's end, when they fall inside the series.
func (res *Result) windowMarkers() []chart.Marker {
	if len(res.Series) == 0 {
		return nil
	}
	last := float64(res.Series[len(res.Series)-1].T)
	var m []chart.Marker
	if res.RampSeconds > 0 && res.RampSeconds <= last {
		m = append(m, chart.Marker{X: res.RampSeconds, Label: fmt.Sprintf("steady window starts (%.1f s: connect ramp over)", res.RampSeconds), Color: "59a14f"})
	}
	if end := res.RampSeconds + res.WindowSeconds; res.WindowSeconds > 0 && end <= last {
		m = append(m, chart.Marker{X: end, Label: fmt.Sprintf("window ends (%.1f s)", end), Color: "b07aa1"})
	}
	return m
}

// heatMap colours each second's ack and end-to-end p95; a second in
// which no message completed is "no sample".
func (res *Result) heatMap() chart.HeatMap {
	h := chart.HeatMap{Title: "Latency heat map: p95 of each second", XName: "time since the load started (s)", YName: "latency", Unit: "ms",
		ScaleFrom: int(latencyScaleFrom(res.RampSeconds)) - 1} // column i is second i+1
	h.Rows = []string{"end-to-end p95"}
	if res.Config.QoS > 0 {
		h.Rows = append(h.Rows, "ack p95")
	}
	sample := func(v float64) float64 {
		if v <= 0 {
			return math.NaN()
		}
		return v
	}
	for _, s := range res.Series {
		h.Columns = append(h.Columns, strconv.Itoa(s.T))
		cell := []float64{sample(noSample(s.E2EP95, s.e2eSamples()))}
		if res.Config.QoS > 0 {
			cell = append(cell, sample(noSample(s.AckP95, s.Acked)))
		}
		h.Cells = append(h.Cells, cell)
	}
	return h
}

type latRow struct {
	Name string
	S    latency.Summary
}

func (res *Result) latencyRows() []latRow {
	rows := []latRow{{"connect (scheduled -> CONNACK)", res.Latency.Connect}}
	if res.Config.QoS > 0 {
		rows = append(rows, latRow{"publish -> ack", res.Latency.Ack})
	}
	rows = append(rows, latRow{"end-to-end", res.Latency.E2E})
	if res.Config.QoS > 0 {
		rows = append(rows, latRow{"warm-up ack", res.Latency.WarmupAck})
	}
	return append(rows, latRow{"warm-up end-to-end", res.Latency.WarmupE2E}, latRow{"scheduler lag (the probe's own)", res.Latency.SchedulerLag})
}

var htmlFuncs = template.FuncMap{"pct": func(v float64) string { return fmt.Sprintf("%.4f%%", 100*v) }, "checks": chart.ChecksTable, "banner": chart.Banner,
	"n": plural.N[int], "offered": func(o Offered) string { return o.text() }}

var htmlBody = template.Must(template.New("mqtt-body").Funcs(htmlFuncs).Parse(`
{{if .Incomplete}}<p class="banner fail">INCOMPLETE: {{.R.StoppedEarlyReason}}. The numbers below are partial and are not a verdict.</p>
{{else}}{{banner .R.Verdict}}{{end}}
{{with .R.Config}}<p>{{if $.OneShard}}Shard {{.Shard}}: {{n $.Own "client"}} of the fleet's {{.Clients}} connecting at {{printf "%g" $.OwnRate}} connections/s (the fleet's {{.ConnRate}}/s){{else}}{{if .Shard.On}}The fleet's {{n .Shard.N "shard"}} merged: {{end}}{{n .Clients "client"}} connecting at {{.ConnRate}} connections/s{{end}}, QoS {{.QoS}}, {{.Size}} B every {{.PubInterval}},
MQTT {{.MQTTVersion}}, {{n .Subscribers "subscriber"}} on <code>{{$.R.Filter}}</code>;
steady window {{printf "%.1f" $.R.WindowSeconds}} s after a {{printf "%.1f" $.R.RampSeconds}} s connect ramp. Run {{$.R.RunID}}, started {{$.R.StartedAt.Format "2006-01-02 15:04:05 UTC"}}.</p>{{end}}
{{if .R.BrokerNote}}<p><em>{{.R.BrokerNote}}</em></p>{{end}}
<p>Throughput over the window: {{printf "%.1f" .R.Throughput.PublishedPerSec}} msg/s published, {{printf "%.1f" .R.Throughput.ReceivedPerSec}} msg/s received{{.R.ArrivalNote}} (requested {{printf "%.1f" .R.Throughput.RequestedPerSec}} msg/s).</p>
{{with .R.Offered}}{{if .Asked}}<p>Offered load: {{offered .}}.</p>{{end}}{{end}}
{{range .Charts}}{{.}}
{{end}}
<h3>Latency (ms, from the scheduled time)</h3>
<table><tr><th class="l">latency</th><th>count</th><th>censored</th><th>min</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>p99.9</th><th>max</th></tr>
{{range .Lat}}<tr><td class="l">{{.Name}}</td><td>{{.S.Count}}</td><td>{{.S.Censored}}</td><td>{{printf "%.3f" .S.Min}}</td><td>{{printf "%.3f" .S.P50}}</td><td>{{printf "%.3f" .S.P90}}</td><td>{{printf "%.3f" .S.P95}}</td><td>{{printf "%.3f" .S.P99}}</td><td>{{printf "%.3f" .S.P999}}</td><td>{{printf "%.3f" .S.Max}}</td></tr>
{{end}}</table>
<h3>Delivery accounting</h3>
{{with .R.Messages}}<table>
{{if $.R.Offered.Asked}}<tr><th class="l">asked</th><td>{{$.R.Offered.Asked}}</td><td class="l">every client's slots from its first to the window's end</td></tr>
<tr><th class="l">not sent</th><td>{{$.R.Offered.NotSent}}</td><td class="l">client failed to connect: {{$.R.Offered.NotSentConnect}}; connection lost: {{$.R.Offered.NotSentLost}}{{if $.R.Offered.NotSentCut}}; the run ended before they were sent: {{$.R.Offered.NotSentCut}}{{end}} (not in the loss rate)</td></tr>{{end}}
<tr><th class="l">scheduled</th><td>{{.Scheduled}}</td><td class="l">publish slots that fell due on a connected client</td></tr>
<tr><th class="l">published</th><td>{{.Published}}</td><td class="l">written to the socket (send failed: {{.SendFailed}}; DUP re-sends: {{.Resent}})</td></tr>
{{if gt $.R.Config.QoS 0}}<tr><th class="l">acknowledged</th><td>{{.Acked}}</td><td class="l">PUBACK/PUBCOMP with a success code (unacked: {{.Unacked}}, of which ack errors: {{.AckErrors}})</td></tr>{{end}}
<tr><th class="l">received</th><td>{{.Received}}</td><td class="l">distinct messages seen by the subscribers (expected {{.Expected}})</td></tr>
<tr><th class="l">lost</th><td>{{.Lost}}</td><td class="l">loss rate {{pct .LossRate}}{{if $.R.Offered.Asked}} of the asked{{end}}{{if gt $.R.Config.QoS 0}}; lost after the broker acknowledged: {{.LostAfterAck}}{{end}}{{if gt .InFlight 0}}; in flight at the interrupt (not counted as lost): {{.InFlight}}{{end}}</td></tr>
<tr><th class="l">duplicated</th><td>{{.Duplicated}}</td><td class="l">seen again (counted once in received)</td></tr>
<tr><th class="l">out of order</th><td>{{.OutOfOrder}}</td><td class="l">lower sequence number than one already received from the same publisher</td></tr>
<tr><th class="l">overruns</th><td>{{.Overruns}}</td><td class="l">publishes issued more than 10 ms after their scheduled time</td></tr>
</table>{{end}}
<h3>Connections</h3>
{{with .R.Connects}}<table>
<tr><th class="l">publishers connected</th><td>{{.OK}} of {{.Target}}</td><td class="l">failed: {{.Failed}}{{range $k, $v := .FailedBy}} ({{$k}} {{$v}}){{end}}; fail rate {{pct .FailRate}}{{if .Canceled}}; canceled by the interrupt: {{.Canceled}}{{end}}{{if .NotStarted}}; not started (the run ended first): {{.NotStarted}}{{end}}</td></tr>
<tr><th class="l">lost mid-run</th><td>{{.Lost}}</td><td class="l">{{range $k, $v := .LostBy}}{{$k}} {{$v}} {{end}}</td></tr>
<tr><th class="l">subscribers</th><td>{{.Subscribers}}</td><td class="l">lost mid-run: {{.SubscribersLost}}{{range $k, $v := .SubscribersLostBy}} ({{$k}} {{$v}}){{end}}</td></tr>
</table>{{end}}
{{with .R.Host}}<p>Kernel (TcpExt, whole network namespace, during the run): {{.ListenOverflows}} listen-queue overflows, {{.TCPSynRetrans}} SYN retransmits, {{.PruneCalled}} receive-queue prunes.</p>{{end}}
{{if .R.CPU.Seconds}}<p>CPU (whole host, during the run): {{.R.CPU.Text}}.</p>{{end}}
{{if .R.Failures}}<h3>Observed</h3><ul>{{range .R.Failures}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .R.Checks}}<h3>Checks</h3>
{{checks .R.Checks}}{{end}}
`))

// oneShard reports whether res is one shard's result (K of N), not a
// run without --shard or a fleet's merged result (MergeShards: K 0).
func (res *Result) oneShard() bool { return res.Config.Shard.On() && res.Config.Shard.K > 0 }

// ownLoad is the clients this run connects and at what rate
// (connections/s): for one shard its part of the fleet's (Shard.Count;
// the fleet's schedule spread over N shards), else (a run without
// --shard, a fleet's merged result) the run's own.
func (res *Result) ownLoad() (clients int, connRate float64) {
	c := res.Config
	if !res.oneShard() || c.Clients == 0 {
		return c.Clients, c.ConnRate
	}
	own := c.Shard.Count(c.Clients)
	return own, c.ConnRate * float64(own) / float64(c.Clients)
}

// offeredName names the chart's published series with the offered
// rate against the asked one ("published (offered 31 of 60 msg/s,
// 51.7%)"), or "published" for a result that does not account for it.
func offeredName(o Offered) string {
	if o.WindowAsked == 0 {
		return "published"
	}
	return fmt.Sprintf("published (offered %s of %s msg/s, %.1f%%)", chart.FormatNumber(o.OfferedPerSec, o.AskedPerSec), chart.FormatNumber(o.AskedPerSec, o.AskedPerSec), o.share()*100)
}
