package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/internal/chart"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/probes"
	"github.com/hostprep/hostprep/ready/outcome"
)

// WriteHTML writes a self-contained page (no script, stylesheet, font or
// image is fetched: charts are inline SVG in the shared style of
// internal/chart) with the fleet table, the fleet MQTT run when shards
// were merged (verdict, shards, checks, the merged run's charts), fleet
// charts (capacity, MQTT end-to-end p95 and IoTDB TPS per host) and one
// section per host (see WriteHostHTML).
func (f *Fleet) WriteHTML(w io.Writer) error {
	page := htmlPage{Title: "hostprep fleet readiness: " + plural.N(f.Hosts, "host"), Style: template.CSS(chart.Style), Fleet: f, Header: header}
	for _, r := range f.Rows {
		page.Rows = append(page.Rows, htmlRow{Cells: r.cells(), Class: class(r.Verdict)})
	}
	var err error
	if page.FleetCharts, err = fleetCharts(f); err != nil {
		return err
	}
	if f.Run != nil {
		if page.FleetRun, err = fleetRunSection(f.Run); err != nil {
			return err
		}
	}
	for _, r := range f.Rows {
		h, err := hostSection(r.run, r.Source)
		if err != nil {
			return err
		}
		page.Hosts = append(page.Hosts, h)
	}
	return pageTmpl.Execute(w, page)
}

// WriteHostHTML writes the self-contained page of one `hostprep ready`
// run (`hostprep ready --html`): its verdict, what failed or warned,
// every step with its checks, and the probes' full reports with charts
// (the same sections `report merge --html` shows per host).
func WriteHostHTML(w io.Writer, r *outcome.Result) error {
	h, err := hostSection(r, "")
	if err != nil {
		return err
	}
	return pageTmpl.Execute(w, htmlPage{Title: "hostprep ready: " + r.Host + ": " + string(r.Verdict), Style: template.CSS(chart.Style), Hosts: []htmlHost{h}})
}

type htmlRow struct {
	Cells []string
	Class string
}

type htmlStep struct {
	outcome.Step
	Open    bool // checks shown unfolded: the step failed or warned
	Section template.HTML
}

type htmlHost struct {
	Host, Verdict, Class, Source, Profile, Started string
	Fails, Warns, Skipped                          []string
	Steps                                          []htmlStep
}

