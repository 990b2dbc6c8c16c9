package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// SystemdBox is a Sandbox set up to run Debian's systemd as an oracle
// (`/lib/systemd/systemd --test --system`, as nobody): Dir is a temp
// directory nobody can read, bind-mounted inside the sandbox as
// /etc/systemd from Dir/etc/systemd (EtcDir), and, when asked, as
// /run/systemd/system from Dir/run/systemd/system (RunDir, "" otherwise).
// Tests write unit files, drop-ins and system.conf under EtcDir (and RunDir)
// and compare what systemd prints with hostconf's reading of Dir.
type SystemdBox struct {
	*Sandbox
	Dir, EtcDir, RunDir string
}

// NewSystemdBox makes a SystemdBox, with RunDir when withRun. It skips
// without /lib/systemd/systemd or setpriv (even in CI: the oracle is
// Debian's binary, not a test dependency the test command installs).
func NewSystemdBox(t testing.TB, withRun bool) *SystemdBox {
	t.Helper()
	for _, p := range []string{"/lib/systemd/systemd", "/usr/bin/setpriv"} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is needed: %v", p, err)
		}
	}
	b := &SystemdBox{Sandbox: NewSandbox(t), Dir: t.TempDir()}
	for _, d := range []string{filepath.Dir(b.Dir), b.Dir} {
		if err := os.Chmod(d, 0o755); err != nil { // systemd runs as nobody
			t.Fatal(err)
		}
	}
	b.EtcDir = filepath.Join(b.Dir, "etc/systemd")
	script := "mount --bind " + b.EtcDir + " /etc/systemd && mkdir -p /run/systemd"
	dirs := []string{b.EtcDir}
	if withRun {
		b.RunDir = filepath.Join(b.Dir, "run/systemd/system")
		dirs = append(dirs, b.RunDir)
		script += "/system && mount --bind " + b.RunDir + " /run/systemd/system"
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, e, c := b.Sandbox.Run("sh", "-c", script); c != 0 {
		t.Fatalf("mounts: %s", e)
	}
	return b
}
