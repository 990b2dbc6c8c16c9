// Package chart is the one chart style of every hostprep HTML report
// (probe mqtt, probe iotdb, ready, report merge): line charts and a
// latency heat map drawn with go-chart as inline SVG.
//
// The style: the value axis is on the left and its name carries the unit;
// markers (a knee, a peak) are thin dashed lines drawn behind the data and
// named in the legend, never boxes over points; the x range is padded so
// no point sits on the frame; the legend is HTML under the chart, so it
// covers nothing; the SVG has a viewBox and no fixed size, so it takes
// the page's width (CSS in Style) on a laptop screen and on paper.
package chart

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"

	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// Canvas size in SVG user units; the page scales it to its width.
const (
	width  = 1000
	height = 360
)

// Type sizes in points (go-chart draws n pt as n*96/72 px of the
// 1000-unit canvas): tick labels stay about 9 px tall when the chart is
// printed 18 cm wide, 15 px on a laptop screen.
const (
	tickPt = 11.0
	namePt = 12.0
)

// Palette is the series colours in order (Tableau 10: distinguishable,
// and still apart when printed in grey).
var Palette = []string{"4e79a7", "f28e2b", "e15759", "76b7b2", "59a14f", "edc948", "b07aa1", "ff9da7", "9c755f", "bab0ac"}

// Series is one line: Y[i] at X[i]. Reference lines (a requested rate)
// are Dashed and drawn without dots.
type Series struct {
	Name   string
	X, Y   []float64
	Dashed bool
	// Color is a hex colour ("e15759"); empty takes the next of Palette.
	Color string
}

// Marker is a vertical dashed line at X named Label in the legend (e.g.
// "knee: 200 workers").
type Marker struct {
	X     float64
	Label string
	Color string
}

// Tick labels one x value (e.g. a step's worker count).
type Tick struct {
	X     float64
	Label string
}

// Line is a line chart. XName and YName are axis names with their unit
// ("time since start (s)", "latency (ms)"). XTicks, when set, are the only
// x ticks. The y axis starts at 0.
type Line struct {
	Title, XName, YName string
	Series              []Series
	Markers             []Marker
	XTicks              []Tick
	// XSpan, when its Max is above its Min, is the x range to draw (before
	// padding) whatever the series hold: charts of one run over time share
	// it, so their axes end at the same second even where one of them has
	// no value in the last ones. Zero: the series' own x extent (every x,
	// with or without a value).
	XSpan Span
	// YScaleFrom, when above 0, leaves the points at x below it out of
	// the y scale (a connect ramp's first seconds, whose latency would
	// flatten every later one): they are drawn at the top of the plot and
	// named in a note under the chart with their value. When no point is
	// at YScaleFrom or later, every point sets the scale.
	YScaleFrom float64
	// Notes are lines printed under the legend (what was left out, and why).
	Notes []string
}

// Span is a closed range of x values.
type Span struct{ Min, Max float64 }

