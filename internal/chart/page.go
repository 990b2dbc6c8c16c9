package chart

import (
	"html/template"
	"io"

	chart "github.com/wcharczuk/go-chart/v2"
)

// Page is a report page of one probe run: the shared Style, a heading,
// the run's HTML body and, under "As printed", its text report.
type Page struct {
	// Title is the browser tab's title; Heading the page's h1.
	Title, Heading string
	Body           template.HTML
	// Printed is the text report as the CLI prints it ("" leaves the
	// section out).
	Printed string
}

// Write writes the self-contained page (nothing fetched) to w.
func (p Page) Write(w io.Writer) error {
	return pageTmpl.Execute(w, struct {
		Page
		Style template.CSS
	}{p, template.CSS(Style)})
}

var pageTmpl = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{{.Title}}</title>
<style>{{.Style}}</style></head><body>
<h1>{{.Heading}}</h1>
{{.Body}}
{{if .Printed}}<h2>As printed</h2>
<pre>{{.Printed}}</pre>{{end}}
</body></html>
`))

// svgRenderer is go-chart's SVG renderer at width x height with its
// default font set, for the charts drawn cell by cell (HeatMap, Bars).
func svgRenderer(height int) (chart.Renderer, error) {
	r, err := chart.SVG(width, height)
	if err != nil {
		return nil, err
	}
	font, err := chart.GetDefaultFont()
	if err != nil {
		return nil, err
	}
	r.SetFont(font)
	return r, nil
}
