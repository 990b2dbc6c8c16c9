package verdict

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var sample = []Check{
	{ID: "fd.soft", Status: Fail, Summary: `soft nofile 1024 < 50000 "sockets" & <more>`, Observed: "1024", Expected: ">= 50500", Remedy: "LimitNOFILE=50500"},
	{ID: "ports.collision", Status: Warn, Summary: "port 1883 in range", Remedy: "reserve it"},
	{ID: "conntrack", Status: Skip, Summary: "nf_conntrack not loaded"},
	{ID: "accept.backlog", Status: Pass, Summary: "ok"},
}

// junitDoc is a reader-side view of the JUnit schema, decoded independently
// of the writer's types.
type junitDoc struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []struct {
		Name     string `xml:"name,attr"`
		Tests    int    `xml:"tests,attr"`
		Failures int    `xml:"failures,attr"`
		Skipped  int    `xml:"skipped,attr"`
		Cases    []struct {
			Name    string `xml:"name,attr"`
			Class   string `xml:"classname,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Skipped   *struct{} `xml:"skipped"`
			SystemOut string    `xml:"system-out"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func TestWriteJUnitParses(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, "hostprep preflight", sample); err != nil {
		t.Fatal(err)
	}
	var d junitDoc
	if err := xml.Unmarshal(buf.Bytes(), &d); err != nil {
		t.Fatalf("JUnit output does not parse: %v\n%s", err, buf.String())
	}
	if d.Tests != 4 || d.Failures != 1 || d.Skipped != 1 || len(d.Suites) != 1 || len(d.Suites[0].Cases) != 4 {
		t.Fatalf("counts: tests %d failures %d skipped %d suites %d\n%s", d.Tests, d.Failures, d.Skipped, len(d.Suites), buf.String())
	}
	s := d.Suites[0]
	if s.Tests != 4 || s.Failures != 1 || s.Skipped != 1 {
		t.Errorf("suite counts %d/%d/%d", s.Tests, s.Failures, s.Skipped)
	}
	for _, c := range s.Cases {
		if c.Failure != nil && c.Skipped != nil {
			t.Errorf("%s is both failed and skipped", c.Name)
		}
		switch c.Name {
		case "fd.soft":
			if c.Failure == nil || c.Failure.Message != sample[0].Summary || !strings.Contains(c.Failure.Text, "remedy: LimitNOFILE=50500") {
				t.Errorf("fd.soft failure wrong: %+v", c.Failure)
			}
		case "ports.collision":
			if c.Failure != nil || c.Skipped != nil || !strings.Contains(c.SystemOut, "WARNING: port 1883") {
				t.Errorf("warning must be a passing case with system-out: %+v", c)
			}
		case "conntrack":
			if c.Skipped == nil || c.Failure != nil {
				t.Errorf("skip wrong: %+v", c)
			}
		case "accept.backlog":
			if c.Failure != nil || c.Skipped != nil {
				t.Errorf("pass wrong: %+v", c)
			}
		}
		if c.Class != "hostprep.preflight" {
			t.Errorf("classname %q", c.Class)
		}
	}
}

func TestWritePromParses(t *testing.T) {
	var buf bytes.Buffer
	extra := []Gauge{
		{Name: "hostprep_preflight_capacity_sockets", Help: "Sockets the host can hold.", Value: 19800},
		{Name: "hostprep_preflight_info", Help: "Run info.", Labels: map[string]string{"role": `lo"ad\gen`}, Value: 1},
	}
	if err := WriteProm(&buf, "hostprep_preflight", sample, extra); err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("prom output does not parse: %v\n%s", err, buf.String())
	}
	st := fams["hostprep_preflight_check_status"]
	if st == nil || len(st.Metric) != 4 || st.GetType().String() != "GAUGE" {
		t.Fatalf("check_status family wrong:\n%s", buf.String())
	}
	want := map[string]float64{"fd.soft": 2, "ports.collision": 1, "conntrack": -1, "accept.backlog": 0}
	for _, m := range st.Metric {
		id := m.Label[0].GetValue()
		if m.Gauge.GetValue() != want[id] {
			t.Errorf("%s = %v, want %v", id, m.Gauge.GetValue(), want[id])
		}
	}
	if v := fams["hostprep_preflight_verdict"].Metric[0].Gauge.GetValue(); v != 2 {
		t.Errorf("verdict %v, want 2", v)
	}
	if v := fams["hostprep_preflight_capacity_sockets"].Metric[0].Gauge.GetValue(); v != 19800 {
		t.Errorf("capacity %v", v)
	}
	if l := fams["hostprep_preflight_info"].Metric[0].Label[0].GetValue(); l != `lo"ad\gen` {
		t.Errorf("label escaping round trip gave %q", l)
	}
	if err := WriteProm(&buf, "bad name", nil, nil); err == nil {
		t.Error("invalid metric name accepted")
	}
}

// Failure text is CDATA (readable multi-line) and still round-trips, even
// with a "]]>" inside.
func TestJUnitCDATARoundTrip(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJUnit(&b, "s", []Check{{ID: "a", Status: Fail, Summary: "x", Remedy: "r]]>z"}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<![CDATA[") {
		t.Errorf("no CDATA:\n%s", b.String())
	}
	var d JUnitTestSuites
	if err := xml.Unmarshal(b.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	if got := d.Suites[0].Cases[0].Failure.Text; got != "remedy: r]]>z\n" {
		t.Fatalf("round trip gave %q", got)
	}
}