// LinesHTML renders each of lines (Line.HTML), in order; the first error
// stops it.
func LinesHTML(lines []Line) ([]template.HTML, error) {
	out := make([]template.HTML, 0, len(lines))
	for _, l := range lines {
		h, err := l.HTML()
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

// HTML renders the chart as a <figure> with the title as caption, an
// inline SVG and the legend. A chart with no point at all renders as a
// short note saying so instead of an empty frame. Errors come from
// go-chart (an invalid range).
func (l Line) HTML() (template.HTML, error) {
	xs, ys := l.extent()
	if len(ys) == 0 {
		return note(l.Title, "no data was measured"), nil
	}
	xr := padded(xs)
	yr := &chart.ContinuousRange{Min: 0, Max: niceMax(l.scaleYs(ys))}
	notes := append([]string(nil), l.Notes...)
	var series []chart.Series
	var legend []legendItem
	for _, m := range l.Markers { // first: drawn behind the data
		c := colorOr(m.Color, "7f7f7f")
		series = append(series, chart.ContinuousSeries{Name: m.Label, YAxis: chart.YAxisSecondary,
			XValues: []float64{m.X, m.X}, YValues: []float64{yr.Min, yr.Max},
			Style: chart.Style{StrokeColor: c.WithAlpha(200), StrokeWidth: 1.5, StrokeDashArray: []float64{6, 4}}})
		legend = append(legend, legendItem{Color: c.String(), Label: m.Label, Dashed: true})
	}
	groups := l.coinciding(yr.Max)
	for i, s := range l.Series {
		c := colorOr(s.Color, Palette[i%len(Palette)])
		st := chart.Style{StrokeColor: c, StrokeWidth: 2}
		label := s.Name
		if g := groups[i]; g.size > 1 {
			// Lines that lie on one another (received = published, e2e
			// p95 = ack p95) are drawn as one striped line: each later
			// one dashed so that every colour shows for an equal share
			// of each stripeLen, and the legend says which it lies on.
			st.StrokeWidth = 4
			if g.rank > 0 {
				on := stripeLen * float64(g.size-g.rank) / float64(g.size)
				st.StrokeDashArray = []float64{on, stripeLen - on}
				label += " (lies on " + l.Series[g.first].Name + ")"
			}
		}
		if s.Dashed {
			st.StrokeDashArray = []float64{8, 5}
		} else if len(s.X) <= 60 {
			st.DotColor, st.DotWidth = c, 3
		}
		s, clipped := s.clipped(yr.Max)
		if len(clipped) > 0 {
			notes = append(notes, clippedNote(s.Name, clipped))
		}
		for _, run := range finiteRuns(s) {
			series = append(series, chart.ContinuousSeries{Name: s.Name, YAxis: chart.YAxisSecondary, XValues: run.X, YValues: run.Y, Style: st})
		}
		legend = append(legend, legendItem{Color: c.String(), Label: label, Dashed: s.Dashed, Striped: groups[i].rank > 0})
	}
	c := chart.Chart{
		Width: width, Height: height,
		Background: chart.Style{Padding: chart.Box{Top: 16, Left: 40, Right: 24, Bottom: 8}},
		XAxis: chart.XAxis{Name: l.XName, Range: xr, Ticks: xTicks(l.XTicks, xr),
			NameStyle: axisNameStyle(), Style: axisStyle(), ValueFormatter: numberFormatter(xr.Max - xr.Min)},
		// The primary y axis go-chart draws on the right; every series
		// is on the secondary one, drawn on the left. The hidden primary
		// gets the same ticks: go-chart v2.1.2 reads the secondary axis's
		// range from the primary's ticks (chart.go getRanges).
		YAxis: chart.YAxis{Style: chart.Style{Hidden: true}, Range: yr, Ticks: yTicks(yr.Max)},
		YAxisSecondary: chart.YAxis{Range: yr, Style: axisStyle(),
			ValueFormatter: numberFormatter(yr.Max), Ticks: yTicks(yr.Max),
			GridMajorStyle: chart.Style{StrokeColor: drawing.ColorFromHex("e0e0e0"), StrokeWidth: 1}},
		Series: series,
	}
	var b bytes.Buffer
	if err := c.Render(chart.SVG, &b); err != nil {
		return "", fmt.Errorf("chart %q: %w", l.Title, err)
	}
	svg := strings.Replace(b.String(), "</svg>", yName(l.YName, 16, height-60)+"</svg>", 1)
	return figure(l.Title, svg, legendHTML(legend)+notesHTML(notes)), nil
}

// stripeLen is the length (SVG units) of one stripe of lines drawn on one
// another: each of n lines shows stripeLen/n of it.
const stripeLen = 18.0

// lineGroup places a series among the lines it lies on: first is the index
// of the group's first series, rank its place in the group (0 for the
// first), size the group's length (1: a line on its own).
type lineGroup struct{ first, rank, size int }

// coinciding groups the solid series that lie on one another (covers, to
// within 2% of the y axis's top yMax: closer than the lines' width on the
// drawn plot); a series joins the group of the first earlier one it lies
// on. Dashed series (reference lines) are never grouped.
func (l Line) coinciding(yMax float64) []lineGroup {
	gs := make([]lineGroup, len(l.Series))
	for i := range gs {
		gs[i] = lineGroup{first: i, size: 1}
	}
	for i, s := range l.Series {
		if s.Dashed {
			continue
		}
		for j := range i {
			if gs[j].first == j && !l.Series[j].Dashed && covers(l.Series[j], s, 0.02*yMax) {
				gs[i] = lineGroup{first: j, rank: gs[j].size}
				gs[j].size++
				break
			}
		}
	}
	for i := range gs {
		gs[i].size = gs[gs[i].first].size
	}
	return gs
}

// scaleYs are the y values that set the y scale: those at YScaleFrom or
// later (every one of ys when none is, or YScaleFrom is 0).
func (l Line) scaleYs(ys []float64) []float64 {
	if l.YScaleFrom <= 0 {
		return ys
	}
	var out []float64
	for _, s := range l.Series {
		for i, x := range s.X {
			if i < len(s.Y) && x >= l.YScaleFrom && finite(s.Y[i]) {
				out = append(out, s.Y[i])
			}
		}
	}
	if len(out) == 0 {
		return ys
	}
	return out
}

// clipped is s with every y above top drawn at top, and the points that
// were (x, y).
func (s Series) clipped(top float64) (Series, [][2]float64) {
	var out [][2]float64
	ys := s.Y
	for i, y := range s.Y {
		if finite(y) && y > top && i < len(s.X) {
			if len(out) == 0 {
				ys = append([]float64(nil), s.Y...)
			}
			ys[i] = top
			out = append(out, [2]float64{s.X[i], y})
		}
	}
	s.Y = ys
	return s, out
}

// clippedNote names the points of series name drawn at the top of the
// plot, with their values: "publish -> ack p95 above the scale, drawn at
// its top: 25.0 at 1, 12.1 at 2".
func clippedNote(name string, pts [][2]float64) string {
	var parts []string
	for i, p := range pts {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("and %d more", len(pts)-5))
			break
		}
		parts = append(parts, FormatNumber(p[1], p[1])+" at "+strconv.FormatFloat(p[0], 'g', 4, 64))
	}
	return name + " above the scale, drawn at its top: " + strings.Join(parts, ", ")
}

