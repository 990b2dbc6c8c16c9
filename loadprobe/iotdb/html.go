package iotdb

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/chart"
	"github.com/hostprep/hostprep/internal/plural"
)

// WriteHTML writes a self-contained HTML report (nothing is fetched: no
// script, stylesheet, font or image; charts are inline SVG in the shared
// style of internal/chart): a banner with the verdict, or INCOMPLETE and
// why when the run was cut short, the run's settings, the charts of
// HTMLCharts, the per-step table with what limited each step, the tuning
// suggestions, every check, and the text report as printed. Errors come
// from rendering a chart or from w.
func (r *Result) WriteHTML(w io.Writer) error {
	return chart.Page{Title: "hostprep probe iotdb: " + r.Scenario + " on " + r.Target, Heading: "IoTDB probe: " + r.Scenario + " on " + r.Target}.
		WriteRun(w, r.HTMLSection, r.WriteText)
}

// HTMLSection is the report without the page around it (headings h3 and
// below), for pages that show many runs (`hostprep ready --html`,
// `hostprep report merge --html`).
func (r *Result) HTMLSection() (template.HTML, error) {
	charts, err := r.HTMLCharts()
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	err = htmlBody.Execute(&b, map[string]any{"R": r, "Charts": charts, "Incomplete": r.incompleteReason(), "CleanupID": CheckCleanup})
	return template.HTML(b.String()), err
}

// incompleteReason says why the run is partial ("" when it ran to the
// end).
func (r *Result) incompleteReason() string {
	switch {
	case r.StopReason != "":
		return r.StopReason
	case r.Unreachable:
		return "the server became unreachable mid-run"
	case r.Interrupted:
		return "interrupted (Ctrl-C, SIGTERM or the caller's deadline)"
	}
	return ""
}

