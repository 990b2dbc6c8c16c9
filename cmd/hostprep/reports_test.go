package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/iotdbfault"
	"github.com/hostprep/hostprep/internal/testenv"
)

// figures splits an HTML report into its charts, keyed by caption.
func figures(t *testing.T, page string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range strings.Split(page, `<figure class="chart">`)[1:] {
		f = f[:strings.Index(f, "</figure>")]
		m := regexp.MustCompile(`^<figcaption>([^<]*)</figcaption>`).FindStringSubmatch(f)
		if m == nil {
			t.Fatalf("figure without caption: %.200s", f)
		}
		out[m[1]] = f
	}
	return out
}

// runReport runs hostprep with args, which write the report file path,
// and returns the page after checking it fetches nothing. Exit 1 (a
// latency threshold failed on a busy machine) still writes the report.
func runReport(t *testing.T, path string, args ...string) string {
	t.Helper()
	stdout, stderr, code := testenv.Run(t, nil, args...)
	if code != 0 && code != 1 {
		t.Fatalf("hostprep %v: exit %d\n%s\n%s", args, code, stdout, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	selfContained(t, string(b))
	return string(b)
}

// selfContained fails the test if the page fetches anything.
func selfContained(t *testing.T, page string) {
	t.Helper()
	if m := regexp.MustCompile(`(?i).{0,40}https?://.{0,40}`).FindString(page); m != "" {
		t.Errorf("the page references a URL: %q", m)
	}
	if regexp.MustCompile(`(?i)<script|<link|<img|<iframe|@import|url\(`).MatchString(page) {
		t.Errorf("the page loads an external asset")
	}
}

// TestProbeMQTTHTML: `probe mqtt --html` against the embedded broker
// writes a self-contained report whose charts hold one point per second
// of the run (the --csv rows of the same run), and the heat map one cell
// per second and latency row.
func TestProbeMQTTHTML(t *testing.T) {
	dir := t.TempDir()
	html, csvPath := filepath.Join(dir, "r.html"), filepath.Join(dir, "r.csv")
	page := runReport(t, html, "probe", "mqtt", "--clients", "20", "--conn-rate", "200/s", "--qos", "1",
		"--pub-interval", "100ms", "--duration", "3s", "--html", html, "--csv", csvPath)
	f, _ := os.Open(csvPath)
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil || len(rows) < 4 {
		t.Fatalf("csv: %v, %d rows", err, len(rows))
	}
	secs := len(rows) - 1
	figs := figures(t, page)
	for caption, series := range map[string]int{
		"Connections over time":                  1, // connected (the target is a dashed line without dots)
		"Messages per second":                    3, // published, received, acknowledged
		"Latency over time (p95 of each second)": 2, // ack p95, e2e p95
	} {
		fig, ok := figs[caption]
		if !ok {
			t.Errorf("no chart %q; have %v", caption, keys(figs))
			continue
		}
		want := secs
		// The run's last row, shorter than a second (duration_s, the
		// last column), is the drain: the messages chart leaves it out.
		if last := rows[len(rows)-1]; caption == "Messages per second" {
			if d, err := strconv.ParseFloat(last[len(last)-1], 64); err == nil && d < 1 {
				want--
			}
		}
		if n := strings.Count(fig, "<circle"); n != series*want {
			t.Errorf("%s: %d points, want %d series x %d seconds", caption, n, series, want)
		}
		if !strings.Contains(fig, "<svg") || !strings.Contains(fig, `viewBox=`) {
			t.Errorf("%s: no scalable SVG", caption)
		}
	}
	// The connections chart reaches the 20 clients: its y axis goes above 20.
	if fig := figs["Connections over time"]; !strings.Contains(fig, "target (20 clients)") || !regexp.MustCompile(`>(20|25)</text>`).MatchString(fig) {
		t.Errorf("connections chart has no 20-client target/axis")
	}
	heat, ok := figs["Latency heat map: p95 of each second"]
	if !ok {
		t.Fatalf("no heat map; have %v", keys(figs))
	}
	// One filled cell path per second and row (2 rows at QoS 1) + nothing else filled.
	if n := strings.Count(heat, "<path"); n < 2*secs {
		t.Errorf("heat map: %d cells, want >= %d", n, 2*secs)
	}
	for _, want := range []string{"Delivery accounting", "mqtt.loss", "mqtt.complete", "Verdict:", "publish -&gt; ack"} {
		if !strings.Contains(page, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("left in the folder: %v (want r.html and r.csv only)", ents)
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestProbeFailureLeavesNoReport: a probe that cannot start measuring
// (nothing listens at the target; an IoTDB that refuses the probe's
// schema with 906, as the fault server does) exits 3 with one line
// saying why and leaves no --html or --csv file, not even an empty one,
// and no temporary file.
func TestProbeFailureLeavesNoReport(t *testing.T) {
	srv := iotdbfault.StartT(t, iotdbfault.None)
	srv.SetSchemaCode(906)
	host, port := srv.HostPort()
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"mqtt":      {[]string{"probe", "mqtt", "--broker", "tcp://127.0.0.1:1", "--clients", "2", "--duration", "1s"}, "127.0.0.1:1"},
		"iotdb":     {[]string{"probe", "iotdb", "--host", "127.0.0.1", "--port", "1", "--steps", "1", "--step-duration", "1s"}, "127.0.0.1:1"},
		"iotdb 906": {[]string{"probe", "iotdb", "--host", host, "--port", strconv.Itoa(port), "--steps", "1", "--step-duration", "1s"}, "906"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(tc.args, "--html", filepath.Join(dir, "r.html"), "--csv", filepath.Join(dir, "r.csv"))
			stdout, stderr, code := testenv.Run(t, nil, args...)
			if code != 3 || !strings.Contains(stderr, "hostprep: ") || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want 3 naming %q\n%s\n%s", code, tc.want, stdout, stderr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("a failed run left %v", ents)
			}
		})
	}
}

// TestProbeMQTTInterruptedReportSaysIncomplete: a run interrupted after
// it started measuring writes a report that says INCOMPLETE and why, and
// no verdict.
func TestProbeMQTTInterruptedReportSaysIncomplete(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "r.html")
	cmd := exec.Command(testenv.Binary(t), "probe", "mqtt", "--clients", "10", "--conn-rate", "6000/m", "--pub-interval", "100ms",
		"--duration", "60s", "--html", html)
	var out bytes.Buffer
	cmd.Stdout = &out
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the load runs: the first progress line (every 5 s of
	// load) says a second of the series was measured.
	measuring := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), "mqtt probe") {
				once = true
				close(measuring)
			}
		}
	}()
	select {
	case <-measuring:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("no progress line within 60 s")
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want 3\n%s", err, out.String())
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if !strings.Contains(page, "INCOMPLETE: interrupted after") || strings.Contains(page, "Verdict:") {
		t.Errorf("report does not say INCOMPLETE and why:\n%.2000s", page)
	}
	if len(figures(t, page)) < 4 {
		t.Errorf("partial report lost its charts")
	}
}

