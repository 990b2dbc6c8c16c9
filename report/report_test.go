package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
)

var fleetFiles = []string{"testdata/lg-03.json", "testdata/lg-01-older.json", "testdata/lg-02.json", "testdata/lg-01.json"}

// rowOrder is f's rows in order, "HOST=VERDICT" each, space-separated.
func rowOrder(f *Fleet) string {
	var order []string
	for _, r := range f.Rows {
		order = append(order, r.Host+"="+string(r.Verdict))
	}
	return strings.Join(order, " ")
}

func TestMergeTable(t *testing.T) {
	f, err := Merge(fleetFiles)
	if err != nil {
		t.Fatal(err)
	}
	if f.Hosts != 3 {
		t.Fatalf("hosts = %d, want 3 (lg-01 twice counts once)", f.Hosts)
	}
	want := "lg-02=NOT READY lg-03=READY WITH WARNINGS lg-01=READY"
	if got := rowOrder(f); got != want {
		t.Errorf("rows = %s, want %s (not ready first; lg-01's later run wins)", got, want)
	}
	lg02 := f.Rows[0]
	if got := strings.Join(lg02.Failing, ","); got != "preflight/fd.hard,preflight/fd.raise,probe-iotdb" {
		t.Errorf("lg-02 failing = %s", got)
	}
	if lg02.CapacitySockets == nil || *lg02.CapacitySockets != 19500 || lg02.MQTTE2EP95MS != nil {
		t.Errorf("lg-02 capacity %v, mqtt p95 %v: want 19500 and not measured", lg02.CapacitySockets, lg02.MQTTE2EP95MS)
	}
	lg01 := f.Rows[2]
	if lg01.IoTDBTPS == nil || *lg01.IoTDBTPS != 5200 || lg01.MQTTAckP95MS == nil || *lg01.MQTTAckP95MS != 1.8 {
		t.Errorf("lg-01 numbers wrong: %+v", lg01)
	}
	if len(f.Notes) != 1 || !strings.Contains(f.Notes[0], "kept testdata/lg-01.json") {
		t.Errorf("notes = %q, want one saying the later lg-01 run was kept", f.Notes)
	}
	if f.ByVerdict["READY"] != 1 || f.ByVerdict["NOT READY"] != 1 || f.ByVerdict["READY WITH WARNINGS"] != 1 {
		t.Errorf("by verdict = %v", f.ByVerdict)
	}
}

