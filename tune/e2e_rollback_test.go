package tune_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestE2ERollbackKeepsNrOpenForAHandEditedLimitsFile is the tester's
// case: apply mqtt-broker-1m, hand-edit the limits file, rollback: fs.nr_open
// stays at 2097152 (the file's hard nofile) and the JSON says why; after
// removing the file a second rollback restores it.
func TestE2ERollbackKeepsNrOpenForAHandEditedLimitsFile(t *testing.T) {
	orig := guardGlobal(t)
	n := newNetns(t)
	if _, e, c := n.Hostprep("tune", "apply", "--profile", "mqtt-broker-1m"); c != 0 {
		t.Fatalf("apply: exit %d\n%s", c, e)
	}
	t.Cleanup(func() {
		n.Run("rm", "-f", "/etc/security/limits.d/60-hostprep.conf")
		n.Hostprep("tune", "rollback")
	})
	if n.Sysctl("fs.nr_open") != "2097152" {
		t.Skipf("mqtt-broker-1m did not raise fs.nr_open to 2097152 here (now %s)", n.Sysctl("fs.nr_open"))
	}
	if _, e, c := n.Run("sh", "-c", "echo '# hand edit' >> /etc/security/limits.d/60-hostprep.conf"); c != 0 {
		t.Fatal(e)
	}
	out, errOut, code := n.Hostprep("tune", "rollback", "-o", "json")
	var r struct {
		Kept []struct {
			Key, File, Current, Reason string
		} `json:"kept"`
		JournalKept bool `json:"journal_kept"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("rollback: exit %d %v\n%s%s", code, err, out, errOut)
	}
	if got := n.Sysctl("fs.nr_open"); got != "2097152" {
		t.Fatalf("fs.nr_open lowered to %s under a limits file with hard nofile 2097152", got)
	}
	// Both the live fs.nr_open and hostprep's sysctl.d file, which sets
	// it at boot, are kept.
	kept := map[string]string{}
	for _, k := range r.Kept {
		kept[k.Key+k.File] = k.Reason
	}
	for _, what := range []string{"fs.nr_open", "/etc/sysctl.d/60-hostprep.conf"} {
		if !strings.Contains(kept[what], "kept because /etc/security/limits.d/60-hostprep.conf") || !r.JournalKept {
			t.Errorf("rollback JSON does not report %s kept: %s", what, out)
		}
	}
	n.Run("rm", "/etc/security/limits.d/60-hostprep.conf")
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("second rollback: exit %d\n%s", c, e)
	}
	if got := n.Sysctl("fs.nr_open"); got != orig["fs.nr_open"] {
		t.Errorf("fs.nr_open = %s after the second rollback, want %s", got, orig["fs.nr_open"])
	}
	if _, _, c := n.Run("test", "-e", "/var/lib/hostprep/state.json"); c == 0 {
		t.Error("journal left after the second rollback")
	}
}
