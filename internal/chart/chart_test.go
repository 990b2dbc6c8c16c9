package chart

import (
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// page wraps charts in a page for a look in a browser (HOSTPREP_CHART_DEMO=file).
func page(parts ...string) string {
	return "<!DOCTYPE html><html><head><meta charset=utf-8><style>" + Style + "</style></head><body>" + strings.Join(parts, "\n") + "</body></html>"
}

func TestLineStyle(t *testing.T) {
	xs := []float64{50, 100, 150, 200}
	l := Line{Title: "Throughput against concurrency", XName: "concurrency (workers)", YName: "throughput (operations/s)",
		Series:  []Series{{Name: "TPS", X: xs, Y: []float64{1000, 1800, 2100, 2050}}, {Name: "requested", X: xs, Y: []float64{2000, 2000, 2000, 2000}, Dashed: true}},
		Markers: []Marker{{X: 200, Label: "knee: 200 workers", Color: "e15759"}, {X: 150, Label: "peak: 150 workers"}},
		XTicks:  []Tick{{50, "50"}, {100, "100"}, {150, "150"}, {200, "200"}}}
	h, err := l.HTML()
	if err != nil {
		t.Fatal(err)
	}
	s := string(h)
	if !strings.Contains(s, `viewBox="0 0 1000 360"`) || regexp.MustCompile(`<svg[^>]*\swidth=`).MatchString(s) {
		t.Errorf("want a viewBox and no fixed width: %.200s", s)
	}
	if regexp.MustCompile(`(?i)https?://`).MatchString(s) {
		t.Error("chart carries a URL")
	}
	for _, want := range []string{"knee: 200 workers", "peak: 150 workers", "requested", `class="legend"`, "throughput (operations/s)", ">2000<", ">1000<"} {
		if !strings.Contains(s, want) {
			t.Errorf("chart lacks %q", want)
		}
	}
	// The y axis is on the left: its tick labels ("2500" is the top)
	// sit left of the middle of the canvas.
	m := regexp.MustCompile(`<text x="(\d+)" y="\d+"[^>]*>2500</text>`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no y tick 2500 in %s", s)
	}
	if x, _ := strconv.Atoi(m[1]); x > width/2 {
		t.Errorf("y axis tick at x=%d: on the right", x)
	}
	if strings.Contains(s, ">-0<") {
		t.Error("an axis says -0")
	}
	// One dot per point of the measured series (4), none on the dashed one.
	if n := strings.Count(s, "<circle"); n != 4 {
		t.Errorf("%d dots, want 4", n)
	}
	if f := os.Getenv("HOSTPREP_CHART_DEMO"); f != "" {
		hm, _ := demoHeat().HTML()
		os.WriteFile(f, []byte(page(string(h), string(hm))), 0o644)
	}
}

func TestLineEmptyAndSinglePoint(t *testing.T) {
	h, err := Line{Title: "empty", Series: []Series{{Name: "a"}}}.HTML()
	if err != nil || !strings.Contains(string(h), "no data was measured") {
		t.Errorf("empty: %v %s", err, h)
	}
	for name, y := range map[string]float64{"one point": 5, "all zero": 0} {
		h, err := Line{Title: name, Series: []Series{{Name: "a", X: []float64{4}, Y: []float64{y}}}}.HTML()
		if err != nil || strings.Count(string(h), "<circle") != 1 {
			t.Errorf("%s: %v %s", name, err, h)
		}
	}
}

func demoHeat() HeatMap {
	h := HeatMap{Title: "Latency per second", XName: "time since step start (s)", YName: "percentile", Unit: "ms", Rows: []string{"p50", "p95", "p99", "max"}}
	for c := 0; c < 40; c++ {
		h.Columns = append(h.Columns, strconv.Itoa(c%10))
		v := 1 + float64(c/10)
		h.Cells = append(h.Cells, []float64{v, v * 2, v * 4, v * 9})
	}
	h.Cells[7] = []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}
	for i := 0; i < 4; i++ {
		h.Bands = append(h.Bands, Band{From: i * 10, To: i*10 + 10, Label: strconv.Itoa(50*(i+1)) + " workers"})
	}
	return h
}

func TestHeatMap(t *testing.T) {
	h, err := demoHeat().HTML()
	if err != nil {
		t.Fatal(err)
	}
	s := string(h)
	// 40 columns x 4 rows of cells, each one filled path.
	if n := strings.Count(s, "<path"); n < 160 {
		t.Errorf("%d paths, want >= 160 cells", n)
	}
	for _, want := range []string{"200 workers", "p99", "1.00 ms", "36 ms", "no sample", "log scale"} {
		if !strings.Contains(s, want) {
			t.Errorf("heat map lacks %q", want)
		}
	}
	// The slowest cell is the darkest colour, the fastest the lightest.
	if !strings.Contains(s, "fill:rgba(128,0,38,1.0)") || !strings.Contains(s, "fill:rgba(255,255,204,1.0)") {
		t.Errorf("colour scale ends missing")
	}
	if h, _ := (HeatMap{Title: "none", Rows: []string{"p50"}, Cells: [][]float64{{math.NaN()}}}).HTML(); !strings.Contains(string(h), "no data") {
		t.Errorf("empty heat map: %s", h)
	}
}

