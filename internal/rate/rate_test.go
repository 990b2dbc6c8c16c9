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

// A rate is kept unrounded, bounded (1e308 would overflow an int to
// -9223372036854775808 in Ceil) and shown with its unit.
func TestBoundAndText(t *testing.T) {
	for _, in := range []string{"1e308", "1e308/s", "10000001", "600000060/m"} {
		if got, err := Parse(in); err == nil || !strings.Contains(err.Error(), "above the limit of 10000000/s") {
			t.Errorf("Parse(%q) = %v, %v; want refused naming the limit", in, got, err)
		}
	}
	if got, err := Parse("600000000/m"); err != nil || got != Max {
		t.Errorf("Parse(600000000/m) = %v, %v; want the limit itself accepted", got, err)
	}
	if got := PerSecond(1e308).Ceil(); got != Max {
		t.Errorf("Ceil(1e308) = %d, want %d (never an overflowed int)", got, Max)
	}
	for in, want := range map[string]string{"1/m": "1/m (0.017/s)", "0.5/s": "30/m (0.500/s)", "1000": "1000/s", "90/m": "1.5/s", "0": "0/s"} {
		r, err := Parse(in)
		if err != nil || r.Text() != want {
			t.Errorf("Parse(%q).Text() = %q, %v; want %q", in, r.Text(), err, want)
		}
	}
	if r, _ := Parse("0.5/s"); r != 0.5 {
		t.Errorf("0.5/s = %v, want 0.5 (not rounded)", r)
	}
}

// Whole refuses a fractional rate instead of rounding 1/m up to 1/s.
func TestWhole(t *testing.T) {
	if n, err := PerSecond(2000).Whole(); err != nil || n != 2000 {
		t.Errorf("2000: %d %v", n, err)
	}
	for _, in := range []string{"1/m", "0.5/s", "1.5"} {
		r, _ := Parse(in)
		if n, err := r.Whole(); err == nil || !strings.Contains(err.Error(), r.Text()+" is not a whole number") {
			t.Errorf("Whole(%s) = %d, %v; want refused showing %s", in, n, err, r.Text())
		}
	}
}
