package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// writeProfile writes y to name in a new directory and returns its path.
func writeProfile(t *testing.T, name, y string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

const zeroYAML = "sysctl: {net.core.somaxconn: {value: \"4096\", mode: at-least}}\n"

// TestFlagsOverrideTheProfileAfterSet: --set preflight.role makes a
// preflight section; --sockets given with it is used (a flag given
// explicitly overrides the profile, after --set), in preflight and in
// ready. Without --sockets (tune plan has none) the error names the --set
// and how to give the sockets.
func TestFlagsOverrideTheProfileAfterSet(t *testing.T) {
	zero := writeProfile(t, "zero.yaml", zeroYAML)
	type target struct {
		Sockets int    `json:"sockets"`
		Role    string `json:"role"`
	}
	out, stderr, code := testenv.Run(t, nil, "preflight", "--profile", zero, "--set", "preflight.role=loadgen", "--sockets", "100", "-o", "json")
	var pr struct{ Target target }
	if code == 2 || json.Unmarshal([]byte(out), &pr) != nil || pr.Target != (target{100, "loadgen"}) {
		t.Errorf("preflight: exit %d, target %+v, stderr %q; want a run for 100 sockets as loadgen", code, pr.Target, stderr)
	}
	out, stderr, code = testenv.Run(t, nil, "ready", "--profile", zero, "--no-tune", "--sockets", "15000", "--set", "preflight.role=loadgen", "-o", "json")
	var rr struct {
		Steps []struct {
			Name   string
			Result struct{ Target target }
		}
	}
	ok := false
	if code != 2 && json.Unmarshal([]byte(out), &rr) == nil {
		for _, s := range rr.Steps {
			ok = ok || s.Name == "preflight" && s.Result.Target == (target{15000, "loadgen"})
		}
	}
	if !ok {
		t.Errorf("ready: exit %d, stderr %q, stdout %.300s; want a preflight of 15000 sockets as loadgen", code, stderr, out)
	}
	// Without a preflight section and without --sockets: the error names
	// the profile's file as --profile loads it, and the flag to pass.
	if _, stderr, code := testenv.Run(t, nil, "preflight", "--profile", zero); code != 2 || !strings.Contains(stderr, `profile "`+zero+`" has no preflight section`) || !strings.Contains(stderr, "--sockets N") {
		t.Errorf("preflight without a target: exit %d, stderr %q; want exit 2 naming %s and --sockets N", code, stderr, zero)
	}
	_, stderr, code = testenv.Run(t, nil, "tune", "plan", "--profile", zero, "--set", "preflight.role=loadgen")
	if code != 2 || !strings.HasPrefix(stderr, `hostprep: --set "preflight.role=loadgen": preflight.sockets 0`) || !strings.Contains(stderr, "--set preflight.sockets=") {
		t.Errorf("tune plan: exit %d, stderr %q; want exit 2 naming the --set and --set preflight.sockets=N", code, stderr)
	}
}

// TestPreflightSectionWithoutRoleIsABroker: every field is optional; a
// preflight section without role is a broker's, as the CLI's default. A
// role written empty is still refused.
func TestPreflightSectionWithoutRoleIsABroker(t *testing.T) {
	p1 := writeProfile(t, "p1.yaml", "preflight: {sockets: 100}\n")
	if _, stderr, code := testenv.Run(t, nil, "profiles", "validate", p1); code != 0 {
		t.Errorf("validate: exit %d, stderr %q; want 0", code, stderr)
	}
	out, stderr, code := testenv.Run(t, nil, "profiles", "show", p1, "-o", "json")
	var p struct{ Preflight struct{ Role string } }
	if code != 0 || json.Unmarshal([]byte(out), &p) != nil || p.Preflight.Role != "broker" {
		t.Errorf("show: exit %d, role %q, stderr %q; want role broker", code, p.Preflight.Role, stderr)
	}
	empty := writeProfile(t, "p2.yaml", "preflight: {sockets: 100, role: \"\"}\n")
	if _, stderr, code := testenv.Run(t, nil, "profiles", "validate", empty); code != 2 || !strings.Contains(stderr, "p2.yaml:1:") || !strings.Contains(stderr, "preflight.role") {
		t.Errorf("validate role \"\": exit %d, stderr %q; want 2 at the role", code, stderr)
	}
}

// TestBadInputSaysTheFix: errors name the flag or file position and the
// fix: a YAML indentation error (at the line that breaks it, not where
// its block began), and --conn-rate text and 0 refused by the same rule.
func TestBadInputSaysTheFix(t *testing.T) {
	y1 := writeProfile(t, "y1.yaml", "sysctl:\n  net.core.somaxconn: \"4096\"\n  net.ipv4.tcp_fin_timeout: \"15\"\n   net.ipv4.tcp_tw_reuse: \"1\"\n")
	for _, c := range []struct {
		args []string
		want []string
		not  string
	}{
		{[]string{"profiles", "validate", y1}, []string{y1 + ":4:4:", "YAML syntax", "indentation"}, ""},
		{[]string{"preflight", "--sockets", "10", "--conn-rate", "abc"}, []string{`--conn-rate: "abc"`, "> 0"}, ">= 0"},
		{[]string{"preflight", "--sockets", "10", "--conn-rate", "0"}, []string{`--conn-rate: "0"`, "> 0"}, ">= 0"},
	} {
		_, stderr, code := testenv.Run(t, nil, c.args...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || c.not != "" && strings.Contains(stderr, c.not) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2, one line", c.args, code, stderr)
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: %q lacks %q", c.args, stderr, w)
			}
		}
	}
}