// HTMLCharts are the charts against concurrency, one point per step with
// a tick at each step's workers: response time (mean, p50, p95, p99 in
// ms) and throughput (TPS), the throughput peak and the knee marked as
// dashed lines behind the data; then the latency heat map, per second and
// per step (Step.Seconds), when the result has per-second data.
func (r *Result) HTMLCharts() ([]template.HTML, error) {
	xs := make([]float64, len(r.Steps))
	ticks := make([]chart.Tick, len(r.Steps))
	for i, s := range r.Steps {
		xs[i] = float64(s.Workers)
		ticks[i] = chart.Tick{X: xs[i], Label: fmt.Sprint(s.Workers)}
	}
	col := func(f func(Step) float64) []float64 {
		out := make([]float64, len(r.Steps))
		for i, s := range r.Steps {
			out[i] = f(s)
		}
		return out
	}
	const xName = "concurrency (workers)"
	lines := []chart.Line{
		{Title: "Response time against concurrency", XName: xName, YName: "response time (ms)", XTicks: ticks, Markers: r.markers(), Series: []chart.Series{
			{Name: "mean", X: xs, Y: col(func(s Step) float64 { return s.Latency.Mean })},
			{Name: "p50", X: xs, Y: col(func(s Step) float64 { return s.Latency.P50 }), Color: "9c9c9c"},
			{Name: "p95", X: xs, Y: col(func(s Step) float64 { return s.Latency.P95 }), Color: chart.Palette[1]},
			{Name: "p99", X: xs, Y: col(func(s Step) float64 { return s.Latency.P99 }), Color: chart.Palette[6]},
		}},
		{Title: "Throughput against concurrency", XName: xName, YName: "throughput (operations/s)", XTicks: ticks, Markers: r.markers(), Series: []chart.Series{
			{Name: "TPS (successful operations/s)", X: xs, Y: col(func(s Step) float64 { return s.TPS })},
		}},
	}
	out, err := chart.LinesHTML(lines)
	if err != nil {
		return nil, err
	}
	if hm, ok := r.heatMap(); ok {
		h, err := hm.HTML()
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// heatMap lays every step's seconds side by side (one band per step,
// labelled with its workers), rows p50, p95, p99 and max of the second's
// successful operations; a second without one is "no sample". ok is
// false when no step has per-second data (a result from an older
// hostprep).
func (r *Result) heatMap() (h chart.HeatMap, ok bool) {
	h = chart.HeatMap{Title: "Latency heat map: each second of each step", XName: "second of the step (s)", YName: "response time",
		Unit: "ms", Rows: []string{"p50", "p95", "p99", "max"}}
	for _, st := range r.Steps {
		from := len(h.Cells)
		for _, sec := range st.Seconds {
			ok = true
			h.Columns = append(h.Columns, strconv.Itoa(sec.Second))
			cell := []float64{sec.P50Ms, sec.P95Ms, sec.P99Ms, sec.MaxMs}
			if sec.Ops-sec.Errors <= 0 {
				nan := math.NaN()
				cell = []float64{nan, nan, nan, nan}
			}
			h.Cells = append(h.Cells, cell)
		}
		if len(h.Cells) > from {
			h.Bands = append(h.Bands, chart.Band{From: from, To: len(h.Cells), Label: fmt.Sprintf("%s", plural.N(st.Workers, "worker"))})
		}
	}
	return h, ok
}

// markers are the throughput peak (when there is more than one step) and
// the knee, named in the legend with their worker counts.
func (r *Result) markers() []chart.Marker {
	var m []chart.Marker
	if len(r.Steps) > 1 && r.Knee.PeakTPS > 0 {
		m = append(m, chart.Marker{X: float64(r.Knee.PeakWorkers), Label: fmt.Sprintf("peak (%s)", plural.N(r.Knee.PeakWorkers, "worker")), Color: "59a14f"})
	}
	if r.Knee.Workers != 0 {
		m = append(m, chart.Marker{X: float64(r.Knee.Workers), Label: fmt.Sprintf("knee (%s)", plural.N(r.Knee.Workers, "worker")), Color: "e15759"})
	}
	return m
}

// censoredCell is the steps table's censored cell: how many of s's
// latencies are censored, and of them the parts the text report lists
// (censoredParts: no answer, never started, cut); "0" when none is.
func censoredCell(s Step) string {
	n := strconv.FormatInt(s.Latency.Censored, 10)
	var why []string
	for _, p := range censoredParts(&s) {
		why = append(why, strconv.FormatInt(p.n, 10)+" "+p.short)
	}
	if len(why) == 0 {
		return n
	}
	return n + " (" + strings.Join(why, ", ") + ")"
}

var htmlBody = template.Must(template.New("iotdb-body").Funcs(template.FuncMap{
	"checks":   chart.ChecksTable,
	"banner":   chart.Banner,
	"mul100":   func(v float64) float64 { return 100 * v },
	"censored": censoredCell,
}).Parse(`
{{if .Incomplete}}<p class="banner fail">INCOMPLETE: {{.Incomplete}}. The steps below are partial and are not a verdict.</p>
{{else}}{{banner .R.Verdict}}{{end}}
<p>IoTDB {{if .R.ServerVersion}}{{.R.ServerVersion}}{{else}}(version unknown){{end}} at {{.R.Target}}, scenario {{.R.Scenario}}, {{.R.Mode}} loop{{if .R.RatePerWorker}} at {{.R.RatePerWorker}} operations/s per worker{{end}},
SessionPool {{.R.PoolSize}} sessions, wait timeout {{.R.WaitTimeoutMS}} ms, call deadline {{.R.CallTimeoutMS}} ms,
database {{.R.Database}} ({{.R.Series}} series{{if .R.Kept}}, kept (--keep){{else if .R.DeleteUnknown}}, may have been left: see {{.CleanupID}}{{else if .R.LeftBehind}}, left behind: see {{.CleanupID}}{{end}}). Started {{.R.Started.Format "2006-01-02 15:04:05 UTC"}}, {{printf "%.0f" .R.DurationS}} s.</p>
<p><strong>Knee:</strong> {{.R.Knee.Reading}}</p>
{{range .Charts}}{{.}}
{{end}}
<h3>Steps</h3>
<table><tr><th>workers</th><th>ops</th><th>TPS</th><th>points/s</th><th>mean ms</th><th>p50 ms</th><th>p95 ms</th><th>p99 ms</th><th>max ms</th><th>error rate</th><th class="l">errors by class</th><th title="latencies recorded at no less than the time they waited (no answer, never started, cut)">censored</th><th>pool use mean / max</th><th class="l">limited by</th></tr>
{{range .R.Steps}}<tr>
<td>{{.Workers}}{{if eq .Workers $.R.Knee.Workers}} (knee){{else if and (eq .Workers $.R.Knee.PeakWorkers) (gt (len $.R.Steps) 1)}} (peak){{end}}{{if .Partial}} (partial){{end}}</td><td>{{.Ops}}</td><td>{{printf "%.1f" .TPS}}</td><td>{{printf "%.0f" .PointsPerS}}</td>
<td>{{printf "%.2f" .Latency.Mean}}</td><td>{{printf "%.2f" .Latency.P50}}</td><td>{{printf "%.2f" .Latency.P95}}</td><td>{{printf "%.2f" .Latency.P99}}</td><td>{{printf "%.2f" .Latency.Max}}</td>
<td>{{printf "%.2f%%" (mul100 .ErrorRate)}}</td><td class="l">{{range $k, $v := .ErrorsByClass}}{{$k}} {{$v}} {{end}}</td><td>{{censored .}}</td>
<td>{{printf "%.0f%%" (mul100 .Pool.MeanUtil)}} / {{printf "%.0f%%" (mul100 .Pool.MaxUtil)}}</td><td class="l">{{if .Bound}}<strong>{{.Bound}}</strong>{{if .BoundReason}}: {{.BoundReason}}{{end}}{{else}}-{{end}}</td></tr>
{{end}}</table>
{{if .R.Suggestions}}<h3>Tuning suggestions</h3>
<table><tr><th class="l">setting</th><th class="l">observed</th><th class="l">fix</th></tr>
{{range .R.Suggestions}}<tr><td class="l">{{.Setting}}</td><td class="l">{{.Observed}}</td><td class="l">{{.Fix}}</td></tr>
{{end}}</table>{{end}}
<h3>Checks</h3>
{{checks .R.Checks}}
{{if .R.Notes}}<h3>Notes</h3><ul>{{range .R.Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
`))
