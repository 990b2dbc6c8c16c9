package tune_test

import (
	"encoding/json"
	"strings"
	"testing"
)

type jsonError struct {
	Changed  *bool  `json:"changed"`
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// TestE2EStatusVerifyChangedFieldAndRootHint: status and verify JSON
// carry "changed": false; as non-root they say to run as root.
func TestE2EStatusVerifyChangedFieldAndRootHint(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	nobody := n.unprivileged()
	if _, e, c := n.Hostprep("tune", "apply", "--profile", "sys-tune"); c != 0 {
		t.Fatalf("apply: exit %d\n%s", c, e)
	}
	t.Cleanup(func() { n.Hostprep("tune", "rollback") })
	for _, verb := range []string{"status", "verify"} {
		out, errOut, code := n.Hostprep("tune", verb, "-o", "json")
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil || code != 0 {
			t.Fatalf("%s -o json: exit %d %v\n%s%s", verb, code, err, out, errOut)
		}
		if c, ok := m["changed"]; !ok || c != false {
			t.Errorf("%s -o json: changed = %v (present %v), want false", verb, c, ok)
		}
		out, errOut, code = n.Run(append(nobody, "tune", verb)...)
		if code != 3 || !strings.Contains(errOut, "run as root (the journal is 0600") {
			t.Errorf("unprivileged %s: exit %d, want 3 and a hint to run as root:\n%s%s", verb, code, out, errOut)
		}
	}
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s", c, e)
	}
}

// TestE2EJSONOnErrors: with -o json a failing tune command still prints
// one JSON object on stdout, with "changed", "error" and "exit_code", and
// the one-line error on stderr.
func TestE2EJSONOnErrors(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	nobody := n.unprivileged()

	out, errOut, code := n.Run(append(nobody, "tune", "apply", "--profile", "sys-tune", "-o", "json")...)
	var je jsonError
	if err := json.Unmarshal([]byte(out), &je); err != nil || code != 3 || je.ExitCode != 3 || je.Changed == nil || *je.Changed || !strings.Contains(je.Error, "needs root") {
		t.Fatalf("unprivileged apply -o json: exit %d, stdout %q (%v)", code, out, err)
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "needs root") {
		t.Errorf("stderr is not the one-line error: %q", errOut)
	}
	out, _, code = n.Hostprep("tune", "plan", "--profile", "no-such-profile", "-o", "json")
	je = jsonError{}
	if err := json.Unmarshal([]byte(out), &je); err != nil || code != 2 || je.ExitCode != 2 || je.Error == "" {
		t.Errorf("plan with a bad profile -o json: exit %d, stdout %q", code, out)
	}

	if _, e, c := n.Hostprep("tune", "apply", "--profile", "sys-tune"); c != 0 {
		t.Fatalf("apply: exit %d\n%s", c, e)
	}
	t.Cleanup(func() { n.Hostprep("tune", "rollback") })
	for _, verb := range []string{"status", "verify"} {
		out, _, code = n.Run(append(nobody, "tune", verb, "-o", "json")...)
		je = jsonError{}
		if err := json.Unmarshal([]byte(out), &je); err != nil || code != 3 || je.ExitCode != 3 || je.Error == "" {
			t.Errorf("unprivileged %s -o json: exit %d, stdout %q", verb, code, out)
		}
	}
	// A drifted verify: exit 1, and the JSON says so too.
	if _, e, c := n.Run("sysctl", "-qw", "net.core.somaxconn=100"); c != 0 {
		t.Fatal(e)
	}
	out, _, code = n.Hostprep("tune", "verify", "-o", "json")
	je = jsonError{}
	if err := json.Unmarshal([]byte(out), &je); err != nil || code != 1 || je.ExitCode != 1 || !strings.Contains(je.Error, "drifted") {
		t.Errorf("drifted verify -o json: exit %d, stdout %q", code, out)
	}
	n.Run("sysctl", "-qw", "net.core.somaxconn=32768")
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s", c, e)
	}
}
