package tune

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
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

// TestImageModeRootMustExist: --root naming a directory that does not
// exist (or a file) is bad input for every command taking it (exit 2,
// naming --root), and nothing is created: not the tree, not a lock.
func TestImageModeRootMustExist(t *testing.T) {
	h := newHost(t, nil)
	h.env.Image = true
	h.env.LockFile = ""
	parent := t.TempDir()
	file := filepath.Join(parent, "a-file")
	must(t, os.WriteFile(file, nil, 0o644))
	for _, root := range []string{filepath.Join(parent, "image", "rootfs"), file} {
		h.env.Root = root
		_, err := h.apply(sysTune())
		wantCode(t, err, exitcode.BadInput, "--root", root)
		_, err = NewPlan(sysTune(), h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
		_, err = Rollback(context.Background(), h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
		_, err = StatusOf(h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
		_, _, err = Verify(sysTune(), h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
		_, err = VerifyBoot(h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 {
		t.Errorf("a refused --root left %d entries in %s, want only a-file", len(ents), parent)
	}
}
