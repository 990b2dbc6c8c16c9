package profiles

import (
	"os"
	"path/filepath"
	"reflect"
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

func TestSets(t *testing.T) {
	p, err := Load("sys-tune", []string{
		"net.core.somaxconn=65535",
		"net.ipv4.tcp_rmem=4096,131072,16777216",
		"vm.max_map_count=262144",
		"limits.nofile.soft=524288",
		"preflight.sockets=1000",
		"preflight.role=broker",
		"preflight.conn_rate=100",
		"reserve_ports=1883, 8883",
	})
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Sysctl["net.core.somaxconn"]; s.Value != "65535" || s.Mode != AtLeast || s.Comment == "" {
		t.Errorf("somaxconn %+v: value set, mode and comment kept", s)
	}
	if s := p.Sysctl["net.ipv4.tcp_rmem"]; s.Value != "4096 131072 16777216" {
		t.Errorf("tcp_rmem %q (commas become spaces)", s.Value)
	}
	if s := p.Sysctl["vm.max_map_count"]; s.Value != "262144" || s.Mode != Exact {
		t.Errorf("new key %+v", s)
	}
	if p.Limits.Nofile.Soft != 524288 || p.Limits.Nofile.Hard != 1048576 {
		t.Errorf("nofile %+v", p.Limits.Nofile)
	}
	if pf := p.Preflight; pf == nil || pf.Sockets != 1000 || pf.Role != "broker" || pf.ConnRate != 100 {
		t.Errorf("preflight %+v", pf)
	}
	if !reflect.DeepEqual(p.ReservePorts, []int{1883, 8883}) {
		t.Errorf("reserve_ports %v", p.ReservePorts)
	}
	p, err = Load("sys-tune", []string{"reserve_ports="})
	if err != nil || len(p.ReservePorts) != 0 {
		t.Errorf("reserve_ports= : %v %v", p, err)
	}

	bad := []struct {
		set  string
		want []string
	}{
		{"x", []string{`--set "x": want key=value`}},
		{"=5", []string{`--set "=5": want key=value`}},
		{"somaxconn=5", []string{`unknown key "somaxconn"`, "net.core.somaxconn=65535"}},
		// A key spelled as a path gets its dotted spelling, an interface's dot kept.
		{"net/ipv4/conf/eth0.100/rp_filter=2", []string{`sysctl key "net/ipv4/conf/eth0.100/rp_filter"`, `"net.ipv4.conf.eth0/100.rp_filter"`}},
		// A key --set does not take may hold a secret: its value is not echoed.
		{"probe.mqtt.password=hunter2", []string{`--set "probe.mqtt.password=…": unknown key "probe.mqtt.password" (its value is not shown)`}},
		{"limits.nofile.soft=lots", []string{`--set "limits.nofile.soft=lots"`, "whole number"}},
		{"limits.nofile.hard=-1", []string{"file descriptors"}},
		{"preflight.sockets=1e6", []string{"whole number"}},
		{"reserve_ports=1883,mqtt", []string{`"mqtt" is not a port`}},
		{"net.core.somaxconn=", []string{"empty value"}},
		// Sets are validated like the file.
		{"net.ipv4.ip_local_port_range=1000 65535", []string{`--set "net.ipv4.ip_local_port_range=1000 65535"`, "ip_unprivileged_port_start"}},
		{"limits.nofile.soft=2000000", []string{`--set "limits.nofile.soft=2000000"`, "above hard 1048576"}},
		{"preflight.role=db", []string{`--set "preflight.role=db"`, "broker, loadgen, iotdb"}},
		{"reserve_ports=0", []string{`--set "reserve_ports=0"`, "1..65535"}},
	}
	for _, b := range bad {
		_, err := Load("sys-tune", []string{b.set})
		t.Run(b.set, func(t *testing.T) {
			checkErr(t, err, b.want)
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error echoes the value: %v", err)
			}
		})
	}
	// ApplySets works on a profile built in code (no positions).
	q := &Profile{Name: "code"}
	if err := ApplySets(q, []string{"limits.nofile.soft=10", "limits.nofile.hard=5"}); err != nil {
		t.Fatal(err)
	}
	checkErr(t, q.Validate(), []string{`--set "limits.nofile.soft=10"`, "soft 10 is above hard 5"})
}
