package tune

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRollbackAfterKilledApplyRemovesOwnTempFiles: an apply killed inside
// WriteAtomic leaves .60-hostprep.conf.tmp-NNN next to the owned file;
// rollback removes it (and so the directories hostprep created), leaving
// the host exactly as before, and touches no other file, however alike.
// Apply also clears such leftovers. Before, rollback left the temporary
// file and the directories around it.
func TestRollbackAfterKilledApplyRemovesOwnTempFiles(t *testing.T) {
	h := newHost(t, nil)
	limitsD := filepath.Join(h.root, "etc/security/limits.d")
	must(t, os.Remove(limitsD)) // hostprep creates it

	before := h.snapshot()
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(limitsD, ".60-hostprep.conf.tmp-123456789")
	must(t, os.WriteFile(stale, []byte("half written"), 0o600))
	h.rollback()
	if _, err := os.Lstat(stale); err == nil {
		t.Errorf("rollback left %s", stale)
	}
	h.assertUnchanged(before)

	// Only hostprep's pattern goes.
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	foreign := []string{".60-hostprep.conf.tmp-12x", "60-hostprep.conf.tmp-1", ".other.conf.tmp-1", ".60-hostprep.conf.tmp-", ".60-hostprep.conf.tmp-1.bak"}
	for _, n := range foreign {
		must(t, os.WriteFile(filepath.Join(limitsD, n), []byte("x"), 0o600))
	}
	stale2 := filepath.Join(limitsD, ".60-hostprep.conf.tmp-42")
	must(t, os.WriteFile(stale2, []byte("half"), 0o600))
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale2); err == nil {
		t.Errorf("apply left %s", stale2)
	}
	must(t, os.WriteFile(stale2, []byte("half"), 0o600))
	h.rollback()
	if _, err := os.Lstat(stale2); err == nil {
		t.Errorf("rollback left %s", stale2)
	}
	for _, n := range foreign {
		if _, err := os.Lstat(filepath.Join(limitsD, n)); err != nil {
			t.Errorf("a file not matching hostprep's pattern was removed: %s: %v", n, err)
		}
	}
}
