package iotdb

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// WriteHTML writes a self-contained HTML report: the run's settings, two
// inline SVG charts against concurrency (response time mean/p50/p95/p99,
// and throughput TPS and points/s) with the throughput peak and the knee
// marked, the per-step table and the checks. It references nothing
// outside the file: no scripts, stylesheets, fonts or images to fetch.
func (r *Result) WriteHTML(w io.Writer) error {
	lat, err := r.latencyChart()
	if err != nil {
		return err
	}
	tps, err := r.throughputChart()
	if err != nil {
		return err
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		return err
	}
	return htmlPage.Execute(w, map[string]any{
		"R": r, "Latency": lat, "Throughput": tps, "Text": text.String(),
	})
}

var (
	colBlue   = drawing.ColorFromHex("4e79a7")
	colOrange = drawing.ColorFromHex("f28e2b")
	colRed    = drawing.ColorFromHex("e15759")
	colGreen  = drawing.ColorFromHex("59a14f")
	colGrey   = drawing.ColorFromHex("9c9c9c")
	colPurple = drawing.ColorFromHex("b07aa1")
)

func (r *Result) xs() []float64 {
	out := make([]float64, len(r.Steps))
	for i, s := range r.Steps {
		out[i] = float64(s.Workers)
	}
	return out
}

// xRange spans the steps' worker counts; go-chart refuses an empty range.
func (r *Result) xRange() *chart.ContinuousRange {
	xs := r.xs()
	if len(xs) == 0 {
		return &chart.ContinuousRange{Min: 0, Max: 1}
	}
	lo, hi := slices.Min(xs), slices.Max(xs)
	if lo == hi {
		lo, hi = lo-1, hi+1
	}
	return &chart.ContinuousRange{Min: lo, Max: hi}
}

// xTicks puts one tick on each step's worker count.
func (r *Result) xTicks() []chart.Tick {
	var t []chart.Tick
	for _, s := range r.Steps {
		t = append(t, chart.Tick{Value: float64(s.Workers), Label: fmt.Sprint(s.Workers)})
	}
	if len(t) == 1 { // keep the padded range visible
		xr := r.xRange()
		t = []chart.Tick{{Value: xr.Min}, t[0], {Value: xr.Max}}
	}
	return t
}

func yRange(series ...[]float64) *chart.ContinuousRange {
	hi := 0.0
	for _, s := range series {
		for _, v := range s {
			hi = max(hi, v)
		}
	}
	if hi <= 0 {
		hi = 1
	}
	return &chart.ContinuousRange{Min: 0, Max: hi * 1.15}
}

func line(name string, xs, ys []float64, c drawing.Color, dashed bool) chart.ContinuousSeries {
	st := chart.Style{StrokeColor: c, StrokeWidth: 2, DotColor: c, DotWidth: 3}
	if dashed {
		st.StrokeDashArray = []float64{5, 4}
		st.DotWidth = 0
	}
	return chart.ContinuousSeries{Name: name, XValues: xs, YValues: ys, Style: st}
}

// markers draws vertical lines at the peak and the knee, labelled.
func (r *Result) markers(top float64) []chart.Series {
	var out []chart.Series
	var ann []chart.Value2
	if len(r.Steps) > 1 && r.Knee.PeakTPS > 0 {
		x := float64(r.Knee.PeakWorkers)
		out = append(out, line(fmt.Sprintf("peak (%d workers)", r.Knee.PeakWorkers), []float64{x, x}, []float64{0, top}, colGreen, true))
		ann = append(ann, chart.Value2{XValue: x, YValue: top * 0.97, Label: "peak"})
	}
	if r.Knee.Workers != 0 {
		x := float64(r.Knee.Workers)
		out = append(out, line(fmt.Sprintf("knee (%d workers)", r.Knee.Workers), []float64{x, x}, []float64{0, top}, colRed, true))
		ann = append(ann, chart.Value2{XValue: x, YValue: top * 0.87, Label: "knee"})
	}
	if len(ann) > 0 {
		out = append(out, chart.AnnotationSeries{Annotations: ann})
	}
	return out
}

func (r *Result) latencyChart() (template.HTML, error) {
	xs := r.xs()
	col := func(f func(Step) float64) []float64 {
		out := make([]float64, len(r.Steps))
		for i, s := range r.Steps {
			out[i] = f(s)
		}
		return out
	}
	mean := col(func(s Step) float64 { return s.Latency.Mean })
	p50 := col(func(s Step) float64 { return s.Latency.P50 })
	p95 := col(func(s Step) float64 { return s.Latency.P95 })
	p99 := col(func(s Step) float64 { return s.Latency.P99 })
	yr := yRange(mean, p50, p95, p99)
	series := []chart.Series{
		line("mean", xs, mean, colBlue, false),
		line("p50", xs, p50, colGrey, false),
		line("p95", xs, p95, colOrange, false),
		line("p99", xs, p99, colPurple, false),
	}
	return renderChart("Response time against concurrency", "response time (ms)", r.xRange(), r.xTicks(), yr, append(series, r.markers(yr.Max)...))
}

func (r *Result) throughputChart() (template.HTML, error) {
	xs := r.xs()
	tps := make([]float64, len(r.Steps))
	for i, s := range r.Steps {
		tps[i] = s.TPS
	}
	yr := yRange(tps)
	series := []chart.Series{line("TPS (successful operations/s)", xs, tps, colBlue, false)}
	return renderChart("Throughput against concurrency", "TPS (operations/s)", r.xRange(), r.xTicks(), yr, append(series, r.markers(yr.Max)...))
}

