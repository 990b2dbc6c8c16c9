package chart

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"math"
	"strings"

	chart "github.com/wcharczuk/go-chart/v2"
	"github.com/wcharczuk/go-chart/v2/drawing"
)

// HeatMap is a grid of latency cells: one column per second, one row per
// percentile (or band), the colour the value in Unit on a logarithmic
// scale from light yellow (fastest) to dark red (slowest), so a slow
// second stands out across the whole run. go-chart has no heat map
// series; the cells are drawn with its SVG renderer and font, in the
// same frame and type sizes as Line.
type HeatMap struct {
	Title string
	// XName and YName are the axis names with units.
	XName, YName string
	// Unit is the cells' unit ("ms"), shown on the colour scale.
	Unit string
	// Columns label the columns (e.g. the second "12"); Rows label the
	// rows from bottom to top ("p50", "p95", "p99", "max").
	Columns []string
	Rows    []string
	// Cells[c][r] is the value of column c, row r; NaN is "no sample"
	// (drawn grey).
	Cells [][]float64
	// Bands group columns under a label above the grid (IoTDB: the
	// columns of one step, "50 workers"), separated by a line.
	Bands []Band
	// ScaleFrom, when above 0, leaves columns 0..ScaleFrom-1 (a connect
	// ramp's first seconds) out of the colour scale: a cell of theirs
	// above it is drawn in the darkest colour and named in a note. When
	// no column from ScaleFrom on has a value, every column sets it.
	ScaleFrom int
}

// Band labels columns From..To-1.
type Band struct {
	From, To int
	Label    string
}

// ramp is ColorBrewer's YlOrRd: light for fast, dark red for slow, and
// still ordered when printed in grey.
var ramp = []string{"ffffcc", "ffeda0", "fed976", "feb24c", "fd8d3c", "fc4e2a", "e31a1c", "bd0026", "800026"}

var noSample = drawing.ColorFromHex("e8e8e8")

// HTML renders the heat map as a <figure> with an inline SVG and the
// colour scale under it (lowest and highest value). With no cell it
// renders a note instead. Errors come from the renderer.
// It is long on purpose: the SVG is drawn top to bottom in one pass,
// cells, axes, scale and notes, each a few lines.
func (h HeatMap) HTML() (template.HTML, error) {
	h = h.binned(maxColumns)
	lo, hi, ok := h.span()
	if !ok {
		return note(h.Title, "no data was measured"), nil
	}
	var above []string // cells before ScaleFrom above the scale
	if h.ScaleFrom > 0 {
		if slo, shi, ok := (HeatMap{Cells: h.Cells[min(h.ScaleFrom, len(h.Cells)):]}).span(); ok {
			for c, col := range h.Cells[:min(h.ScaleFrom, len(h.Cells))] {
				for r, v := range col {
					if v > shi && r < len(h.Rows) && c < len(h.Columns) {
						above = append(above, fmt.Sprintf("%s %s at %s", h.Rows[r], FormatNumber(v, v)+" "+h.Unit, h.Columns[c]))
					}
				}
			}
			lo, hi = math.Min(lo, slo), shi
		}
	}
	const right, top = 24, 34
	rowH := math.Max(18, math.Min(40, 220/float64(max(len(h.Rows), 1))))
	gridH := rowH * float64(len(h.Rows))
	hgt := int(top + gridH + 62)
	r, err := svgRenderer(hgt)
	if err != nil {
		return "", err
	}
	// Room left of the grid for the y axis name and the longest row label.
	r.SetFontSize(tickPt)
	left := 0
	for _, name := range h.Rows {
		left = max(left, r.MeasureText(name).Width())
	}
	left = min(left+48, width/3)
	colW := float64(width-left-right) / float64(len(h.Cells))
	for c, col := range h.Cells {
		for row := range h.Rows {
			v := math.NaN()
			if row < len(col) {
				v = col[row]
			}
			x0 := float64(left) + float64(c)*colW
			y0 := top + gridH - float64(row+1)*rowH
			fillRect(r, x0, y0, colW, rowH, h.color(v, lo, hi))
		}
	}
	text := func(s string, x, y int, size float64, anchorEnd bool) {
		r.SetFontSize(size)
		r.SetFontColor(drawing.ColorFromHex("333333"))
		if anchorEnd {
			x -= r.MeasureText(s).Width()
		}
		r.Text(html.EscapeString(s), x, y)
	}
	for row, name := range h.Rows {
		text(name, left-8, int(top+gridH-float64(row)*rowH-rowH/2+4), tickPt, true)
	}
	every := max(1, int(math.Ceil(float64(len(h.Columns))/16)))
	for c := range h.Columns {
		if (c-h.bandStart(c))%every != 0 {
			continue
		}
		x := left + int((float64(c)+0.5)*colW)
		text(h.Columns[c], x-r.MeasureText(h.Columns[c]).Width()/2, int(top+gridH+18), tickPt, false)
	}
	for _, b := range h.Bands {
		x0 := float64(left) + float64(b.From)*colW
		if b.From > 0 { // separator between bands
			r.SetStrokeColor(drawing.ColorWhite)
			r.SetStrokeWidth(3)
			r.MoveTo(int(x0), top-4)
			r.LineTo(int(x0), int(top+gridH))
			r.Stroke()
		}
		text(b.Label, int(x0)+2, top-10, tickPt, false)
	}
	text(h.XName, left+(width-left-right)/2-r.MeasureText(h.XName).Width()/2, int(top+gridH+46), namePt, false)
	var b bytes.Buffer
	if err := r.Save(&b); err != nil {
		return "", err
	}
	svg := strings.Replace(b.String(), "</svg>", yName(h.YName, top, int(top+gridH))+"</svg>", 1)
	var notes []string
	if len(above) > 0 {
		notes = append(notes, "above the scale, drawn darkest: "+strings.Join(above, ", "))
	}
	return figure(h.Title, svg, h.scaleHTML(lo, hi)+notesHTML(notes)), nil
}

