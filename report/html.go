package report

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"io"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/ready/outcome"
	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// WriteHTML writes a self-contained page (no script, stylesheet, font or
// image is fetched: charts are inline SVG) with the fleet table, fleet
// charts (capacity and MQTT p95 per host) and, per host, its failing
// checks, the MQTT latency percentiles and the IoTDB throughput and p95
// per step.
func (f *Fleet) WriteHTML(w io.Writer) error {
	page := htmlPage{Fleet: f, Header: header}
	for _, r := range f.Rows {
		page.Rows = append(page.Rows, htmlRow{Row: r, Cells: r.cells(), Class: class(r.Verdict)})
	}
	page.FleetCharts = fleetCharts(f)
	for _, r := range f.Rows {
		page.Hosts = append(page.Hosts, hostSection(r))
	}
	return pageTmpl.Execute(w, page)
}

type htmlRow struct {
	Row
	Cells []string
	Class string
}

type htmlHost struct {
	Host, Verdict, Class, Source string
	Findings                     []string
	Charts                       []template.HTML
}

type htmlPage struct {
	Fleet       *Fleet
	Header      []string
	Rows        []htmlRow
	FleetCharts []template.HTML
	Hosts       []htmlHost
}

func class(v outcome.Verdict) string {
	switch v {
	case outcome.NotReady:
		return "fail"
	case outcome.ReadyWithWarnings, outcome.DryRun:
		return "warn"
	}
	return "pass"
}

// svg renders a chart to inline SVG, or a short note when the data cannot
// be charted (go-chart refuses an all-zero range).
func svg(render func(io.Writer) error, title string) template.HTML {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return template.HTML(`<p class="nochart">` + html.EscapeString(title+": no chart ("+err.Error()+")") + `</p>`)
	}
	s := buf.String()
	if i := strings.Index(s, "<svg"); i > 0 {
		s = s[i:]
	}
	return template.HTML(`<figure><figcaption>` + html.EscapeString(title) + `</figcaption>` + s + `</figure>`)
}

// bars draws one bar per label; labels are escaped here because go-chart
// writes SVG text verbatim.
func bars(title, unit string, labels []string, values []float64) template.HTML {
	top := 0.0
	for _, v := range values {
		top = max(top, v)
	}
	if top == 0 {
		top = 1 // all zero (no loss, say): still draw the axis
	}
	// Bars start at 0 (go-chart would start the axis at the smallest
	// value, which makes p50 look like nothing).
	bc := chart.BarChart{
		Width: 640, Height: 300, BarWidth: 40,
		Background: chart.Style{Padding: chart.Box{Top: 30, Bottom: 30, Left: 10, Right: 10}},
		YAxis:      chart.YAxis{Name: unit, Range: &chart.ContinuousRange{Min: 0, Max: top * 1.1}},
	}
	for i, l := range labels {
		bc.Bars = append(bc.Bars, chart.Value{Label: html.EscapeString(l), Value: values[i],
			Style: chart.Style{FillColor: drawing.ColorFromHex("4e79a7"), StrokeColor: drawing.ColorFromHex("4e79a7")}})
	}
	return svg(func(w io.Writer) error { return bc.Render(chart.SVG, w) }, title)
}

func fleetCharts(f *Fleet) []template.HTML {
	var out []template.HTML
	var hosts []string
	var capv []float64
	for _, r := range f.Rows {
		if r.CapacitySockets != nil {
			hosts = append(hosts, r.Host)
			capv = append(capv, *r.CapacitySockets)
		}
	}
	if len(hosts) > 0 {
		out = append(out, bars("Capacity per host (connections, preflight)", "connections", hosts, capv))
	}
	hosts, capv = nil, nil
	for _, r := range f.Rows {
		if r.MQTTE2EP95MS != nil {
			hosts = append(hosts, r.Host)
			capv = append(capv, *r.MQTTE2EP95MS)
		}
	}
	if len(hosts) > 0 {
		out = append(out, bars("MQTT end-to-end p95 per host (ms)", "ms", hosts, capv))
	}
	return out
}

