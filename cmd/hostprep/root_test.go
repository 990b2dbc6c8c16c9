package main

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// Usage mistakes exit 2 with one line naming what was wrong; a bare command
// group prints its help and exits 0.
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"nosuch"},
		{"tune", "nosuch"},
		{"probe", "nosuch"},
		{"tune", "plan", "--profile", "sys-tune", "extra"},
		{"profiles", "show"},
		{"profiles", "validate"},
		{"preflight", "--no-such-flag"},
		{"--log-format", "xml", "profiles", "list"},
	} {
		stdout, stderr, code := testenv.Run(t, nil, args...)
		if code != 2 {
			t.Errorf("hostprep %v: exit %d, want 2\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
			continue
		}
		if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 || !strings.HasPrefix(stderr, "hostprep: ") {
			t.Errorf("hostprep %v: stderr is not one 'hostprep: ' line: %q", args, stderr)
		}
	}
	for _, args := range [][]string{{"tune"}, {"probe"}, {"profiles"}} {
		stdout, _, code := testenv.Run(t, nil, args...)
		if code != 0 || !strings.Contains(stdout, "Available Commands") {
			t.Errorf("hostprep %v: exit %d, want 0 with help; stdout %q", args, code, stdout)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	stdout, _, code := testenv.Run(t, nil, "--version")
	if code != 0 || !strings.HasPrefix(stdout, "hostprep version ") {
		t.Errorf("--version: exit %d, stdout %q", code, stdout)
	}
}
