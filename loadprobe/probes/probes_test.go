package probes

import (
	"testing"

	"github.com/hostprep/hostprep/loadprobe"
)

// TestRegistry guards the list every command loops over: each probe once,
// found by its name, its ready step named after it, and a result of one
// probe never decoded as another's (report reads a step's result by
// asking each probe in turn).
func TestRegistry(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range All {
		n := p.Name()
		if n == "" || seen[n] {
			t.Errorf("probe name %q empty or repeated", n)
		}
		seen[n] = true
		if Lookup(n) != p || p.Title() == "" {
			t.Errorf("probe %q: Lookup or Title broken", n)
		}
		if got := loadprobe.StepName(n); got != "probe-"+n {
			t.Errorf("StepName(%q) = %q", n, got)
		}
	}
	if Lookup("nosuch") != nil {
		t.Error("Lookup of an unknown probe is not nil")
	}
	samples := map[string]string{
		"mqtt":  `{"run_id":"r1","broker":"tcp://127.0.0.1:1883","verdict":"pass"}`,
		"iotdb": `{"target":"127.0.0.1:6667","scenario":"write","steps":[],"verdict":"pass"}`,
	}
	for owner, js := range samples {
		for _, p := range All {
			_, ok := p.Decode([]byte(js))
			if ok != (p.Name() == owner) {
				t.Errorf("probe %s decodes the %s sample: %v", p.Name(), owner, ok)
			}
		}
	}
	for _, p := range All {
		if _, ok := p.Decode([]byte(`{"host":"h","steps":[]}`)); ok {
			t.Errorf("probe %s decodes a ready result as its own", p.Name())
		}
	}
}