// bandStart is the first column of the band holding column c (0 without
// bands), so column labels restart with each band.
func (h HeatMap) bandStart(c int) int {
	for _, b := range h.Bands {
		if c >= b.From && c < b.To {
			return b.From
		}
	}
	return 0
}

// maxColumns is the most columns a heat map draws (a one-hour run has
// 3600 seconds): about 3 SVG units each.
const maxColumns = 240

// binned merges runs of k neighbouring columns, within each band, into
// one holding each row's highest value (a slow second stays visible), so
// that at most about max columns are drawn; a merged column is labelled
// with its first column and the title says how many seconds one holds.
func (h HeatMap) binned(limit int) HeatMap {
	if len(h.Cells) <= limit {
		return h
	}
	k := (len(h.Cells) + limit - 1) / limit
	bands := h.Bands
	if len(bands) == 0 {
		bands = []Band{{From: 0, To: len(h.Cells)}}
	}
	out := h
	out.Cells, out.Columns, out.Bands = nil, nil, nil
	out.Title = fmt.Sprintf("%s (one column = the highest of %d)", h.Title, k)
	out.ScaleFrom = (h.ScaleFrom + k - 1) / k
	for _, b := range bands {
		from := len(out.Cells)
		for c := b.From; c < b.To; c += k {
			merged := make([]float64, len(h.Rows))
			for r := range merged {
				merged[r] = math.NaN()
				for cc := c; cc < min(c+k, b.To); cc++ {
					if r < len(h.Cells[cc]) && !math.IsNaN(h.Cells[cc][r]) && (math.IsNaN(merged[r]) || h.Cells[cc][r] > merged[r]) {
						merged[r] = h.Cells[cc][r]
					}
				}
			}
			out.Cells = append(out.Cells, merged)
			out.Columns = append(out.Columns, h.Columns[c])
		}
		if len(h.Bands) > 0 {
			out.Bands = append(out.Bands, Band{From: from, To: len(out.Cells), Label: b.Label})
		}
	}
	return out
}

// span is the lowest and highest positive cell value; ok is false when
// there is none.
func (h HeatMap) span() (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), 0
	for _, col := range h.Cells {
		for _, v := range col {
			if v > 0 && !math.IsInf(v, 0) {
				lo, hi, ok = math.Min(lo, v), math.Max(hi, v), true
			}
		}
	}
	return lo, hi, ok
}

// color maps v onto the ramp on a log scale between lo and hi.
func (h HeatMap) color(v, lo, hi float64) drawing.Color {
	if math.IsNaN(v) || v <= 0 {
		return noSample
	}
	f := 0.0
	if hi > lo {
		f = (math.Log(v) - math.Log(lo)) / (math.Log(hi) - math.Log(lo))
	}
	return rampAt(math.Max(0, math.Min(1, f)))
}

func rampAt(f float64) drawing.Color {
	pos := f * float64(len(ramp)-1)
	i := int(math.Floor(pos))
	if i >= len(ramp)-1 {
		return drawing.ColorFromHex(ramp[len(ramp)-1])
	}
	a, b := drawing.ColorFromHex(ramp[i]), drawing.ColorFromHex(ramp[i+1])
	t := pos - float64(i)
	mix := func(x, y uint8) uint8 { return uint8(math.Round(float64(x) + t*(float64(y)-float64(x)))) }
	return drawing.Color{R: mix(a.R, b.R), G: mix(a.G, b.G), B: mix(a.B, b.B), A: 255}
}

func fillRect(r chart.Renderer, x, y, w, h float64, c drawing.Color) {
	r.SetFillColor(c)
	r.SetStrokeColor(c)
	r.SetStrokeWidth(0)
	x0, y0 := int(math.Floor(x)), int(math.Floor(y))
	x1, y1 := int(math.Ceil(x+w)), int(math.Ceil(y+h))
	r.MoveTo(x0, y0)
	r.LineTo(x1, y0)
	r.LineTo(x1, y1)
	r.LineTo(x0, y1)
	r.Close()
	r.Fill()
}

// scaleHTML is the colour key: lowest value, the ramp, highest value,
// and the grey of "no sample".
func (h HeatMap) scaleHTML(lo, hi float64) string {
	var stops []string
	for _, c := range ramp {
		stops = append(stops, "#"+c)
	}
	return fmt.Sprintf(`<ul class="legend"><li>%s %s<span class="scale" style="background:linear-gradient(to right,%s)"></span>%s %s (log scale)</li><li><span class="sw" style="border-color:%s;border-top-width:.8em"></span>no sample</li></ul>`,
		FormatNumber(lo, lo), html.EscapeString(h.Unit), strings.Join(stops, ","), FormatNumber(hi, hi), html.EscapeString(h.Unit), noSample.String())
}
