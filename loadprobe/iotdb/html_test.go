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