func finite(y float64) bool { return !math.IsNaN(y) && !math.IsInf(y, 0) }

// finiteRuns splits s at its points without a value (a NaN or infinite
// Y: a second with no sample) into the runs of points between them, so
// each run is drawn as its own line and a gap stays a gap: go-chart
// v2.1.2 draws a NaN at y = -2^63, a spike off the chart.
func finiteRuns(s Series) []Series {
	var runs []Series
	cur := Series{}
	for i, y := range s.Y {
		if i >= len(s.X) {
			break
		}
		if math.IsNaN(y) || math.IsInf(y, 0) {
			if len(cur.X) > 0 {
				runs, cur = append(runs, cur), Series{}
			}
			continue
		}
		cur.X, cur.Y = append(cur.X, s.X[i]), append(cur.Y, y)
	}
	if len(cur.X) > 0 {
		runs = append(runs, cur)
	}
	return runs
}

// covers tells whether b's line lies on a's: same x, and y within tol of
// each other at 80% of the points or more.
func covers(a, b Series, tol float64) bool {
	if len(a.X) != len(b.X) || len(a.Y) != len(b.Y) || len(a.Y) == 0 {
		return false
	}
	same, both := 0, 0
	for i := range a.Y {
		if !finite(a.Y[i]) || !finite(b.Y[i]) {
			continue
		}
		both++
		if a.X[i] == b.X[i] && math.Abs(a.Y[i]-b.Y[i]) <= tol {
			same++
		}
	}
	return both > 0 && float64(same) >= 0.8*float64(both)
}

// extent lists every x of the series (with a value or not: a second
// without a sample is still on the time axis), XSpan's ends when set, the
// markers' x, and every finite y.
func (l Line) extent() (xs, ys []float64) {
	for _, s := range l.Series {
		for i := range s.X {
			xs = append(xs, s.X[i])
			if i < len(s.Y) && finite(s.Y[i]) {
				ys = append(ys, s.Y[i])
			}
		}
	}
	if l.XSpan.Max > l.XSpan.Min {
		xs = append(xs, l.XSpan.Min, l.XSpan.Max)
	}
	for _, m := range l.Markers {
		if len(xs) > 0 {
			xs = append(xs, m.X)
		}
	}
	return xs, ys
}

// padded is the x range with 3% of its width on each side (one unit
// around a single x), so no point or marker sits on the frame.
func padded(xs []float64) *chart.ContinuousRange {
	lo, hi := xs[0], xs[0]
	for _, x := range xs {
		lo, hi = math.Min(lo, x), math.Max(hi, x)
	}
	pad := (hi - lo) * 0.03
	if pad == 0 {
		pad = math.Max(1, math.Abs(lo)*0.1)
	}
	return &chart.ContinuousRange{Min: lo - pad, Max: hi + pad}
}

