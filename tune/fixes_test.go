package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/lock"
)

// TestImageModeLocksTheImageTree: with --root DIR and no --lock, apply and
// rollback flock DIR itself (not the host's /run/hostprep.lock), and
// leave no lock file in the image.
func TestImageModeLocksTheImageTree(t *testing.T) {
	h := newHost(t, nil)
	h.env.Image = true
	h.env.LockFile = ""
	l, err := lock.Acquire(h.root, 0)
	must(t, err)
	before := h.snapshot()
	_, err = h.apply(sysTune())
	wantCode(t, err, exitcode.Environment, "holds "+h.root)
	h.assertUnchanged(before)
	l.Release()

	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	h.rollback()
	h.assertUnchanged(before)
	for _, p := range []string{"run", "run/hostprep.lock", "var/lib/hostprep"} {
		if _, err := os.Stat(filepath.Join(h.root, p)); err == nil {
			t.Errorf("image tree has %s after apply+rollback", p)
		}
	}
}

// TestStatusAfterAKilledApplySaysInterrupted: an apply killed after its
// journal write but before every change (simulated by putting the journal
// and host where a kill -9 leaves them) is reported as interrupted, with
// what to run, not as drift of files never written; verify exits 1 with
// the same advice; rollback and a new apply both work from there.
func TestStatusAfterAKilledApplySaysInterrupted(t *testing.T) {
	h := newHost(t, nil)
	before := h.snapshot()
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	st, err := journal.Load(h.env.stateFile())
	must(t, err)
	if st.Interrupted() != nil {
		t.Fatal("a completed apply is marked in progress")
	}
	// Killed after the runtime keys but before the files: the last key and
	// every file are not written yet.
	st.Applies[len(st.Applies)-1].InProgress = true
	must(t, journal.Save(h.env.stateFile(), st))
	h.writeKey("net.ipv4.tcp_max_tw_buckets", stockSysctl["net.ipv4.tcp_max_tw_buckets"])
	for _, f := range []string{"etc/sysctl.d/60-hostprep.conf", "etc/security/limits.d/60-hostprep.conf"} {
		must(t, os.Remove(filepath.Join(h.root, f)))
	}

	s, err := StatusOf(h.env)
	must(t, err)
	if !strings.Contains(s.Interrupted, "apply of profile sys-tune interrupted") || !strings.Contains(s.Interrupted, "hostprep tune apply --profile sys-tune") || !strings.Contains(s.Interrupted, "hostprep tune rollback") {
		t.Errorf("interrupted = %q", s.Interrupted)
	}
	if s.Drift != 0 {
		t.Errorf("drift %d, want 0 (nothing drifted, the apply stopped)", s.Drift)
	}
	var buf strings.Builder
	must(t, s.WriteText(&buf))
	if strings.Contains(buf.String(), "removed since hostprep wrote it") || !strings.Contains(buf.String(), "INTERRUPTED:") || strings.Count(buf.String(), "PENDING") != 3 {
		t.Errorf("status text:\n%s", buf.String())
	}
	_, _, err = Verify(nil, h.env)
	wantCode(t, err, exitcode.Failed, "interrupted", "tune rollback")

	// Applying again finishes it.
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	if s, err := StatusOf(h.env); err != nil || s.Interrupted != "" || s.Drift != 0 {
		t.Fatalf("after a new apply: %+v %v", s, err)
	}
	h.rollback()
	h.assertUnchanged(before)
}
