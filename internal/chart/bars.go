package chart

import (
	"bytes"
	"html"
	"html/template"
	"math"
	"strings"

	"github.com/wcharczuk/go-chart/v2/drawing"
)

// Bars compares one number across labelled items (hosts): one
// horizontal bar per item, its value written at the bar's end, the value
// axis (XName, with the unit) under the bars, starting at 0. Horizontal,
// so long host names stay readable and many hosts still fit. Drawn with
// go-chart's SVG renderer and font, like HeatMap.
type Bars struct {
	Title, XName string
	Labels       []string
	Values       []float64
	// Color is a hex colour; empty is Palette[0].
	Color string
}

// HTML renders the bars as a <figure> with an inline SVG; with no item
// it renders a note. Errors come from the renderer.
func (b Bars) HTML() (template.HTML, error) {
	if len(b.Labels) == 0 {
		return note(b.Title, "no data was measured"), nil
	}
	const right, top, barH, gap = 80, 10, 24, 8
	hgt := top + len(b.Labels)*(barH+gap) + 62
	r, err := svgRenderer(hgt)
	if err != nil {
		return "", err
	}
	r.SetFontSize(tickPt)
	left := 40 // room for the longest label, at most a third of the width
	for _, l := range b.Labels {
		left = max(left, r.MeasureText(l).Width()+24)
	}
	left = min(left, width/3)
	top0 := niceMax(b.Values)
	plotW := float64(width - left - right)
	text := func(s string, x, y int, size float64, c string) {
		r.SetFontSize(size)
		r.SetFontColor(drawing.ColorFromHex(c))
		r.Text(html.EscapeString(s), x, y)
	}
	axisY := top + len(b.Labels)*(barH+gap)
	ticks := yTicks(top0)
	for _, t := range ticks { // grid lines and tick labels
		x := left + int(math.Round(t.Value/top0*plotW))
		r.SetStrokeColor(drawing.ColorFromHex("e0e0e0"))
		r.SetStrokeWidth(1)
		r.MoveTo(x, top)
		r.LineTo(x, axisY)
		r.Stroke()
		r.SetFontSize(tickPt)
		text(t.Label, x-r.MeasureText(t.Label).Width()/2, axisY+18, tickPt, "333333")
	}
	c := colorOr(b.Color, Palette[0])
	for i, l := range b.Labels {
		y := top + i*(barH+gap)
		v := b.Values[i]
		fillRect(r, float64(left), float64(y), math.Max(1, v/top0*plotW), barH, c)
		r.SetFontSize(tickPt)
		text(l, left-10-r.MeasureText(l).Width(), y+barH/2+4, tickPt, "333333")
		text(FormatNumber(v, top0), left+int(v/top0*plotW)+6, y+barH/2+4, tickPt, "222222")
	}
	r.SetStrokeColor(drawing.ColorFromHex("888888"))
	r.MoveTo(left, axisY)
	r.LineTo(width-right, axisY)
	r.Stroke()
	r.SetFontSize(namePt)
	text(b.XName, left+int(plotW)/2-r.MeasureText(b.XName).Width()/2, axisY+46, namePt, "222222")
	var out bytes.Buffer
	if err := r.Save(&out); err != nil {
		return "", err
	}
	return figure(b.Title, strings.TrimSpace(out.String()), ""), nil
}