// niceMax is the top of the y axis: 10% above the largest value, at
// least 1 (go-chart refuses an empty range), rounded up to a round
// number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten).
func niceMax(ys []float64) float64 {
	hi := 0.0
	for _, y := range ys {
		hi = math.Max(hi, y)
	}
	hi *= 1.1
	if hi <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(hi)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= hi {
			return m * p
		}
	}
	return 10 * p
}

// yTicks are 0 to top in round steps; go-chart's own spacing gives 420,
// 840, ...
func yTicks(top float64) []chart.Tick {
	return roundTicks(0, top, 6)
}

// roundTicks are the multiples of a round step (1, 2, 2.5 or 5 times a
// power of ten) from lo to hi, at most n intervals.
func roundTicks(lo, hi float64, n int) []chart.Tick {
	span := hi - lo
	p := math.Pow(10, math.Floor(math.Log10(span/float64(n))))
	step := 10 * p
	for _, m := range []float64{1, 2, 2.5, 5} {
		if span/(m*p) <= float64(n) {
			step = m * p
			break
		}
	}
	// Decimals the step needs: 0 for 1, 5, 20; 1 for 0.5, 2.5; 2 for 0.25.
	dec := 0
	for dec < 6 && math.Abs(step*math.Pow(10, float64(dec))-math.Round(step*math.Pow(10, float64(dec)))) > 1e-9 {
		dec++
	}
	var out []chart.Tick
	for i := math.Ceil(lo/step - 1e-9); i*step <= hi+span*1e-9; i++ {
		v := i*step + 0 // + 0: no "-0"
		label := fmt.Sprintf("%.*f", dec, v)
		if dec == 0 && math.Abs(v) >= 10000 {
			label = group(label)
		}
		out = append(out, chart.Tick{Value: v, Label: label})
	}
	return out
}

func xTicks(ts []Tick, xr *chart.ContinuousRange) []chart.Tick {
	// go-chart scales the axis to the first and last tick: unlabelled
	// ticks at the padded ends keep the padding.
	out := []chart.Tick{{Value: xr.Min}}
	if len(ts) == 0 {
		out = append(out, roundTicks(xr.Min, xr.Max, 10)...)
	}
	for _, t := range ts {
		out = append(out, chart.Tick{Value: t.X, Label: html.EscapeString(t.Label)})
	}
	return append(out, chart.Tick{Value: xr.Max})
}

// numberFormatter prints tick values with as few decimals as the span
// needs: 1200, 12.5, 0.25.
func numberFormatter(span float64) chart.ValueFormatter {
	return func(v any) string {
		f, _ := v.(float64)
		return FormatNumber(f, span)
	}
}

