package tune

import (
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// TestFileMaxNotBelowAllocatedHandles guards the fs.file-max invariant: a
// profile setting fs.file-max below the file handles allocated now
// (fs.file-nr) is refused by plan and apply with exit 2 before any
// write; at-least over a higher host value, and a value above the count,
// plan as before.
func TestFileMaxNotBelowAllocatedHandles(t *testing.T) {
	h := newHost(t, map[string]string{"fs.file-max": "2466255", "fs.file-nr": "1447\t0\t2466255"})
	before := h.snapshot()
	p := &profiles.Profile{Name: "low", Sysctl: map[string]profiles.Sysctl{"fs.file-max": {Value: "1000", Mode: profiles.Exact}}}
	_, err := NewPlan(p, h.env)
	wantCode(t, err, exitcode.BadInput, "fs.file-max 1000", "1447 file handles allocated", "fs.file-nr", "ENFILE", "mode: at-least")
	_, err = h.apply(p)
	wantCode(t, err, exitcode.BadInput, "fs.file-max 1000")
	h.assertUnchanged(before)
	for _, ok := range []profiles.Sysctl{{Value: "1000", Mode: profiles.AtLeast}, {Value: "100000", Mode: profiles.Exact}} {
		p.Sysctl["fs.file-max"] = ok
		if _, err := NewPlan(p, h.env); err != nil {
			t.Errorf("fs.file-max %s %s: %v", ok.Value, ok.Mode, err)
		}
	}
}
