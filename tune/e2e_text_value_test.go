package tune_test

import (
	"strings"
	"testing"
)

// TestE2ETextValueKeepsInnerWhiteSpace: tune plan keeps a text value as
// the kernel and systemd-sysctl keep it: kernel.core_pattern
// "/tmp/core  x %e" (two blanks) or with a tab names another file than
// "/tmp/core x %e", so the plan sets it as written, trimmed at its ends
// only. kernel.core_pattern is global: this test only plans, never
// applies.
func TestE2ETextValueKeepsInnerWhiteSpace(t *testing.T) {
	n := newNetns(t)
	const key = "kernel.core_pattern"
	for yaml, want := range map[string]string{
		`"/tmp/core  x %e"`:     "/tmp/core  x %e",
		`"/tmp/core\tx %e"`:     "/tmp/core\tx %e",
		`"  /tmp/core  x %e  "`: "/tmp/core  x %e",
	} {
		p := writeProfile(t, "core.yaml", "sysctl:\n  "+key+": "+yaml+"\n")
		out, errOut, code := n.Hostprep("tune", "plan", "--profile", p, "-o", "json")
		if code != 0 {
			t.Fatalf("plan %s: exit %d\n%s%s", yaml, code, out, errOut)
		}
		found := false
		for _, c := range decode(t, out).Changes {
			if c.Key == key && c.Layer == "runtime" {
				found = true
				if c.To != want {
					t.Errorf("plan %s: runtime to %q, want %q", yaml, c.To, want)
				}
			}
		}
		if !found && !strings.Contains(out, `"key": "`+key+`"`) {
			t.Errorf("plan %s: no change or skip of %s:\n%s", yaml, key, out)
		}
	}
}
