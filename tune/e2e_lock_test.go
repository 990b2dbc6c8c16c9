package tune_test

import (
	"strings"
	"testing"
	"time"
)

// TestE2ELockWaitFlag: a negative --lock-wait is bad input (exit 2,
// nothing touched); --lock-wait 0 fails at once when the lock is held.
func TestE2ELockWaitFlag(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	for _, verb := range [][]string{{"apply", "--profile", "sys-tune"}, {"rollback"}} {
		args := append([]string{"tune"}, verb...)
		_, errOut, code := n.Hostprep(append(args, "--lock-wait", "-1s")...)
		if code != 2 || !strings.Contains(errOut, "--lock-wait -1s") {
			t.Fatalf("%v --lock-wait -1s: exit %d, want 2\n%s", verb, code, errOut)
		}
	}
	if _, _, c := n.Run("test", "-e", "/var/lib/hostprep/state.json"); c == 0 {
		t.Fatal("journal written although --lock-wait was refused")
	}
	release := n.holdLock()
	start := time.Now()
	_, errOut, code := n.Hostprep("tune", "apply", "--profile", "sys-tune", "--lock-wait", "0")
	took := time.Since(start)
	if code != 3 || !strings.Contains(errOut, "holds /run/hostprep.lock") {
		t.Fatalf("--lock-wait 0 with the lock held: exit %d\n%s", code, errOut)
	}
	if took > time.Second {
		t.Errorf("--lock-wait 0 waited %s, want an immediate failure", took)
	}
	release()
}
