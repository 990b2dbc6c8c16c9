package iotdb

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestWriteHTMLSelfContained(t *testing.T) {
	for name, st := range map[string][]Step{
		"knee":     steps([3]float64{50, 1000, 20}, [3]float64{100, 1800, 25}, [3]float64{150, 2100, 40}, [3]float64{200, 2050, 90}),
		"one step": steps([3]float64{4, 300, 2}),
		"all zero": steps([3]float64{1, 0, 0}, [3]float64{2, 0, 0}),
	} {
		t.Run(name, func(t *testing.T) {
			r := &Result{Target: "127.0.0.1:6667", ServerVersion: "2.0.10", Database: "root.hostprep_x", Scenario: ScenarioWrite,
				Mode: "closed", PoolSize: 200, Steps: st, Started: time.Now()}
			r.Knee = FindKnee(st, 1)
			r.Checks = Checks(&Config{Steps: []int{st[len(st)-1].Workers}}, st)
			path := filepath.Join(t.TempDir(), "report.html")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := r.WriteHTML(f); err != nil {
				t.Fatalf("WriteHTML: %v", err)
			}
			f.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			if n := strings.Count(page, "<svg"); n != 2 {
				t.Errorf("%d <svg> charts, want 2", n)
			}
			if regexp.MustCompile(`(?i)https?://`).MatchString(page) {
				t.Errorf("the page references a URL: %s", regexp.MustCompile(`(?i).{40}https?://.{40}`).FindString(page))
			}
			if regexp.MustCompile(`(?i)<script|<link|<img|<iframe|@import|url\(`).MatchString(page) {
				t.Errorf("the page loads an external asset")
			}
			for _, want := range []string{"Response time against concurrency", "Throughput against concurrency", strings.SplitN(r.Knee.Reading, " (", 2)[0]} {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			if r.Knee.Workers != 0 && !strings.Contains(page, "knee (200 workers)") {
				t.Errorf("knee not marked on the charts")
			}
		})
	}
}

// TestWriteHTMLIncompleteAndMarkers: a cut-short run says INCOMPLETE and
// why instead of a verdict; the peak and knee are dashed lines named in
// the legend, not labels drawn over the data; the charts scale with the
// page (viewBox, no fixed width).
func TestWriteHTMLIncompleteAndMarkers(t *testing.T) {
	st := steps([3]float64{50, 1000, 20}, [3]float64{100, 1800, 25}, [3]float64{150, 2100, 40}, [3]float64{200, 2050, 90})
	r := &Result{Target: "127.0.0.1:6667", Scenario: ScenarioWrite, Mode: "closed", Steps: st, Started: time.Now(), Verdict: "fail",
		Interrupted: true, StopReason: "interrupted after 2 of 4 steps"}
	r.Knee = FindKnee(st, 1)
	var b strings.Builder
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if !strings.Contains(page, "INCOMPLETE: interrupted after 2 of 4 steps") || strings.Contains(page, "Verdict:") {
		t.Errorf("an interrupted run's report does not say INCOMPLETE and why")
	}
	legend := regexp.MustCompile(`(?s)<ul class="legend">.*?</ul>`).FindString(page)
	for _, want := range []string{"peak (150 workers)", "knee (200 workers)"} {
		if !strings.Contains(legend, want) {
			t.Errorf("legend lacks %q: %s", want, legend)
		}
	}
	svg := regexp.MustCompile(`(?s)<svg.*?</svg>`).FindString(page)
	if strings.Contains(svg, ">peak<") || strings.Contains(svg, ">knee<") {
		t.Error("a marker label is drawn inside the chart")
	}
	if !strings.Contains(svg, "viewBox=") || regexp.MustCompile(`<svg[^>]*\swidth=`).MatchString(svg) {
		t.Error("chart has a fixed size")
	}
}

// TestWriteHTMLHeatMapBoundSuggestions: the heat map has one band per
// step and one cell per second and percentile (a second with no
// successful operation shown as no sample); each step says what limited
// it; the suggestions are listed with what was observed and the fix.
func TestWriteHTMLHeatMapBoundSuggestions(t *testing.T) {
	st := steps([3]float64{8, 1000, 5}, [3]float64{16, 1100, 12})
	for i := range st {
		for s := 0; s < 5; s++ {
			v := float64((i+1)*(s+1)) + 0.5
			st[i].Seconds = append(st[i].Seconds, SecondStats{Second: s, Ops: 100, P50Ms: v, P95Ms: 2 * v, P99Ms: 3 * v, MaxMs: 9 * v})
		}
	}
	st[1].Seconds[2].Ops, st[1].Seconds[2].Errors = 7, 7 // every operation failed in that second
	st[1].Bound, st[1].BoundReason = BoundPool, "pool use 94% with 8 workers waiting for a session"
	r := &Result{Target: "t:6667", Scenario: ScenarioWrite, Steps: st, Started: time.Now(), Verdict: "warn",
		Suggestions: []Suggestion{{Setting: "--pool-size", Observed: "pool use 94% at 16 workers", Fix: "raise --pool-size to at least 16"}}}
	r.Knee = FindKnee(st, 1)
	var b strings.Builder
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	heat := page[strings.Index(page, "<figcaption>Latency heat map: each second of each step</figcaption>"):]
	heat = heat[:strings.Index(heat, "</figure>")]
	for _, want := range []string{"8 workers", "16 workers", "p99", "no sample", "second of the step (s)"} {
		if !strings.Contains(heat, want) {
			t.Errorf("heat map lacks %q", want)
		}
	}
	// 10 seconds x 4 rows, each a filled path; the failed second is grey.
	if n := strings.Count(heat, "<path"); n < 40 {
		t.Errorf("heat map: %d cells, want >= 40", n)
	}
	if n := strings.Count(heat, "fill:rgba(232,232,232,1.0)"); n != 4 {
		t.Errorf("%d grey cells, want 4 (the second without a successful operation)", n)
	}
	for _, want := range []string{"<strong>pool</strong>: pool use 94% with 8 workers waiting", "Tuning suggestions", "--pool-size", "raise --pool-size to at least 16"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// No per-second data (an older result): no heat map, no empty frame.
	r.Steps[0].Seconds, r.Steps[1].Seconds = nil, nil
	b.Reset()
	if err := r.WriteHTML(&b); err != nil || strings.Contains(b.String(), "heat map") {
		t.Errorf("heat map without per-second data: %v", err)
	}
}
