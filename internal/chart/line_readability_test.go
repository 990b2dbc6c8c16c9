package chart

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
)

// linePaths are the data lines of a rendered chart: colour (the rgba
// triple) to dash array ("" for solid), for the paths drawn wider than
// the axes (stroke-width 2 and up).
func linePaths(t *testing.T, svg string) map[string]string {
	t.Helper()
	out := map[string]string{}
	re := regexp.MustCompile(`(?s)<path (?:stroke-dasharray="([^"]*)")?\s*d="M[^"]*" style="stroke-width:(\d+);stroke:rgba\((\d+,\d+,\d+),`)
	for _, m := range re.FindAllStringSubmatch(svg, -1) {
		if w, _ := strconv.Atoi(m[2]); w >= 2 {
			out[m[3]] = m[1]
		}
	}
	return out
}

// Lines that lie on one another (published = acked = received) are each
// drawn in their own colour with a different dash, so every colour shows
// along the line, and the legend names all of them and what they lie on.
func TestLineCoincidingSeriesAreDistinguishable(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	same := []float64{100, 200, 200, 200, 200}
	h, err := Line{Title: "msgs", XName: "s", YName: "msg/s", Series: []Series{
		{Name: "published", X: xs, Y: same},
		{Name: "received", X: xs, Y: same, Color: Palette[4]},
		{Name: "requested", X: xs, Y: []float64{200, 200, 200, 200, 200}, Dashed: true, Color: "7f7f7f"},
		{Name: "acknowledged", X: xs, Y: same, Color: Palette[1]},
	}}.HTML()
	if err != nil {
		t.Fatal(err)
	}
	s := string(h)
	paths := linePaths(t, s)
	pub, rec, ack := paths["78,121,167"], paths["89,161,79"], paths["242,142,43"]
	if _, ok := paths["89,161,79"]; !ok {
		t.Fatalf("received not drawn: %v", paths)
	}
	if pub != "" || rec == "" || ack == "" || rec == ack {
		t.Errorf("dashes: published %q, received %q, acknowledged %q: want solid, then two different dashes", pub, rec, ack)
	}
	for _, want := range []string{">published<", ">received (lies on published)<", ">acknowledged (lies on published)<", ">requested<"} {
		if !strings.Contains(s, want) {
			t.Errorf("legend lacks %q", want)
		}
	}
}

// A line a little above another (end-to-end p95 just over ack p95, closer
// than the lines are wide) does not hide it: the pair is striped too.
func TestLineCloseSeriesStayVisible(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	h, err := Line{Title: "lat", Series: []Series{
		{Name: "ack p95", X: xs, Y: []float64{1.20, 1.10, 1.30, 1.20}},
		{Name: "e2e p95", X: xs, Y: []float64{1.22, 1.12, 1.32, 1.22}},
	}}.HTML()
	if err != nil {
		t.Fatal(err)
	}
	paths := linePaths(t, string(h))
	if paths["242,142,43"] == "" {
		t.Errorf("e2e p95 drawn solid over ack p95: %v", paths)
	}
	// Lines far apart stay solid.
	h, _ = Line{Title: "lat", Series: []Series{
		{Name: "ack p95", X: xs, Y: []float64{1, 1, 1, 1}},
		{Name: "e2e p95", X: xs, Y: []float64{2, 2, 2, 2}},
	}}.HTML()
	if p := linePaths(t, string(h)); p["242,142,43"] != "" || strings.Contains(string(h), "lies on") {
		t.Errorf("lines apart drawn striped: %v", p)
	}
}

