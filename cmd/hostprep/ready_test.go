package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestReadyRefusesMissingResultFolder: a --json/--junit/--prom file in a
// folder that does not exist is bad input (exit 2) naming the flag and the
// folder, refused before any step runs (no "step starts" log, nothing on
// stdout), and the folder is not created. --dry-run keeps the host
// untouched even if the check were missing.
func TestReadyRefusesMissingResultFolder(t *testing.T) {
	for _, flag := range []string{"--json", "--junit", "--prom"} {
		t.Run(flag, func(t *testing.T) {
			missing := filepath.Join(t.TempDir(), "nonexist", "dir")
			file := filepath.Join(missing, "f.out")
			stdout, stderr, code := testenv.Run(t, nil, "ready", "--profile", "sys-tune", "--dry-run", flag, file)
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout %s\nstderr %s", code, stdout, stderr)
			}
			if !strings.Contains(stderr, flag+" "+file) || !strings.Contains(stderr, "folder "+missing+" does not exist") {
				t.Errorf("stderr does not name the flag and the folder:\n%s", stderr)
			}
			if strings.Contains(stderr, "step starts") || stdout != "" {
				t.Errorf("a step ran before the refusal:\nstdout %s\nstderr %s", stdout, stderr)
			}
			if _, err := os.Stat(missing); !os.IsNotExist(err) {
				t.Errorf("%s was created (err %v)", missing, err)
			}
		})
	}
}

// --sockets 0 typed out is bad input (exit 2), not read as "not given":
// ready.Run would take the profile's target silently in its place.
func TestReadySocketsZeroIsBadInput(t *testing.T) {
	for _, n := range []string{"0", "-5"} {
		_, stderr, code := testenv.Run(t, nil, "ready", "--profile", "ready-small", "--dry-run", "--sockets", n)
		if code != 2 || !strings.Contains(stderr, "--sockets "+n+": want a positive number") {
			t.Errorf("--sockets %s: exit %d, %q; want exit 2", n, code, stderr)
		}
	}
}
