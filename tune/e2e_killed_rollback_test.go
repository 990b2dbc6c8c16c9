package tune_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestE2EKilledRollbackIsReportedInterrupted kills `tune rollback` with
// SIGKILL (strace signal injection) at the removal of hostprep's sysctl.d
// file, its first undo: status then says "rollback interrupted" with the
// command to run and exits 1, and running rollback again finishes it.
func TestE2EKilledRollbackIsReportedInterrupted(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace not installed")
	}
	n := newNetns(t)
	prof := writeProfile(t, "somax.yaml", "sysctl:\n  net.core.somaxconn: {value: \"8192\", mode: at-least}\n")
	somax := n.Sysctl("net.core.somaxconn")
	if out, e, c := n.Hostprep("tune", "apply", "--profile", prof); c != 0 {
		t.Fatalf("apply: exit %d\n%s%s", c, out, e)
	}
	t.Cleanup(func() { n.Hostprep("tune", "rollback") })
	_, errOut, code := n.Run("strace", "-f", "-qq", "-o", "/dev/null", "-P", "/etc/sysctl.d/60-hostprep.conf", "-e", "trace=unlink,unlinkat",
		"-e", "inject=unlink,unlinkat:error=EIO:signal=SIGKILL:when=1", n.Bin, "tune", "rollback")
	if code == 0 {
		t.Fatalf("rollback was not killed:\n%s", errOut)
	}
	out, errOut, code := n.Hostprep("tune", "status")
	if code != 1 || !strings.Contains(out, "INTERRUPTED: rollback interrupted") || !strings.Contains(out+errOut, "`hostprep tune rollback` again") {
		t.Fatalf("status after a killed rollback: exit %d (want 1)\n%s%s", code, out, errOut)
	}
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback again: exit %d\n%s", c, e)
	}
	if out, _, c := n.Hostprep("tune", "status"); c != 0 || !strings.Contains(out, "nothing applied") {
		t.Errorf("status after the second rollback: exit %d\n%s", c, out)
	}
	if got := n.Sysctl("net.core.somaxconn"); got != somax {
		t.Errorf("somaxconn = %s after rollback, want %s", got, somax)
	}
}

// TestE2EKilledJournalWriteLeavesNoTemporary kills `tune apply` at the
// rename of its first journal write: the temporary file it leaves
// (/var/lib/hostprep/.state.json.tmp-N) is removed by the next apply,
// which says so.
func TestE2EKilledJournalWriteLeavesNoTemporary(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace not installed")
	}
	n := newNetns(t)
	prof := writeProfile(t, "somax.yaml", "sysctl:\n  net.core.somaxconn: {value: \"8192\", mode: at-least}\n")
	_, errOut, code := n.Run("strace", "-f", "-qq", "-o", "/dev/null", "-P", "/var/lib/hostprep/state.json", "-e", "trace=rename,renameat,renameat2",
		"-e", "inject=rename,renameat,renameat2:error=EIO:signal=SIGKILL:when=1", n.Bin, "tune", "apply", "--profile", prof)
	if code == 0 {
		t.Fatalf("apply was not killed:\n%s", errOut)
	}
	t.Cleanup(func() { n.Hostprep("tune", "rollback") })
	if out, _, _ := n.Run("sh", "-c", "ls -A /var/lib/hostprep"); !strings.Contains(out, ".state.json.tmp-") {
		t.Fatalf("the kill left no temporary file (the test did not hit the journal write): %q", out)
	}
	out, e, c := n.Hostprep("tune", "apply", "--profile", prof)
	if c != 0 || !strings.Contains(out+e, ".state.json.tmp-") {
		t.Fatalf("apply after the kill: exit %d\n%s%s", c, out, e)
	}
	if out, _, _ := n.Run("sh", "-c", "ls -A /var/lib/hostprep"); strings.Contains(out, ".tmp-") {
		t.Errorf("temporary files left: %q", out)
	}
}