// FormatNumber formats f for an axis spanning span: no decimals from a
// span of 20 up, one from 2, else two; thousands get a thin separator.
func FormatNumber(f, span float64) string {
	switch {
	case span >= 20:
		s := fmt.Sprintf("%.0f", f)
		if math.Abs(f) >= 10000 {
			s = group(s)
		}
		return s
	case span >= 2:
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprintf("%.2f", f)
}

func group(s string) string {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString("\u2009") // thin space
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func axisStyle() chart.Style {
	return chart.Style{FontSize: tickPt, FontColor: drawing.ColorFromHex("333333"), StrokeColor: drawing.ColorFromHex("888888"), StrokeWidth: 1}
}

func axisNameStyle() chart.Style {
	return chart.Style{FontSize: namePt, FontColor: drawing.ColorFromHex("222222")}
}

// yName is the y axis name, reading bottom to top as axis names do,
// centred on the plot at the canvas's left edge. go-chart can only write
// it top to bottom (and misplaces it rotated the other way), so its own
// is hidden and this one is added to the SVG.
func yName(name string, plotTop, plotBottom int) string {
	y := (plotTop + plotBottom) / 2
	return fmt.Sprintf(`<text x="16" y="%d" transform="rotate(-90,16,%d)" text-anchor="middle" style="fill:#222;font-size:%.1fpx;font-family:'Roboto Medium',sans-serif">%s</text>`,
		y, y, namePt*96/72, html.EscapeString(name))
}

func colorOr(hex, def string) drawing.Color {
	if hex == "" {
		hex = def
	}
	return drawing.ColorFromHex(strings.TrimPrefix(hex, "#"))
}

type legendItem struct {
	Color, Label    string
	Dashed, Striped bool
}

func legendHTML(items []legendItem) string {
	if len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(`<ul class="legend">`)
	for _, it := range items {
		cls := "sw"
		if it.Dashed || it.Striped {
			cls = "sw dash"
		}
		fmt.Fprintf(&b, `<li><span class="%s" style="border-color:%s"></span>%s</li>`, cls, it.Color, html.EscapeString(it.Label))
	}
	b.WriteString(`</ul>`)
	return b.String()
}

// notesHTML is the notes under a chart, one line each.
func notesHTML(notes []string) string {
	var b strings.Builder
	for _, n := range notes {
		b.WriteString(`<p class="chartnote">` + html.EscapeString(n) + `</p>`)
	}
	return b.String()
}

// figure wraps an SVG from go-chart: the XML namespace attributes (not
// needed inline in HTML5) are dropped, so the page carries no URL, and
// the SVG gets an accessible name.
func figure(title, svg, after string) template.HTML {
	svg = strings.Replace(svg, ` xmlns="http://www.w3.org/2000/svg"`, "", 1)
	svg = strings.Replace(svg, ` xmlns:xlink="http://www.w3.org/1999/xlink"`, "", 1)
	svg = strings.Replace(svg, "<svg ", `<svg role="img" aria-label="`+html.EscapeString(title)+`" `, 1)
	return template.HTML(`<figure class="chart"><figcaption>` + html.EscapeString(title) + `</figcaption>` + svg + after + `</figure>`)
}

// note stands in for a chart that has nothing to draw.
func note(title, why string) template.HTML {
	return template.HTML(`<figure class="chart"><figcaption>` + html.EscapeString(title) + `</figcaption><p class="nochart">` + html.EscapeString(why) + `</p></figure>`)
}

// Style is the CSS every report page includes: charts take the page's
// width, the legend sits under them, a chart never breaks across printed
// pages, and verdict colours (.pass .warn .fail .skip) are shared.
const Style = `
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:1.5em auto;padding:0 1.5em;max-width:1200px;color:#222;line-height:1.4}
h1{font-size:1.45em;margin:.2em 0 .4em} h2{font-size:1.15em;margin-top:1.6em;border-bottom:1px solid #ddd;padding-bottom:.15em} h3{font-size:1em;margin:1.2em 0 .3em}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;margin:.5em 0;font-size:.9em}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;vertical-align:top} th{background:#f3f3f3} td.l,th.l{text-align:left} td:not(.l){white-space:nowrap}
.pass{color:#2a7d2a}.fail{color:#b22}.warn{color:#a65f00}.skip{color:#777}
td.pass,td.fail,td.warn,td.skip{font-weight:600;text-align:left}
.banner{padding:.6em 1em;border-radius:4px;margin:.8em 0;font-weight:600}
.banner.fail{background:#fde2e2;border:1px solid #e4a0a0}.banner.warn{background:#fff3cd;border:1px solid #e6c86e}.banner.pass{background:#e3f3e0;border:1px solid #9fcf98}.banner.skip{background:#f3f3f3;border:1px solid #ccc}
figure.chart{margin:1em 0 1.4em;break-inside:avoid;page-break-inside:avoid}
figure.chart figcaption{font-weight:600;margin-bottom:.2em}
figure.chart svg{display:block;width:100%;height:auto}
ul.legend{list-style:none;margin:.2em 0 0;padding:0 0 0 4.5em;font-size:.85em;color:#333}
ul.legend li{display:inline-block;margin-right:1.4em}
ul.legend .sw{display:inline-block;width:1.8em;border-top:3px solid;vertical-align:middle;margin-right:.4em}
ul.legend .sw.dash{border-top-style:dashed}
.nochart{color:#777;font-style:italic}
.scale{display:inline-block;width:12em;height:.8em;vertical-align:middle;margin:0 .4em}
pre{background:#f7f7f7;padding:1em;font-size:.85em;white-space:pre-wrap;overflow-wrap:anywhere}
.chartnote{margin:.2em 0 0;padding:0 0 0 4.5em;font-size:.85em;color:#555}
@media print{body{max-width:none;margin:0;padding:0;font-size:10pt}h2{break-after:avoid}}
`