// cxs are the x (SVG units) of the dots of colour rgb: where the chart
// puts a series' points.
func cxs(svg, rgb string) []int {
	var out []int
	for _, m := range regexp.MustCompile(`<circle cx="(\d+)" cy="\d+" r="\d+" style="[^"]*stroke:rgba\(`+rgb+`,`).FindAllStringSubmatch(svg, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// Charts over one run's time share XSpan: a chart whose last seconds have
// no value (a latency with no sample, a rate left out) still ends where
// the others end, so second 5 is at the same place in every chart.
func TestLineXSpanAlignsCharts(t *testing.T) {
	full := Series{Name: "connected", X: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, Y: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	short := Series{Name: "p95", X: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, Y: []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}}
	nan := Series{Name: "p95", X: full.X, Y: append(append([]float64(nil), short.Y...), math.NaN())}
	render := func(l Line) string {
		h, err := l.HTML()
		if err != nil {
			t.Fatal(err)
		}
		return string(h)
	}
	want := cxs(render(Line{Title: "a", Series: []Series{full}}), "78,121,167")[4]
	if got := cxs(render(Line{Title: "b", Series: []Series{nan}}), "78,121,167")[4]; got != want {
		t.Errorf("a last second without a value moves second 5 from x=%d to %d", want, got)
	}
	if got := cxs(render(Line{Title: "c", Series: []Series{short}, XSpan: Span{1, 12}}), "78,121,167")[4]; got != want {
		t.Errorf("with the run's XSpan second 5 is at x=%d, want %d", got, want)
	}
	if got := cxs(render(Line{Title: "d", Series: []Series{short}}), "78,121,167")[4]; got == want {
		t.Errorf("without XSpan a shorter series ends earlier: the test cannot see XSpan")
	}
}

// Points before YScaleFrom (a connect ramp's first second) do not set
// the y scale: they are drawn at its top, on the canvas, and a note under
// the chart gives their value.
func TestLineYScaleFrom(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5}
	l := Line{Title: "lat", YName: "ms", YScaleFrom: 2, Series: []Series{{Name: "e2e p95", X: xs, Y: []float64{80, 1.1, 1.3, 1.2, 1.25}}}}
	h, err := l.HTML()
	if err != nil {
		t.Fatal(err)
	}
	s := string(h)
	if !strings.Contains(s, ">1.50<") || strings.Contains(s, ">80<") || strings.Contains(s, ">100<") {
		t.Errorf("y scale not set by the steady points (top 1.50 expected)")
	}
	if !strings.Contains(s, `<p class="chartnote">e2e p95 above the scale, drawn at its top: 80 at 1</p>`) {
		t.Errorf("no note for the clipped point: %s", s[strings.Index(s, "</svg>"):])
	}
	for _, m := range regexp.MustCompile(`cy="(-?\d+)"`).FindAllStringSubmatch(s, -1) {
		if y, _ := strconv.Atoi(m[1]); y < 0 || y > height {
			t.Errorf("a point drawn off the canvas at y=%d", y)
		}
	}
	// No point after YScaleFrom: every point sets the scale.
	l.YScaleFrom = 10
	h, _ = l.HTML()
	if !strings.Contains(string(h), ">100<") || strings.Contains(string(h), "chartnote") {
		t.Errorf("with nothing after YScaleFrom the scale must hold every point")
	}
}

// The "As printed" block wraps its long lines on screen (no sideways
// scroll at 1400 px).
func TestPageWrapsPrinted(t *testing.T) {
	rule := regexp.MustCompile(`(?m)^pre\{[^}]*\}`).FindString(Style)
	if !strings.Contains(rule, "white-space:pre-wrap") || strings.Contains(rule, "overflow:auto") {
		t.Errorf("screen rule for pre does not wrap: %q", rule)
	}
}

// The banner words the verdict as the text report prints it.
func TestBannerSaysVerdictAsPrinted(t *testing.T) {
	for v, want := range map[verdict.Status]string{
		verdict.Warn: `<p class="banner warn">Verdict: WARN</p>`,
		verdict.Pass: `<p class="banner pass">Verdict: PASS</p>`,
		verdict.Fail: `<p class="banner fail">Verdict: FAIL</p>`,
	} {
		if got := string(Banner(v)); got != want {
			t.Errorf("Banner(%s) = %s, want %s", v, got, want)
		}
	}
}

// Columns before ScaleFrom (the ramp) do not set the heat map's colour
// scale either: the scale ends at the steady columns' highest value, the
// ramp's cell above it is drawn darkest and named under the map.
func TestHeatMapScaleFrom(t *testing.T) {
	h := HeatMap{Title: "p95", Unit: "ms", Rows: []string{"e2e p95"}, ScaleFrom: 1}
	for c, v := range []float64{80, 1, 2, 1.5} {
		h.Columns = append(h.Columns, strconv.Itoa(c+1))
		h.Cells = append(h.Cells, []float64{v})
	}
	out, err := h.HTML()
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.Contains(s, "2.0 ms (log scale)") || strings.Contains(s, "80 ms (log scale)") {
		t.Errorf("colour scale not set by the steady columns: %s", s[strings.Index(s, `<ul class="legend">`):])
	}
	if !strings.Contains(s, "above the scale, drawn darkest: e2e p95 80 ms at 1") {
		t.Error("the ramp's cell above the scale is not named")
	}
	if n := strings.Count(s, "fill:rgba(128,0,38,1.0)"); n != 2 {
		t.Errorf("%d darkest cells, want 2 (the ramp's and the steady maximum)", n)
	}
}
