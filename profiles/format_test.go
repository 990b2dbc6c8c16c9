package profiles

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"gopkg.in/yaml.v3"
)

// fieldCaseProfile returns the `profile:` fragment of a field case as YAML.
func fieldCaseProfile(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "fieldcases", file))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Profile yaml.Node `yaml:"profile"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(&c.Profile)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	testenv.WriteTree(t, dir, map[string]string{name: body})
	return filepath.Join(dir, name)
}

func TestValidateCodeBuiltProfile(t *testing.T) {
	p := &Profile{Name: "inline", Sysctl: map[string]Sysctl{"net.ipv4.tcp_wmem": {Value: "1 2"}}}
	checkErr(t, p.Validate(), []string{"profile inline:", "want three numbers"})
	p = &Profile{Name: "inline", Sysctl: map[string]Sysctl{"net.core.somaxconn": {Value: "1", Mode: "more"}}}
	checkErr(t, p.Validate(), []string{`mode "more"`})
	if err := (&Profile{}).Validate(); err != nil {
		t.Errorf("empty profile: %v", err)
	}
}

func TestOutputs(t *testing.T) {
	p, err := Load("mqtt-broker-1m", nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := p.JSONBytes()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Name   string
		Sysctl map[string]struct{ Value, Mode string }
		Probe  struct{ MQTT map[string]any }
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Name != "mqtt-broker-1m" || doc.Sysctl["net.ipv4.tcp_mem"].Mode != "at-least" {
		t.Errorf("json: %s", j)
	}
	if doc.Probe.MQTT["duration"] != "20s" {
		t.Errorf("durations should be Go duration strings in JSON, got %v", doc.Probe.MQTT["duration"])
	}
	if s := p.Summary(); s != "MQTT broker holding 1M connections at 2000 new connections/s" {
		t.Errorf("summary %q", s)
	}
	infos, err := Builtins()
	if err != nil || len(infos) != len(BuiltinNames()) {
		t.Errorf("Builtins() = %v, %v", infos, err)
	}
}

func TestSysctlYAMLForms(t *testing.T) {
	var m map[string]Sysctl
	in := "a: \"1 2\"\nb: 7\nc: {value: \"3\", mode: at-most, optional: true, comment: why}\n"
	if err := yaml.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]Sysctl{
		"a": {Value: "1 2", Mode: Exact},
		"b": {Value: "7", Mode: Exact},
		"c": {Value: "3", Mode: AtMost, Optional: true, Comment: "why"},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v", m)
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "a: 1 2\n") || !strings.Contains(string(out), "mode: at-most") {
		t.Errorf("marshal:\n%s", out)
	}
	if err := yaml.Unmarshal([]byte("x: {mode: exact}\n"), &m); err == nil {
		t.Error("a mapping without value must be refused")
	}
}