// TestReadyHTML: `ready --dry-run --html` (touches nothing: plans the
// tuning, passive preflight, MQTT probe against the embedded broker)
// writes a page with every step and the MQTT probe's charts; a folder
// that does not exist is refused (exit 2) before anything runs, and
// nothing is created.
func TestReadyHTML(t *testing.T) {
	dir := t.TempDir()
	html := filepath.Join(dir, "ready.html")
	// ready-small with a 3 s probe (the built-in's is 10 s): enough to
	// fill every chart.
	prof := filepath.Join(t.TempDir(), "ready-small-3s.yaml")
	if err := os.WriteFile(prof, []byte("include: [ready-small]\nprobe:\n  mqtt:\n    duration: 3s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	page := runReport(t, html, "ready", "--profile", prof, "--dry-run", "--html", html)
	figs := figures(t, page)
	for _, want := range []string{"Connections over time", "Messages per second", "Latency heat map: p95 of each second"} {
		if fig, ok := figs[want]; !ok || !strings.Contains(fig, "<svg") {
			t.Errorf("ready page lacks chart %q (have %v)", want, keys(figs))
		}
	}
	// A dry run that found nothing failing is DRY RUN; a busy machine may
	// fail a latency threshold (NOT READY). Never READY.
	if !regexp.MustCompile(`class="banner (warn|fail)">(DRY RUN|NOT READY)<`).MatchString(page) {
		t.Errorf("ready page shows no dry-run verdict banner")
	}
	for _, want := range []string{"hostprep ready on", "preflight", "probe-mqtt"} {
		if !strings.Contains(page, want) {
			t.Errorf("ready page lacks %q", want)
		}
	}
	missing := filepath.Join(dir, "no", "r.html")
	if _, stderr, code := testenv.Run(t, nil, "ready", "--profile", "ready-small", "--dry-run", "--html", missing); code != 2 || !strings.Contains(stderr, "--html") {
		t.Errorf("missing folder: exit %d %q, want 2 naming --html", code, stderr)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the folder: %v", ents)
	}
}
