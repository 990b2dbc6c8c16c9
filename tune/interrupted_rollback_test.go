package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/tune/journal"
)

// TestStatusAfterAKilledRollbackSaysInterrupted guards the rollback's
// completion marker: a rollback killed after its first undo (the journal
// and host as a kill -9 leaves them) makes status say "rollback
// interrupted" with the command to run, status and verify exit 1, and
// running rollback again restores the host exactly.
func TestStatusAfterAKilledRollbackSaysInterrupted(t *testing.T) {
	h := newHost(t, nil)
	before := h.snapshot()
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	st, err := journal.Load(h.env.stateFile())
	must(t, err)
	// As startRollback leaves it, then the first undo: hostprep's
	// sysctl.d file is gone (it did not exist before).
	must(t, startRollback(h.env, st))
	must(t, os.Remove(filepath.Join(h.root, "etc/sysctl.d/60-hostprep.conf")))

	s, err := StatusOf(h.env)
	must(t, err)
	if !s.RollbackInterrupted || !strings.Contains(s.Interrupted, "rollback interrupted") || !strings.Contains(s.Interrupted, "`hostprep tune rollback") {
		t.Fatalf("interrupted = %q (rollback %v)", s.Interrupted, s.RollbackInterrupted)
	}
	wantCode(t, s.Err(), exitcode.Failed, "rollback interrupted", "hostprep tune rollback")
	var buf strings.Builder
	must(t, s.WriteText(&buf))
	if !strings.Contains(buf.String(), "INTERRUPTED: rollback interrupted") {
		t.Errorf("status text:\n%s", buf.String())
	}
	_, _, err = Verify(nil, h.env)
	wantCode(t, err, exitcode.Failed, "rollback interrupted")

	h.rollback()
	h.assertUnchanged(before)
}

// TestApplyAfterAKilledRollbackClearsTheMarker guards that an apply over
// a half-finished rollback makes the host match the journal again, so
// status no longer calls it interrupted.
func TestApplyAfterAKilledRollbackClearsTheMarker(t *testing.T) {
	h := newHost(t, nil)
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	st, err := journal.Load(h.env.stateFile())
	must(t, err)
	must(t, startRollback(h.env, st))
	must(t, os.Remove(filepath.Join(h.root, "etc/sysctl.d/60-hostprep.conf")))
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	s, err := StatusOf(h.env)
	must(t, err)
	if s.RollbackInterrupted || s.Interrupted != "" || s.Drift != 0 || s.Err() != nil {
		t.Fatalf("after apply: interrupted %q, drift %d", s.Interrupted, s.Drift)
	}
	h.rollback()
}

// TestStaleJournalTempsAreRemoved guards that the temporary files a kill
// during the journal's own write leaves (.state.json.tmp-N next to it)
// are removed under the lock by the next apply and the next rollback,
// and that only files of that exact pattern are.
func TestStaleJournalTempsAreRemoved(t *testing.T) {
	h := newHost(t, nil)
	dir := filepath.Dir(h.env.stateFile())
	must(t, os.MkdirAll(dir, 0o700))
	stale := filepath.Join(dir, ".state.json.tmp-1234567")
	other := filepath.Join(dir, ".state.json.tmp-keep.me")
	for _, p := range []string{stale, other} {
		must(t, os.WriteFile(p, []byte(`{"version":`), 0o600))
	}
	res, err := h.apply(sysTune())
	must(t, err)
	if _, err := os.Stat(stale); err == nil {
		t.Fatal("apply left the journal's stale temporary file")
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), stale) {
		t.Errorf("apply does not say it removed %s: %v", stale, res.Warnings)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("apply removed %s, which is not hostprep's temporary file: %v", other, err)
	}
	must(t, os.WriteFile(stale, []byte(`{`), 0o600))
	h.rollback()
	if _, err := os.Stat(stale); err == nil {
		t.Fatal("rollback left the journal's stale temporary file")
	}
}

// TestImageRootInputErrors guards the bad input of --root: the live
// host's own root and a symbolic link loop in the image are exit 2,
// naming what is wrong, and nothing is written.
func TestImageRootInputErrors(t *testing.T) {
	_, err := NewPlan(sysTune(), Env{Root: "/", Image: true, SkipPrivilegeCheck: true})
	wantCode(t, err, exitcode.BadInput, "--root / is the live host", "drop --root")

	img, env := newImage(t, map[string]string{"/etc/security/limits.conf": "# stock\n"})
	must(t, os.Symlink("sysctl.d", filepath.Join(img, "etc/sysctl.d")))
	_, err = NewPlan(sysTune(), env)
	wantCode(t, err, exitcode.BadInput, "/etc/sysctl.d is a symbolic link loop", "fix the link")
	_, err = Apply(t.Context(), sysTune(), Options{Env: env})
	wantCode(t, err, exitcode.BadInput, "/etc/sysctl.d is a symbolic link loop")
	if _, err := os.Stat(filepath.Join(img, "var/lib/hostprep")); err == nil {
		t.Fatal("a refused apply wrote its journal")
	}
}
