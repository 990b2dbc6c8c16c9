package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// gen-man (hidden; the packages run it) writes one page per visible
// command, itself not among them, and refuses a missing directory with
// exit 2.
func TestGenManPages(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := testenv.Run(t, nil, "gen-man", dir); code != 0 {
		t.Fatalf("gen-man: exit %d: %s", code, stderr)
	}
	for _, page := range []string{"hostprep.1", "hostprep-ready.1", "hostprep-tune-apply.1", "hostprep-probe-mqtt.1"} {
		b, err := os.ReadFile(filepath.Join(dir, page))
		if err != nil || !strings.Contains(string(b), ".TH \"HOSTPREP\" \"1\"") {
			t.Errorf("%s: %v", page, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "hostprep-gen-man.1")); err == nil {
		t.Error("the hidden gen-man has a page")
	}
	if _, stderr, code := testenv.Run(t, nil, "gen-man", filepath.Join(dir, "missing")); code != 2 || !strings.Contains(stderr, "not a directory") {
		t.Errorf("missing dir: exit %d: %s", code, stderr)
	}
}
