package chart

import (
	"bytes"
	"html/template"
	"io"
	"strings"

	"github.com/hostprep/hostprep/internal/verdict"

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

// WriteRun writes the page of one probe run to w: its Body is what
// section renders, its Printed what printed writes (the run's HTMLSection
// and WriteText). Errors come from section, printed or w.
func (p Page) WriteRun(w io.Writer, section func() (template.HTML, error), printed func(io.Writer) error) error {
	body, err := section()
	if err != nil {
		return err
	}
	var text bytes.Buffer
	if err := printed(&text); err != nil {
		return err
	}
	p.Body, p.Printed = body, text.String()
	return p.Write(w)
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

// ChecksTable is the table of checks every report shows: status (with its
// colour), ID, summary, and the fix for those that did not pass. No
// checks, no table.
func ChecksTable(checks []verdict.Check) (template.HTML, error) {
	if len(checks) == 0 {
		return "", nil
	}
	var b strings.Builder
	err := checksTmpl.Execute(&b, checks)
	return template.HTML(b.String()), err
}

var checksTmpl = template.Must(template.New("checks").Parse(`<table><tr><th class="l">status</th><th class="l">check</th><th class="l">summary</th><th class="l">fix</th></tr>
{{range .}}<tr><td class="{{.Status}}">{{.Status}}</td><td class="l">{{.ID}}</td><td class="l">{{.Summary}}</td><td class="l">{{if ne (print .Status) "pass"}}{{.Remedy}}{{end}}</td></tr>
{{end}}</table>`))

// Banner is a report's verdict banner, worded as the text report prints
// it ("Verdict: WARN" where the text says "verdict: WARN"), coloured by
// the verdict's class (.pass .warn .fail .skip).
func Banner(v verdict.Status) template.HTML {
	cls := template.HTMLEscapeString(string(v))
	return template.HTML(`<p class="banner ` + cls + `">Verdict: ` + strings.ToUpper(cls) + `</p>`)
}