// renderChart renders to SVG and makes it inline-ready: the XML namespace
// attributes (not needed inside HTML5) are dropped, so the page carries no
// URL at all.
func renderChart(title, yName string, xr *chart.ContinuousRange, xt []chart.Tick, yr *chart.ContinuousRange, series []chart.Series) (template.HTML, error) {
	c := chart.Chart{
		Title:      title,
		Width:      900,
		Height:     400,
		Background: chart.Style{Padding: chart.Box{Top: 50, Left: 180, Right: 50, Bottom: 10}},
		XAxis:      chart.XAxis{Name: "concurrency (workers)", Range: xr, Ticks: xt},
		YAxis: chart.YAxis{Name: yName, Range: yr, ValueFormatter: func(v interface{}) string {
			f, _ := v.(float64)
			if yr.Max >= 100 {
				return fmt.Sprintf("%.0f", f)
			}
			return fmt.Sprintf("%.1f", f)
		}},
		// No series uses the secondary axis; unhidden, go-chart draws it
		// with an empty range at a bogus position.
		YAxisSecondary: chart.YAxis{Style: chart.Style{Hidden: true}},
		Series:         series,
	}
	c.Elements = []chart.Renderable{chart.LegendLeft(&c)}
	var b bytes.Buffer
	if err := c.Render(chart.SVG, &b); err != nil {
		return "", fmt.Errorf("rendering %q: %w", title, err)
	}
	s := b.String()
	s = strings.Replace(s, ` xmlns="http://www.w3.org/2000/svg"`, "", 1)
	s = strings.Replace(s, ` xmlns:xlink="http://www.w3.org/1999/xlink"`, "", 1)
	return template.HTML(s), nil // go-chart escapes its labels
}

var htmlPage = template.Must(template.New("iotdb").Funcs(template.FuncMap{
	"mul100": func(v float64) float64 { return 100 * v },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>hostprep probe iotdb: {{.R.Scenario}} on {{.R.Target}}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2em;max-width:960px;color:#222}
h1{font-size:1.4em} h2{font-size:1.1em;margin-top:1.6em}
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right} th{background:#f3f3f3}
tr.knee td{background:#fde2e2} tr.peak td{background:#e3f3e0}
.pass{color:#2a7d2a}.fail{color:#b22}.warn{color:#b60}.skip{color:#777}
svg{max-width:100%;height:auto} pre{background:#f7f7f7;padding:1em;overflow:auto}
</style></head><body>
<h1>IoTDB probe: {{.R.Scenario}} on {{.R.Target}} — <span class="{{.R.Verdict}}">{{.R.Verdict}}</span></h1>
<p>IoTDB {{if .R.ServerVersion}}{{.R.ServerVersion}}{{else}}(version unknown){{end}}, {{.R.Mode}} loop,
SessionPool {{.R.PoolSize}} sessions, wait timeout {{.R.WaitTimeoutMS}} ms, call deadline {{.R.CallTimeoutMS}} ms,
database {{.R.Database}} ({{.R.Series}} series{{if .R.Kept}}, kept{{end}}). Started {{.R.Started.Format "2006-01-02 15:04:05 UTC"}}.</p>
<p><strong>Knee:</strong> {{.R.Knee.Reading}}</p>
<h2>Response time</h2>
{{.Latency}}
<h2>Throughput</h2>
{{.Throughput}}
<h2>Steps</h2>
<table><tr><th>workers</th><th>ops</th><th>TPS</th><th>points/s</th><th>mean ms</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th><th>error rate</th><th>errors by class</th><th>pool use mean / max</th></tr>
{{range .R.Steps}}<tr class="{{if eq .Workers $.R.Knee.Workers}}knee{{else if eq .Workers $.R.Knee.PeakWorkers}}peak{{end}}">
<td>{{.Workers}}</td><td>{{.Ops}}</td><td>{{printf "%.1f" .TPS}}</td><td>{{printf "%.0f" .PointsPerS}}</td>
<td>{{printf "%.2f" .Latency.Mean}}</td><td>{{printf "%.2f" .Latency.P50}}</td><td>{{printf "%.2f" .Latency.P95}}</td><td>{{printf "%.2f" .Latency.P99}}</td><td>{{printf "%.2f" .Latency.Max}}</td>
<td>{{printf "%.2f%%" (mul100 .ErrorRate)}}</td><td>{{range $k, $v := .ErrorsByClass}}{{$k}} {{$v}} {{end}}</td>
<td>{{printf "%.0f%%" (mul100 .Pool.MeanUtil)}} / {{printf "%.0f%%" (mul100 .Pool.MaxUtil)}}</td></tr>
{{end}}</table>
<h2>Checks</h2>
<table><tr><th>status</th><th>check</th><th>summary</th><th>remedy</th></tr>
{{range .R.Checks}}<tr><td class="{{.Status}}">{{.Status}}</td><td>{{.ID}}</td><td style="text-align:left">{{.Summary}}</td><td style="text-align:left">{{.Remedy}}</td></tr>
{{end}}</table>
{{if .R.Notes}}<h2>Notes</h2><ul>{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
<h2>As printed</h2>
<pre>{{.Text}}</pre>
</body></html>
`))