func TestNiceMaxAndFormat(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{0, 1}, {2100, 2500}, {9.5, 12}, {0.3, 0.4}, {1, 1.2}, {50, 60}} {
		if got := niceMax([]float64{tc.in}); got != tc.want {
			t.Errorf("niceMax(%g) = %g, want %g", tc.in, got, tc.want)
		}
	}
	if got := FormatNumber(1234567, 1e6); got != "1\u2009234\u2009567" {
		t.Errorf("FormatNumber = %q", got)
	}
}

func TestBars(t *testing.T) {
	h, err := Bars{Title: "Capacity per host", XName: "connections", Labels: []string{"a-very-long-host-name.example", "b<c"}, Values: []float64{120000, 80000}}.HTML()
	if err != nil {
		t.Fatal(err)
	}
	s := string(h)
	for _, want := range []string{"a-very-long-host-name.example", "b&lt;c", "120\u2009000", "connections"} {
		if !strings.Contains(s, want) {
			t.Errorf("bars lack %q", want)
		}
	}
	if strings.Contains(s, "b<c") {
		t.Error("label not escaped")
	}
	if h, _ := (Bars{Title: "none"}).HTML(); !strings.Contains(string(h), "no data") {
		t.Errorf("empty bars: %s", h)
	}
	if f := os.Getenv("HOSTPREP_CHART_DEMO"); f != "" {
		os.WriteFile(f+".bars.html", []byte(page(s)), 0o644)
	}
}

// TestHeatMapLongRun: an hour of seconds is drawn as at most maxColumns
// columns, each the highest of the seconds it holds, within its band.
func TestHeatMapLongRun(t *testing.T) {
	h := HeatMap{Title: "hour", Rows: []string{"p95"}, Unit: "ms"}
	for s := 0; s < 3600; s++ {
		h.Columns = append(h.Columns, strconv.Itoa(s))
		v := 1.0
		if s == 1234 {
			v = 500 // one slow second
		}
		h.Cells = append(h.Cells, []float64{v})
	}
	h.Bands = []Band{{From: 0, To: 1800, Label: "a"}, {From: 1800, To: 3600, Label: "b"}}
	b := h.binned(maxColumns)
	if len(b.Cells) > maxColumns || len(b.Cells) < maxColumns/2 {
		t.Fatalf("%d columns", len(b.Cells))
	}
	if b.Bands[0].To != b.Bands[1].From || b.Bands[1].To != len(b.Cells) {
		t.Errorf("bands %v", b.Bands)
	}
	slow := 0
	for _, c := range b.Cells {
		if c[0] == 500 {
			slow++
		}
	}
	if slow != 1 || !strings.Contains(b.Title, "one column = the highest of 15") {
		t.Errorf("slow columns %d, title %q", slow, b.Title)
	}
	out, err := h.HTML()
	if err != nil || strings.Count(string(out), "<path") > 2*maxColumns {
		t.Errorf("%v: %d paths", err, strings.Count(string(out), "<path"))
	}
}

// A second with no sample (NaN) is a gap in its line, never a point:
// go-chart drew it at y = -2^63, a vertical spike from the last point off
// the chart (the MQTT probe's last, partial second has no latency sample).
// Every point drawn stays on the 1000 x 360 canvas, and the line has one
// piece per run of values.
func TestLineGapsStayGaps(t *testing.T) {
	l := Line{Title: "latency", XName: "s", YName: "ms", Series: []Series{{Name: "e2e p95",
		X: []float64{1, 2, 3, 4, 5, 6}, Y: []float64{1, 2, math.NaN(), 2, 3, math.NaN()}}}}
	h, err := l.HTML()
	if err != nil {
		t.Fatal(err)
	}
	s := string(h)
	for _, m := range regexp.MustCompile(`[ML] (-?\d+) (-?\d+)|c[xy]="(-?\d+)"`).FindAllStringSubmatch(s, -1) {
		for _, v := range m[1:] {
			if n, err := strconv.Atoi(v); v != "" && (err != nil || n < 0 || n > 1000) {
				t.Errorf("a point drawn off the canvas: %q", m[0])
			}
		}
	}
	if n := strings.Count(s, "stroke-width:2;stroke:rgba(78,121,167"); n != 2 {
		t.Errorf("%d pieces of the line, want 2 (the values before and after the gap)", n)
	}
}
