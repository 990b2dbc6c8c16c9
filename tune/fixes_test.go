package tune

import (
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
