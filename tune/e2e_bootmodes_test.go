package tune_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
)

// TestE2EFreshUserNofileAndBootModes replays a fresh user's findings in
// the sandbox: a unit with LimitNOFILE=infinity is not lowered; the
// host-wide soft nofile does not follow the caller's `ulimit -Sn`; a key
// a runtime sysctl.d file sets above an at-least bound passes verify
// --boot.
func TestE2EFreshUserNofileAndBootModes(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	cmdline, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	nrOpen := strconv.FormatUint(hostconf.Pid1NofileHard(string(cmdline)).Value, 10)

	// LimitNOFILE=infinity resolves to PID 1's hard limit at boot
	// (fs.nr_open before sysctl.d): never written lower, and kept as
	// infinity.
	prof := filepath.Join(t.TempDir(), "foo.yaml")
	if err := os.WriteFile(prof, []byte("systemd:\n  services: [foo]\n  limit_nofile: {soft: 65536, hard: 65536}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, e, c := n.Run("sh", "-c", "mkdir -p /etc/systemd/system && printf '[Service]\\nExecStart=/bin/true\\nLimitNOFILE=infinity\\n' > /etc/systemd/system/foo.service"); c != 0 {
		t.Fatal(e)
	}
	if _, e, c := n.Hostprep("tune", "apply", "--profile", prof); c != 0 {
		t.Fatalf("apply: %s", e)
	}
	dropIn, _ := n.ReadFile("/etc/systemd/system/foo.service.d/60-hostprep.conf")
	// kept as infinity: PID 1's hard limit at boot (nrOpen here) may be
	// more on another boot (sysctl.fs.nr_open on the kernel command line)
	if !strings.Contains(dropIn, "LimitNOFILE=infinity:infinity\n") {
		t.Errorf("LimitNOFILE=infinity lowered or pinned (PID 1's hard limit at boot %s):\n%s", nrOpen, dropIn)
	}
	if out, e, c := n.Hostprep("tune", "verify", "--boot"); c != 0 {
		t.Errorf("verify --boot: exit %d\n%s%s", c, out, e)
	}
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: %s", e)
	}

	// The caller's soft ulimit does not reach new login sessions.
	soft := regexp.MustCompile(`(?m)^\*\s+soft nofile (\d+)$`)
	var got []string
	for _, ulimit := range []string{"18000", "1024"} {
		if _, e, c := n.Run("bash", "-c", "ulimit -Sn "+ulimit+"; "+n.bin+" tune apply --profile sys-tune; exit $?"); c != 0 {
			t.Fatalf("apply under ulimit -Sn %s: %s", ulimit, e)
		}
		f, _ := n.ReadFile("/etc/security/limits.d/60-hostprep.conf")
		m := soft.FindStringSubmatch(f)
		if m == nil {
			t.Fatalf("no '* soft nofile' line:\n%s", f)
		}
		got = append(got, m[1])
		if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
			t.Fatalf("rollback: %s", e)
		}
	}
	if got[0] != got[1] || got[0] == "18000" {
		t.Errorf("host-wide soft nofile follows the caller's shell: %v under ulimit -Sn 18000 and 1024", got)
	}

	// /run/sysctl.d sets somaxconn 5000 at boot; ready-small wants at-least 4096.
	if _, e, c := n.Run("sh", "-c", "mkdir -p /run/sysctl.d && echo 'net.core.somaxconn = 5000' > /run/sysctl.d/90-run.conf"); c != 0 {
		t.Fatal(e)
	}
	if _, e, c := n.Hostprep("tune", "apply", "--profile", "ready-small"); c != 0 {
		t.Fatalf("apply: %s", e)
	}
	out, e, c := n.Hostprep("tune", "verify", "--boot")
	t.Logf("verify --boot:\n%s", out)
	if c != 0 || strings.Contains(out, "DIFFERS") {
		t.Errorf("verify --boot with somaxconn 5000 at boot, at-least 4096: exit %d\n%s%s", c, out, e)
	}
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: %s", e)
	}
}