func hostSection(r Row) htmlHost {
	fails, warns := outcome.Findings(r.run.Steps)
	h := htmlHost{Host: r.Host, Verdict: string(r.Verdict), Class: class(r.Verdict), Source: r.Source,
		Findings: append(fails, warns...)} // failures first
	if s := r.run.Step(outcome.StepProbeMQTT); s != nil {
		for _, name := range []string{"ack_latency_ms", "e2e_latency_ms", "connect_latency_ms"} {
			pts := s.Series[name]
			if len(pts) == 0 {
				continue
			}
			var labels []string
			var vals []float64
			for _, p := range pts {
				labels = append(labels, percentileLabel(p.X))
				vals = append(vals, p.Y)
			}
			h.Charts = append(h.Charts, bars(r.Host+": MQTT "+strings.TrimSuffix(name, "_ms")+" percentiles (ms)", "ms", labels, vals))
		}
	}
	if s := r.run.Step(outcome.StepProbeIoTDB); s != nil && len(s.Series["tps"]) > 0 {
		h.Charts = append(h.Charts, stepChart(r.Host, s))
	}
	return h
}

func percentileLabel(x float64) string {
	if x >= 100 {
		return "max"
	}
	return "p" + strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", x), "0"), ".")
}

// stepChart draws IoTDB throughput (left axis, operations/s) and p95
// (right axis, ms) against the number of workers.
func stepChart(host string, s *outcome.Step) template.HTML {
	series := func(name string) ([]float64, []float64) {
		pts := append([]outcome.Point(nil), s.Series[name]...)
		sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
		var xs, ys []float64
		for _, p := range pts {
			xs = append(xs, p.X)
			ys = append(ys, p.Y)
		}
		return xs, ys
	}
	tx, ty := series("tps")
	var ticks []chart.Tick // one tick per step, labelled with its workers
	for _, x := range tx {
		ticks = append(ticks, chart.Tick{Value: x, Label: fmt.Sprintf("%.0f", x)})
	}
	c := chart.Chart{
		Width: 640, Height: 300,
		Background:     chart.Style{Padding: chart.Box{Top: 20, Left: 20, Right: 20}},
		XAxis:          chart.XAxis{Name: "workers", Ticks: ticks},
		YAxis:          chart.YAxis{Name: "TPS", ValueFormatter: func(v any) string { return fmt.Sprintf("%.0f", v) }},
		YAxisSecondary: chart.YAxis{Name: "p95 ms", ValueFormatter: func(v any) string { return fmt.Sprintf("%.1f", v) }},
		Series: []chart.Series{chart.ContinuousSeries{Name: "TPS", XValues: tx, YValues: ty,
			Style: chart.Style{StrokeColor: drawing.ColorFromHex("4e79a7"), StrokeWidth: 2, DotWidth: 3}}},
	}
	if px, py := series("p95_ms"); len(px) > 0 {
		c.Series = append(c.Series, chart.ContinuousSeries{Name: "p95 ms", YAxis: chart.YAxisSecondary, XValues: px, YValues: py,
			Style: chart.Style{StrokeColor: drawing.ColorFromHex("e15759"), StrokeWidth: 2, DotWidth: 3}})
	}
	if len(tx) < 2 {
		// A single step cannot make a line; show it as bars.
		return bars(host+": IoTDB TPS at "+fmt.Sprint(tx[0])+" workers", "TPS", []string{fmt.Sprintf("%.0f workers", tx[0])}, ty)
	}
	c.Elements = []chart.Renderable{chart.Legend(&c)}
	return svg(func(w io.Writer) error { return c.Render(chart.SVG, w) }, host+": IoTDB throughput and p95 per step")
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>hostprep fleet readiness: {{.Fleet.Hosts}} hosts</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;font-size:.9em}
tr.fail td:nth-child(2){background:#f8d7da}tr.warn td:nth-child(2){background:#fff3cd}tr.pass td:nth-child(2){background:#d4edda}
h2.fail{color:#a00}h2.warn{color:#a60}h2.pass{color:#060}
figure{display:inline-block;margin:.5em}figcaption{font-size:.85em;color:#555}svg{width:640px;height:300px}
.nochart{color:#888;font-style:italic}
</style></head><body>
<h1>hostprep fleet readiness</h1>
<p>{{.Fleet.Hosts}} hosts:{{range $v, $n := .Fleet.ByVerdict}} {{$n}} {{$v}};{{end}}</p>
{{range .Fleet.Notes}}<p class="note">note: {{.}}</p>{{end}}
<table><thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Rows}}<tr class="{{.Class}}">{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{range .FleetCharts}}{{.}}{{end}}
{{range .Hosts}}<section id="host-{{.Host}}"><h2 class="{{.Class}}">{{.Host}}: {{.Verdict}}</h2>
<p>from {{.Source}}</p>
{{if .Findings}}<ul>{{range .Findings}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{range .Charts}}{{.}}{{end}}
</section>
{{end}}</body></html>
`))
