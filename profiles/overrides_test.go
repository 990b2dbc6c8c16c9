package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagOverridesApplyAfterSets: a flag given explicitly (--sockets,
// --role) overrides the profile and its --set, and a section a --set made
// is placed at that --set, so a field it lacks names it.
func TestFlagOverridesApplyAfterSets(t *testing.T) {
	f := filepath.Join(t.TempDir(), "zero.yaml")
	if err := os.WriteFile(f, []byte("sysctl: {net.core.somaxconn: {value: \"4096\", mode: at-least}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := LoadWith(f, []string{"preflight.role=loadgen", "preflight.sockets=5"}, []Override{{Flag: "--sockets 100", Key: "preflight.sockets", Value: "100"}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Preflight == nil || p.Preflight.Sockets != 100 || p.Preflight.Role != "loadgen" {
		t.Errorf("preflight %+v; want 100 sockets as loadgen", p.Preflight)
	}
	_, err = Load(f, []string{"preflight.role=loadgen"})
	if err == nil || !strings.HasPrefix(err.Error(), `--set "preflight.role=loadgen": preflight.sockets 0`) || !strings.Contains(err.Error(), "--set preflight.sockets=") {
		t.Errorf("role without sockets: %v; want the --set named and the fix", err)
	}
	_, err = LoadWith(f, nil, []Override{{Flag: "--role nosuch", Key: "preflight.role", Value: "nosuch"}, {Flag: "--sockets 1", Key: "preflight.sockets", Value: "1"}})
	if err == nil || !strings.HasPrefix(err.Error(), `--role nosuch: preflight.role "nosuch"`) {
		t.Errorf("bad --role: %v; want it named", err)
	}
}

// TestPreflightRoleDefaultsToBroker: the role may be left out (broker, as
// the CLI); written empty it is refused at its position.
func TestPreflightRoleDefaultsToBroker(t *testing.T) {
	p, err := Parse("p1.yaml", []byte("preflight: {sockets: 100}\n"))
	if err != nil || p.Preflight.Role != "broker" {
		t.Fatalf("role left out: %v, %+v; want broker", err, p)
	}
	_, err = Parse("p2.yaml", []byte("preflight: {sockets: 100, role: \"\"}\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "p2.yaml:1:") || !strings.Contains(err.Error(), `preflight.role ""`) {
		t.Errorf("role \"\": %v; want refused at its position", err)
	}
}

// TestYAMLSyntaxErrorAtTheBreakingLine: yaml.v3 names the line its block
// began (here line 1 for a mistake on line 4); the error names the line
// and column that break it, and how to fix it.
func TestYAMLSyntaxErrorAtTheBreakingLine(t *testing.T) {
	for _, c := range []struct{ y, at, fix string }{
		{"sysctl:\n  net.core.somaxconn: \"4096\"\n  net.ipv4.tcp_fin_timeout: \"15\"\n   net.ipv4.tcp_tw_reuse: \"1\"\n", "y.yaml:4:4:", "indentation"},
		{"limits:\n  nofile: {soft: 1, hard: 2}\n  users:\n    - a\n   x: 1\n", "y.yaml:5:4:", "indentation"},
		{"sysctl:\n  net.core.somaxconn: \"4096\n", "y.yaml:2:3:", "close the quote"},
	} {
		_, err := Parse("y.yaml", []byte(c.y))
		if err == nil || !strings.HasPrefix(err.Error(), c.at) || !strings.Contains(err.Error(), "YAML syntax") || !strings.Contains(err.Error(), c.fix) {
			t.Errorf("%q: %v; want %s ... %s", c.y, err, c.at, c.fix)
		}
	}
}