func TestText(t *testing.T) {
	_, text := mergedAs(t, (*Fleet).WriteText, fleetFiles...)
	lines := strings.Split(text, "\n")
	if !strings.HasPrefix(lines[0], "HOST") || !strings.HasPrefix(lines[1], "lg-02") {
		t.Fatalf("text table:\n%s", text)
	}
	for _, want := range []string{"19500 / 1000000", "preflight/fd.hard", "2.4", "5200", "3 hosts:"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	_, js := mergedAs(t, (*Fleet).WriteJSON, fleetFiles...)
	var back struct {
		Hosts int `json:"hosts"`
		Rows  []struct {
			Host     string   `json:"host"`
			Failing  []string `json:"failing"`
			MQTTLoss *float64 `json:"mqtt_loss"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(js), &back); err != nil {
		t.Fatal(err)
	}
	if back.Hosts != 3 || back.Rows[0].Host != "lg-02" || back.Rows[0].MQTTLoss != nil || back.Rows[2].MQTTLoss == nil {
		t.Errorf("json: %s", js)
	}
	if back.Rows[2].Failing == nil {
		t.Error("a ready host's failing must be [], not null")
	}
}

func TestHTMLSelfContained(t *testing.T) {
	_, page := mergedPage(t, fleetFiles...)
	// Nothing is fetched when the page is opened.
	if m := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|@import|url\(`).FindString(page); m != "" {
		t.Errorf("page loads something from outside: %q", m)
	}
	// A chart per host with probe data, plus the fleet charts.
	if n := strings.Count(page, "<svg"); n < 4 {
		t.Errorf("%d inline SVG charts, want at least 4 (capacity, fleet p95, lg-01 MQTT, lg-01 IoTDB)", n)
	}
	for _, want := range []string{"lg-01: IoTDB throughput per step", "lg-01: MQTT latency percentiles", "preflight: fd.hard: hard nofile 20000", "probe-iotdb: connect 10.0.0.5:6667"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Every SVG is well-formed XML.
	for _, s := range regexp.MustCompile(`(?s)<svg.*?</svg>`).FindAllString(page, -1) {
		d := xml.NewDecoder(strings.NewReader(s))
		for {
			if _, err := d.Token(); err != nil {
				if err.Error() != "EOF" {
					t.Fatalf("chart is not well-formed SVG: %v", err)
				}
				break
			}
		}
	}
}

func TestHTMLEscapesHostNames(t *testing.T) {
	r, err := Load("testdata/lg-01.json")
	if err != nil {
		t.Fatal(err)
	}
	r.Host = `<script>alert(1)</script>`
	row := rowOf(r, "x.json")
	f := &Fleet{Hosts: 1, ByVerdict: map[string]int{"READY": 1}, Rows: []Row{row}}
	var b bytes.Buffer
	if err := f.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") {
		t.Error("host name reached the page unescaped")
	}
}

func TestBadInput(t *testing.T) {
	for file, want := range map[string]string{
		"testdata/garbage.json":     "testdata/garbage.json: not JSON",
		"testdata/no-host.json":     `no "host"`,
		"testdata/bad-verdict.json": `verdict "OK"`,
		"testdata/missing.json":     "missing.json",
		// A real `probe iotdb --shard 1/2 -o json`: named as one, not "no host".
		"testdata/iotdb-shard-1of2.json": "a `hostprep probe iotdb` result of shard 1/2: IoTDB shard results are not merged",
	} {
		_, err := Merge([]string{"testdata/lg-01.json", file})
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v (code %d), want bad input mentioning %q", file, err, exitcode.Code(err), want)
		}
	}
	if _, err := Merge(nil); exitcode.Code(err) != exitcode.BadInput {
		t.Errorf("no files: %v", err)
	}
}

// TestMergeDryRun: a --dry-run result (verdict DRY RUN) is accepted and
// ranked after the NOT READY hosts and before the ones that were checked:
// it was not checked, so it is not known to be ready.
func TestMergeDryRun(t *testing.T) {
	f, err := Merge(append(fleetFiles, "testdata/lg-04-dryrun.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := "lg-02=NOT READY lg-04=DRY RUN lg-03=READY WITH WARNINGS lg-01=READY"
	if got := rowOrder(f); got != want {
		t.Errorf("rows = %s, want %s", got, want)
	}
	if f.ByVerdict["DRY RUN"] != 1 {
		t.Errorf("by verdict = %v", f.ByVerdict)
	}
}

// TestMergeRealRunBeatsLaterDryRun: a host readied and then dry-run again
// is shown by its real run, whatever the order of the files or the
// times; the note says why.
func TestMergeRealRunBeatsLaterDryRun(t *testing.T) {
	b, err := os.ReadFile("testdata/lg-01.json")
	if err != nil {
		t.Fatal(err)
	}
	dry := strings.Replace(strings.Replace(string(b), `"verdict":"READY"`, `"verdict":"DRY RUN","dry_run":true`, 1),
		`"started":"2026-11-29T10:00:00Z"`, `"started":"2026-11-30T10:00:00Z"`, 1)
	dryPath := filepath.Join(t.TempDir(), "lg-01-dry.json")
	if err := os.WriteFile(dryPath, []byte(dry), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, files := range [][]string{{"testdata/lg-01.json", dryPath}, {dryPath, "testdata/lg-01.json"}} {
		f, err := Merge(files)
		if err != nil {
			t.Fatal(err)
		}
		if got := rowOrder(f); got != "lg-01=READY" {
			t.Errorf("%v: rows %s, want lg-01=READY (the real run, not the later dry run)", files, got)
		}
		if len(f.Notes) != 1 || !strings.Contains(f.Notes[0], "kept testdata/lg-01.json (a real run, not the dry run)") {
			t.Errorf("%v: notes %q", files, f.Notes)
		}
	}
}