type htmlPage struct {
	Title       string
	Style       template.CSS
	Fleet       *Fleet
	Header      []string
	Rows        []htmlRow
	FleetCharts []template.HTML
	FleetRun    template.HTML
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

// fleetCharts compare the hosts: preflight capacity (connections) and
// MQTT end-to-end p95 (ms), for the hosts that have them.
func fleetCharts(f *Fleet) ([]template.HTML, error) {
	var out []template.HTML
	for _, c := range []struct {
		title, unit string
		pick        func(Row) *float64
	}{
		{"Capacity per host (preflight)", "connections the host can hold", func(r Row) *float64 { return r.CapacitySockets }},
		{"MQTT end-to-end p95 per host", "end-to-end p95 (ms)", func(r Row) *float64 { return r.MQTTE2EP95MS }},
		{"IoTDB throughput per host (target step)", "TPS (operations/s)", func(r Row) *float64 { return r.IoTDBTPS }},
	} {
		b := chart.Bars{Title: c.title, XName: c.unit}
		for _, r := range f.Rows {
			if v := c.pick(r); v != nil {
				b.Labels, b.Values = append(b.Labels, r.Host), append(b.Values, *v)
			}
		}
		if len(b.Labels) == 0 {
			continue
		}
		h, err := b.HTML()
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// fleetRunSection is a fleet MQTT run: its verdict, the shards present
// and missing, its checks, and the merged run's own report (charts over
// time from the combined per-second series, exact percentiles, delivery
// accounting) when every shard is there.
func fleetRunSection(run *FleetRun) (template.HTML, error) {
	var merged template.HTML
	if run.Merged != nil {
		m := *run.Merged
		m.Checks = nil // the fleet's checks, listed above it, include them
		var err error
		if merged, err = m.HTMLSection(); err != nil {
			return "", err
		}
	}
	var b strings.Builder
	err := fleetRunTmpl.Execute(&b, map[string]any{"Run": run, "Merged": merged})
	return template.HTML(b.String()), err
}

var fleetRunTmpl = template.Must(template.New("fleet-run").Funcs(template.FuncMap{"checks": chart.ChecksTable}).Parse(`
<h2>Fleet MQTT run {{.Run.RunID}}: <span class="{{.Run.Verdict}}">{{.Run.Verdict}}</span></h2>
<p>{{len .Run.Present}} of {{.Run.Shards}} shards reported{{if .Run.Missing}}; <strong class="fail">missing: {{range $i, $k := .Run.Missing}}{{if $i}}, {{end}}shard {{$k}}/{{$.Run.Shards}}{{end}}</strong>
(no exact fleet figures without every shard){{end}}.</p>
<table><tr><th>shard</th><th class="l">host</th><th class="l">verdict</th><th>clients</th><th>connected</th><th>published</th><th>acked</th><th>received</th><th>lost</th><th>window (s)</th><th>first publish late (ms)</th><th class="l">file</th></tr>
{{range .Run.Present}}<tr><td>{{.K}}/{{$.Run.Shards}}</td><td class="l">{{.Hostname}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td>{{.Clients}}</td><td>{{.Connected}}</td><td>{{.Published}}</td><td>{{.Acked}}</td><td>{{.Received}}</td><td>{{.Lost}}</td><td>{{printf "%.3f" .WindowS}}</td><td>{{if ge .FirstPublishLateMs 0.0}}{{printf "%.1f" .FirstPublishLateMs}}{{else}}-{{end}}</td><td class="l">{{.Source}}</td></tr>
{{end}}</table>
<h3>Fleet checks</h3>
{{checks .Run.Checks}}
{{if .Merged}}<h3>The fleet as one run</h3>
{{.Merged}}{{end}}
`))

// hostSection is one run: verdict, findings, and each step with its
// checks and, for the probes, their report.
func hostSection(r *outcome.Result, source string) (htmlHost, error) {
	fails, warns := outcome.Findings(r.Steps)
	h := htmlHost{Host: r.Host, Verdict: string(r.Verdict), Class: class(r.Verdict), Source: source, Profile: r.Profile,
		Started: r.Started.UTC().Format("2006-01-02 15:04:05 UTC"), Fails: fails, Warns: warns, Skipped: r.Skipped}
	for _, s := range r.Steps {
		hs := htmlStep{Step: s, Open: s.Verdict == verdict.Fail || s.Verdict == verdict.Warn}
		var err error
		full := false
		if p := probeOf(s.Name); p != nil {
			hs.Section, full, err = probeSection(p, r.Host, &s)
		}
		if err != nil {
			return h, fmt.Errorf("%s: %s: %w", r.Host, s.Name, err)
		}
		if full { // the probe's report lists its checks itself
			hs.Checks = nil
		}
		h.Steps = append(h.Steps, hs)
	}
	return h, nil
}

// probeOf is the probe whose ready step is named step, or nil.
func probeOf(step string) loadprobe.Probe {
	for _, p := range probes.All {
		if loadprobe.StepName(p.Name()) == step {
			return p
		}
	}
	return nil
}

// decodeResult reads a probe step's full result: the value itself in the
// process that ran it (`ready --html`), or its JSON form read back from a
// file (`report merge`), through the probe's Decode. ok is false when the
// step has none (a step that could not run, or a file written before
// results were included) or its result measured nothing.
func decodeResult(p loadprobe.Probe, v any) (res loadprobe.Result, ok bool) {
	switch x := v.(type) {
	case nil:
		return nil, false
	case loadprobe.Result:
		res = x
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, false
		}
		if res, ok = p.Decode(b); !ok {
			return nil, false
		}
	}
	return res, res.Measured()
}

// probeSection is a probe's report from the step's full result (full
// true), else charts of the series the step carries: latency
// percentiles (a series named *_latency_ms, X the percentile) and
// figures per step (tps, p95_ms; X the workers).
func probeSection(p loadprobe.Probe, host string, s *outcome.Step) (_ template.HTML, full bool, _ error) {
	if res, ok := decodeResult(p, s.Result); ok {
		h, err := res.HTMLSection()
		return h, true, err
	}
	kind := strings.TrimSuffix(p.Title(), " probe")
	var b strings.Builder
	for _, charts := range []func(host, kind string, s *outcome.Step) (template.HTML, error){percentileChart, perStepCharts} {
		h, err := charts(host, kind, s)
		if err != nil {
			return "", false, err
		}
		b.WriteString(string(h))
	}
	return template.HTML(b.String()), false, nil
}

// percentileChart charts the step's latency percentiles (series
// ack_latency_ms, e2e_latency_ms, connect_latency_ms); "" without any.
func percentileChart(host, kind string, s *outcome.Step) (template.HTML, error) {
	var series []chart.Series
	var ticks []chart.Tick
	for i, name := range []string{"ack_latency_ms", "e2e_latency_ms", "connect_latency_ms"} {
		pts := sortedPoints(s.Series[name])
		if len(pts) == 0 {
			continue
		}
		sr := chart.Series{Name: strings.TrimSuffix(strings.ReplaceAll(name, "_", " "), " ms"), Color: chart.Palette[[]int{1, 2, 0}[i]]}
		for _, p := range pts {
			sr.X, sr.Y = append(sr.X, p.X), append(sr.Y, p.Y)
			if len(ticks) < len(pts) {
				ticks = append(ticks, chart.Tick{X: p.X, Label: percentileLabel(p.X)})
			}
		}
		series = append(series, sr)
	}
	if len(series) == 0 {
		return "", nil
	}
	return chart.Line{Title: host + ": " + kind + " latency percentiles", XName: "percentile", YName: "latency (ms)", XTicks: ticks, Series: series}.HTML()
}

// perStepCharts charts the step's TPS and p95 per concurrency step
// (series tps, p95_ms); "" without them.
func perStepCharts(host, kind string, s *outcome.Step) (template.HTML, error) {
	var b strings.Builder
	for _, c := range []struct{ name, title, unit string }{
		{"tps", "throughput per step", "throughput (operations/s)"},
		{"p95_ms", "p95 per step", "p95 response time (ms)"},
	} {
		pts := sortedPoints(s.Series[c.name])
		if len(pts) == 0 {
			continue
		}
		l := chart.Line{Title: host + ": " + kind + " " + c.title, XName: "concurrency (workers)", YName: c.unit, Series: []chart.Series{{Name: c.name}}}
		for _, p := range pts {
			l.Series[0].X, l.Series[0].Y = append(l.Series[0].X, p.X), append(l.Series[0].Y, p.Y)
			l.XTicks = append(l.XTicks, chart.Tick{X: p.X, Label: fmt.Sprintf("%.0f", p.X)})
		}
		h, err := l.HTML()
		if err != nil {
			return "", err
		}
		b.WriteString(string(h))
	}
	return template.HTML(b.String()), nil
}

func sortedPoints(pts []outcome.Point) []outcome.Point {
	pts = append([]outcome.Point(nil), pts...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
	return pts
}

func percentileLabel(x float64) string {
	if x >= 100 {
		return "max"
	}
	return "p" + strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", x), "0"), ".")
}

var stepTitle = map[string]string{outcome.StepTune: "Tune", outcome.StepPreflight: "Preflight"}

func init() {
	for _, p := range probes.All {
		stepTitle[loadprobe.StepName(p.Name())] = p.Title()
	}
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"checks": chart.ChecksTable,
	"title":  func(s string) string { return stepTitle[s] },
	"secs":   func(ms float64) string { return fmt.Sprintf("%.1f s", ms/1000) },
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Title}}</title>
<style>{{.Style}}</style></head><body>
{{with .Fleet}}<h1>hostprep fleet readiness</h1>
{{range .Notes}}<p class="note">note: {{.}}</p>{{end}}
{{if $.Rows}}<p>{{.Hosts}} hosts:{{range $v, $n := .ByVerdict}} {{$n}} {{$v}};{{end}}</p>
<table><thead><tr>{{range $.Header}}<th class="l">{{.}}</th>{{end}}</tr></thead><tbody>
{{range $.Rows}}{{$cls := .Class}}<tr>{{range $i, $c := .Cells}}<td class="{{if eq $i 1}}{{$cls}} {{end}}l">{{$c}}</td>{{end}}</tr>
{{end}}</tbody></table>{{end}}
{{$.FleetRun}}
{{range $.FleetCharts}}{{.}}
{{end}}{{end}}
{{range .Hosts}}<section id="host-{{.Host}}">
{{if $.Fleet}}<h2>{{.Host}}: <span class="{{.Class}}">{{.Verdict}}</span></h2>
{{else}}<h1>hostprep ready on {{.Host}}</h1>
<p class="banner {{.Class}}">{{.Verdict}}</p>{{end}}
<p>Profile {{.Profile}}, started {{.Started}}{{if .Source}}, from {{.Source}}{{end}}.</p>
{{if .Fails}}<p><strong>Failing:</strong></p><ul>{{range .Fails}}<li class="fail">{{.}}</li>{{end}}</ul>{{end}}
{{if .Warns}}<p><strong>Warnings:</strong></p><ul>{{range .Warns}}<li class="warn">{{.}}</li>{{end}}</ul>{{end}}
{{if .Skipped}}<p><strong>Not run:</strong></p><ul>{{range .Skipped}}<li class="skip">{{.}}</li>{{end}}</ul>{{end}}
<table><tr><th class="l">step</th><th class="l">verdict</th><th class="l">summary</th><th>time</th></tr>
{{range .Steps}}<tr><td class="l">{{.Name}}</td><td class="{{.Verdict}}">{{.Verdict}}</td><td class="l">{{.Summary}}{{if .Error}}<br><span class="fail">{{.Error}}</span>{{end}}</td><td>{{secs .DurationMS}}</td></tr>
{{end}}</table>
{{range .Steps}}{{if or .Checks .Section}}<h3>{{title .Name}}: <span class="{{.Verdict}}">{{.Verdict}}</span></h3>
{{.Section}}
{{if .Checks}}<details{{if .Open}} open{{end}}><summary>checks ({{len .Checks}})</summary>
{{checks .Checks}}</details>{{end}}
{{end}}{{end}}
</section>
{{end}}</body></html>
`))
