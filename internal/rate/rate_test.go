package rate

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"gopkg.in/yaml.v3"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]PerSecond{
		"1000": 1000, "1000/s": 1000, " 1000 / s ": 1000, "60000/m": 1000, "90/m": 1.5, "2.5": 2.5, "0": 0, "0/s": 0, "1e3/s": 1000,
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/s", "abc", "-1", "-5/s", "1000/h", "1000/", "NaN", "Inf", "1000/s/s", "10 00"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", in, got)
		} else if !strings.Contains(err.Error(), "1000/s") {
			t.Errorf("Parse(%q): error %q does not say what a rate looks like", in, err)
		}
	}
}

func TestFlag(t *testing.T) {
	var r PerSecond = 100
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	fs.Var(&r, "conn-rate", "connections per second")
	if err := fs.Parse([]string{"--conn-rate", "1000/s"}); err != nil || r != 1000 {
		t.Fatalf("%v %v", err, r)
	}
	if err := fs.Parse([]string{"--conn-rate=120/m"}); err != nil || r != 2 {
		t.Fatalf("%v %v", err, r)
	}
	if err := fs.Parse([]string{"--conn-rate", "fast"}); err == nil || !strings.Contains(err.Error(), `"fast" is not a rate`) {
		t.Errorf("bad value: %v", err)
	}
	if got := fs.Lookup("conn-rate").Value.String(); got != "2" {
		t.Errorf("String() = %q", got)
	}
}

func TestYAML(t *testing.T) {
	var v struct {
		A, B, C PerSecond
	}
	if err := yaml.Unmarshal([]byte("a: 1000\nb: 1000/s\nc: \"60000/m\"\n"), &v); err != nil || v.A != 1000 || v.B != 1000 || v.C != 1000 {
		t.Fatalf("%v %+v", err, v)
	}
	if err := yaml.Unmarshal([]byte("a: 10/h\n"), &v); err == nil {
		t.Error("10/h accepted")
	}
	if err := yaml.Unmarshal([]byte("a: [1]\n"), &v); err == nil {
		t.Error("a list accepted")
	}
	out, err := yaml.Marshal(struct{ A PerSecond }{1.5})
	if err != nil || string(out) != "a: 1.5\n" {
		t.Errorf("marshal: %q %v", out, err)
	}
	if (PerSecond(16.1)).Ceil() != 17 || (PerSecond(0)).Ceil() != 0 {
		t.Error("Ceil")
	}
}
