package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestVerifySuggestsRunnableCommandAgreeingWithCount: tune verify of an
// image that lacks one change suggests `tune plan` with the profile's
// path, the --set and the --root, and the pronoun agrees with the count;
// after drift of one item it says "sets it again".
func TestVerifySuggestsRunnableCommandAgreeingWithCount(t *testing.T) {
	zero := writeProfile(t, "zero.yaml", zeroYAML)
	img := t.TempDir()
	_, stderr, code := testenv.Run(t, nil, "tune", "verify", "--profile", zero, "--set", "net.core.somaxconn=4096", "--root", img)
	want := "`hostprep tune plan --profile " + zero + " --set net.core.somaxconn=4096 --root " + img + "` lists it"
	if code != 1 || !strings.Contains(stderr, "1 change pending") || !strings.Contains(stderr, want) {
		t.Errorf("verify: exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	if _, stderr, code := testenv.Run(t, nil, "tune", "apply", "--profile", zero, "--root", img); code != 0 {
		t.Fatalf("apply --root: exit %d: %s", code, stderr)
	}
	conf := filepath.Join(img, "etc/sysctl.d/60-hostprep.conf")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, append(b, "# edited\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = testenv.Run(t, nil, "tune", "verify", "--root", img)
	if code != 1 || !strings.Contains(stderr, "1 item drifted") || !strings.Contains(stderr, "` sets it again") {
		t.Errorf("verify after drift: exit %d, stderr %q; want 1 item ... sets it again", code, stderr)
	}
}

// TestTunePIDErrorSaysTheFix: --pid of no running process says to pass
// a running one's PID, with a command that finds it.
func TestTunePIDErrorSaysTheFix(t *testing.T) {
	if _, err := os.Stat("/proc/999999"); err == nil {
		t.Skip("pid 999999 runs")
	}
	_, stderr, code := testenv.Run(t, nil, "tune", "plan", "--profile", "sys-tune", "--pid", "999999")
	if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "--pid 999999") || !strings.Contains(stderr, "pidof") {
		t.Errorf("exit %d, stderr %q; want exit 2, one line naming --pid and pidof", code, stderr)
	}
}
