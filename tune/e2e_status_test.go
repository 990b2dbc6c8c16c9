package tune_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestE2EKilledApplyIsReportedInterrupted kills an apply with SIGKILL
// (strace signal injection) at the rename of its first owned file,
// /etc/sysctl.d/60-hostprep.conf, after the journal and the runtime keys
// were written: status and verify
// say the apply was interrupted and what to run, not "removed since
// hostprep wrote it"; rollback then restores everything.
func TestE2EKilledApplyIsReportedInterrupted(t *testing.T) {
	orig := guardGlobal(t)
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace not installed")
	}
	n := newNetns(t)
	somax := n.Sysctl("net.core.somaxconn")
	_, errOut, code := n.Run("strace", "-f", "-qq", "-o", "/dev/null", "-P", "/etc/sysctl.d/60-hostprep.conf", "-e", "trace=rename,renameat,renameat2",
		"-e", "inject=rename,renameat,renameat2:error=EIO:signal=SIGKILL:when=1", n.bin, "tune", "apply", "--profile", "sys-tune")
	if code == 0 {
		t.Fatalf("apply was not killed:\n%s", errOut)
	}
	t.Cleanup(func() { n.Hostprep("tune", "rollback") })
	if _, ok := n.ReadFile("/etc/sysctl.d/60-hostprep.conf"); ok {
		t.Fatal("the first owned file was written although the kill came at its rename")
	}
	out, errOut, code := n.Hostprep("tune", "status")
	if code != 0 || !strings.Contains(out, "INTERRUPTED: apply of profile sys-tune interrupted") || strings.Contains(out, "removed since hostprep wrote it") || !strings.Contains(out, "hostprep tune rollback") {
		t.Errorf("status after a killed apply: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = n.Hostprep("tune", "verify")
	if code != 1 || !strings.Contains(errOut, "interrupted") {
		t.Errorf("verify after a killed apply: exit %d\n%s", code, errOut)
	}
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s", c, e)
	}
	if got := n.Sysctl("fs.nr_open"); got != orig["fs.nr_open"] {
		t.Errorf("fs.nr_open = %s after rollback, want %s", got, orig["fs.nr_open"])
	}
	if got := n.Sysctl("net.core.somaxconn"); got != somax {
		t.Errorf("somaxconn = %s after rollback, want %s", got, somax)
	}
}
