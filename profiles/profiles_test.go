package profiles

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/hostprep/hostprep/internal/testenv"
)

// fieldCaseProfile returns the `profile:` fragment of a field case as YAML.
func fieldCaseProfile(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "fieldcases", file))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Profile yaml.Node `yaml:"profile"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(&c.Profile)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	testenv.WriteTree(t, dir, map[string]string{name: body})
	return filepath.Join(dir, name)
}

func TestBuiltins(t *testing.T) {
	names := BuiltinNames()
	want := []string{"iotdb", "iotdb-study-a", "iotdb-study-b", "iotdb-study-c", "loadgen", "mqtt-broker-1m", "ready-small", "sys-tune"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("BuiltinNames() = %v, want %v", names, want)
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			p, err := Load(n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if p.Name != n || p.Description == "" {
				t.Errorf("name %q description %q", p.Name, p.Description)
			}
			for k, s := range p.Sysctl {
				if s.Comment == "" {
					t.Errorf("%s: no comment saying where the number comes from", k)
				}
				if s.Mode == "" {
					t.Errorf("%s: mode not normalized", k)
				}
			}
			if w := p.Warnings(); len(w) > 0 {
				t.Errorf("warnings: %v", w)
			}
			raw, err := Builtin(n)
			if err != nil || !strings.Contains(string(raw), "description:") {
				t.Errorf("Builtin(%q) = %d bytes, %v", n, len(raw), err)
			}
			// The resolved YAML is itself a valid profile equal to the original.
			y, err := p.YAMLBytes()
			if err != nil {
				t.Fatal(err)
			}
			back, err := Parse(n+".yaml", y)
			if err != nil {
				t.Fatalf("re-parsing show output: %v\n%s", err, y)
			}
			if p.Source != n {
				t.Errorf("Source = %q, want the built-in name %q", p.Source, n)
			}
			back.src, p.src, p.Source = nil, nil, ""
			if !reflect.DeepEqual(back, p) {
				t.Errorf("round trip differs:\n%+v\n%+v", back, p)
			}
		})
	}
	if _, err := Builtin("nosuch"); err == nil || !strings.Contains(err.Error(), "sys-tune") {
		t.Errorf("Builtin(nosuch) = %v, want an error listing the built-ins", err)
	}
}

// TestSysTuneIsTheScript: the built-in keeps the vendor script's numbers
// and deviates only where the issue says.
func TestSysTuneIsTheScript(t *testing.T) {
	p, err := Load("sys-tune", nil)
	if err != nil {
		t.Fatal(err)
	}
	script := map[string]string{
		"fs.file-max": "2097152", "fs.nr_open": "2097152",
		"net.core.somaxconn": "32768", "net.ipv4.tcp_max_syn_backlog": "16384", "net.core.netdev_max_backlog": "16384",
		"net.ipv4.ip_local_port_range": "1000 65535", // if_refused: nearest (1024 on a stock host)
		"net.core.rmem_default":        "262144", "net.core.wmem_default": "262144",
		"net.core.rmem_max": "16777216", "net.core.wmem_max": "16777216", "net.core.optmem_max": "16777216",
		"net.ipv4.tcp_rmem": "1024 4096 16777216", "net.ipv4.tcp_wmem": "1024 4096 16777216",
		"net.ipv4.tcp_fin_timeout": "15", "net.ipv4.tcp_max_tw_buckets": "1048576",
	}
	if len(p.Sysctl) != len(script) {
		t.Errorf("%d sysctl keys, want %d", len(p.Sysctl), len(script))
	}
	for k, v := range script {
		if got := p.Sysctl[k].Value; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	// Where a kernel refuses one of the script's numbers, the nearest it
	// takes is written (tune plans it, with a note).
	for _, k := range []string{"net.ipv4.ip_local_port_range", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"} {
		if p.Sysctl[k].IfRefused != RefusedNearest {
			t.Errorf("%s if_refused %q, want nearest", k, p.Sysctl[k].IfRefused)
		}
	}
	for _, k := range []string{"fs.file-max", "fs.nr_open", "net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog", "net.core.rmem_max"} {
		if p.Sysctl[k].Mode != AtLeast {
			t.Errorf("%s mode %q, want at-least (a host tuned higher is never lowered)", k, p.Sysctl[k].Mode)
		}
	}
	for _, k := range []string{"net.ipv4.ip_local_port_range", "net.ipv4.tcp_fin_timeout"} {
		if p.Sysctl[k].Mode != Exact {
			t.Errorf("%s mode %q, want exact", k, p.Sysctl[k].Mode)
		}
	}
	if !strings.Contains(p.Sysctl["net.ipv4.ip_local_port_range"].Comment, "ip_unprivileged_port_start") {
		t.Errorf("port range comment does not explain the deviation: %q", p.Sysctl["net.ipv4.ip_local_port_range"].Comment)
	}
	if got := p.ReservePorts; !reflect.DeepEqual(got, []int{1883, 8883, 8083, 8084, 18083}) {
		t.Errorf("reserve_ports %v", got)
	}
	// The script's hard nofile; its host-wide soft 1048576 deviates to 1024
	// (select(), FD_SETSIZE), said in the file.
	if n := p.Limits.Nofile; n == nil || n.Soft != 1024 || n.Hard != 1048576 {
		t.Errorf("nofile %+v", n)
	}
	if !slices.Contains(p.Limits.Users, "root") || !slices.Contains(p.Limits.Users, "*") {
		t.Errorf("users %v, want * and root", p.Limits.Users)
	}
}

// TestReadySmallFitsTheSandbox: ready-small is satisfiable in a netns with
// hard nofile 20000.
func TestReadySmallFitsTheSandbox(t *testing.T) {
	p, err := Load("ready-small", nil)
	if err != nil {
		t.Fatal(err)
	}
	for k := range p.Sysctl {
		if !strings.HasPrefix(k, "net.") {
			t.Errorf("%s is not a per-netns net.* key", k)
		}
	}
	if p.Limits.Nofile.Hard > 20000 {
		t.Errorf("nofile hard %d > 20000", p.Limits.Nofile.Hard)
	}
	if p.Preflight == nil || p.Preflight.Sockets != 5000 || p.Probe.MQTT == nil || p.Probe.MQTT.Clients != 200 {
		t.Errorf("preflight %+v probe %+v", p.Preflight, p.Probe.MQTT)
	}
	if p.Probe.MQTT.Duration != 10*time.Second || p.Probe.MQTT.PubInterval != time.Second {
		t.Errorf("durations %v %v", p.Probe.MQTT.Duration, p.Probe.MQTT.PubInterval)
	}
	if l := p.Probe.MQTT.Thresholds.Loss; l == nil || *l != 0 {
		t.Errorf("loss threshold %v, want explicit 0", l)
	}
}

func TestIncludeMergeOrder(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "base/a.yaml", `
description: a
sysctl:
  net.core.somaxconn: {value: "1000", mode: at-least, comment: from a}
  net.ipv4.tcp_fin_timeout: "30"
  vm.swappiness: "10"
limits:
  nofile: {soft: 100, hard: 200}
  users: [alice, bob]
reserve_ports: [1, 2, 3]
probe:
  mqtt: {clients: 10, qos: 1, thresholds: {ack_p95: 50ms}}
`)
	writeFile(t, dir, "base/b.yaml", `
name: b-own-name
sysctl:
  net.core.somaxconn: "2000"
  vm.swappiness: "5"
limits:
  nofile: {soft: 150}
reserve_ports: [4]
`)
	top := writeFile(t, dir, "top.yaml", `
include: [base/a.yaml, base/b.yaml]
sysctl:
  vm.swappiness: {value: "1", mode: at-most}
limits:
  nofile: {hard: 300}
probe:
  mqtt:
    thresholds: {loss: 0}
`)
	p, err := Load(top, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(key, value string, mode Mode) {
		t.Helper()
		if s := p.Sysctl[key]; s.Value != value || s.Mode != mode {
			t.Errorf("%s = %+v, want %s %s", key, s, value, mode)
		}
	}
	check("net.core.somaxconn", "2000", Exact) // b replaces a's whole entry
	check("net.ipv4.tcp_fin_timeout", "30", Exact)
	check("vm.swappiness", "1", AtMost) // the including profile wins
	if p.Name != "top" || p.Description != "a" || p.Include != nil {
		t.Errorf("name %q description %q include %v", p.Name, p.Description, p.Include)
	}
	if n := p.Limits.Nofile; n.Soft != 150 || n.Hard != 300 {
		t.Errorf("nofile %+v, want soft 150 (b) hard 300 (top)", n)
	}
	if !reflect.DeepEqual(p.Limits.Users, []string{"alice", "bob"}) || !reflect.DeepEqual(p.ReservePorts, []int{4}) {
		t.Errorf("lists: users %v reserve_ports %v (lists are replaced whole)", p.Limits.Users, p.ReservePorts)
	}
	m := p.Probe.MQTT
	if m == nil || m.Clients != 10 || m.QoS != 1 || m.Thresholds.AckP95 != 50*time.Millisecond || m.Thresholds.Loss == nil {
		t.Errorf("probe.mqtt merged field by field: %+v", m)
	}

	// An error in a merged value points at the file that set it.
	bad := writeFile(t, dir, "bad.yaml", "include: [base/a.yaml]\nlimits:\n  nofile: {soft: 500}\n")
	_, err = Load(bad, nil)
	checkErr(t, err, []string{filepath.Join(dir, "bad.yaml") + ":3:18:", "soft 500 is above hard 200"})
	_, err = Load(bad, []string{"limits.nofile.hard=100"})
	checkErr(t, err, []string{`--set "limits.nofile.hard=100"`})

	// Built-ins can be included and overridden.
	over := writeFile(t, dir, "over.yaml", "include: [sys-tune]\nsysctl:\n  net.core.somaxconn: {value: \"65535\", mode: at-least, comment: more}\n")
	p, err = Load(over, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Sysctl["net.core.somaxconn"].Value != "65535" || p.Sysctl["fs.nr_open"].Value != "2097152" {
		t.Errorf("override of sys-tune: %+v", p.Sysctl)
	}
	// A broken included file is reported with its own name and line.
	writeFile(t, dir, "broken.yaml", "sysctl:\n  net.ipv4.tcp_rmem: \"1 2\"\n")
	inc := writeFile(t, dir, "inc-broken.yaml", "include: [broken.yaml]\n")
	_, err = Load(inc, nil)
	checkErr(t, err, []string{filepath.Join(dir, "broken.yaml") + ":2:22:", "want three numbers"})
	missing := writeFile(t, dir, "inc-missing.yaml", "description: x\ninclude: [nope.yaml]\n")
	_, err = Load(missing, nil)
	checkErr(t, err, []string{"inc-missing.yaml:2:11:", `include "nope.yaml"`, "relative to the including file"})
}

func TestIncludeCycle(t *testing.T) {
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", "include: [b.yaml]\n")
	writeFile(t, dir, "b.yaml", "include: [sub/c.yaml]\n")
	writeFile(t, dir, "sub/c.yaml", "include: [../a.yaml]\n")
	_, err := Load(a, nil)
	checkErr(t, err, []string{"include cycle:", "a.yaml -> ", "b.yaml -> ", "c.yaml -> ", "remove one of these includes", "c.yaml:1:11:"})
	self := writeFile(t, dir, "self.yaml", "include: [self.yaml]\n")
	_, err = Load(self, nil)
	checkErr(t, err, []string{"include cycle"})
	// A diamond (two includes of the same file) is not a cycle.
	writeFile(t, dir, "d1.yaml", "include: [common.yaml]\n")
	writeFile(t, dir, "d2.yaml", "include: [common.yaml]\n")
	writeFile(t, dir, "common.yaml", "sysctl: {vm.swappiness: \"1\"}\n")
	top := writeFile(t, dir, "top.yaml", "include: [d1.yaml, d2.yaml]\n")
	if _, err := Load(top, nil); err != nil {
		t.Errorf("diamond include: %v", err)
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

func TestValidateCodeBuiltProfile(t *testing.T) {
	p := &Profile{Name: "inline", Sysctl: map[string]Sysctl{"net.ipv4.tcp_wmem": {Value: "1 2"}}}
	checkErr(t, p.Validate(), []string{"profile inline:", "want three numbers"})
	p = &Profile{Name: "inline", Sysctl: map[string]Sysctl{"net.core.somaxconn": {Value: "1", Mode: "more"}}}
	checkErr(t, p.Validate(), []string{`mode "more"`})
	if err := (&Profile{}).Validate(); err != nil {
		t.Errorf("empty profile: %v", err)
	}
}

func TestLoadRefs(t *testing.T) {
	_, err := Load("nosuch", nil)
	checkErr(t, err, []string{`profile "nosuch": not a built-in`, "sys-tune", "hostprep profiles list"})
	_, err = Load("/nonexistent/p.yaml", nil)
	checkErr(t, err, []string{"/nonexistent/p.yaml", "no such file"})
	_, err = Load("", nil)
	checkErr(t, err, []string{"no profile given"})
	// A file whose name has no extension is still loaded when it exists.
	dir := t.TempDir()
	f := writeFile(t, dir, "plain", "name: plain-one\nsysctl: {vm.swappiness: \"1\"}\n")
	t.Chdir(dir)
	p, err := Load("plain", nil)
	if err != nil || p.Name != "plain-one" {
		t.Errorf("Load(%s) = %v, %v", f, p, err)
	}
}

func TestWarnings(t *testing.T) {
	p, err := Parse("w.yaml", []byte("sysctl:\n  net.ipv4.ip_local_port_range: \"1024 65534\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := p.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "w.yaml:2:33:") || !strings.Contains(w[0], "parity") || !strings.Contains(w[0], `"1024 65535"`) {
		t.Errorf("warnings %q", w)
	}
}

func TestOutputs(t *testing.T) {
	p, err := Load("mqtt-broker-1m", nil)
	if err != nil {
		t.Fatal(err)
	}
	j, err := p.JSONBytes()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Name   string
		Sysctl map[string]struct{ Value, Mode string }
		Probe  struct{ MQTT map[string]any }
	}
	if err := json.Unmarshal(j, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Name != "mqtt-broker-1m" || doc.Sysctl["net.ipv4.tcp_mem"].Mode != "at-least" {
		t.Errorf("json: %s", j)
	}
	if doc.Probe.MQTT["duration"] != "20s" {
		t.Errorf("durations should be Go duration strings in JSON, got %v", doc.Probe.MQTT["duration"])
	}
	if s := p.Summary(); s != "MQTT broker holding 1M connections at 2000 new connections/s" {
		t.Errorf("summary %q", s)
	}
	infos, err := Builtins()
	if err != nil || len(infos) != len(BuiltinNames()) {
		t.Errorf("Builtins() = %v, %v", infos, err)
	}
}

func TestSysctlYAMLForms(t *testing.T) {
	var m map[string]Sysctl
	in := "a: \"1 2\"\nb: 7\nc: {value: \"3\", mode: at-most, optional: true, comment: why}\n"
	if err := yaml.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]Sysctl{
		"a": {Value: "1 2", Mode: Exact},
		"b": {Value: "7", Mode: Exact},
		"c": {Value: "3", Mode: AtMost, Optional: true, Comment: "why"},
	}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("got %+v", m)
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "a: 1 2\n") || !strings.Contains(string(out), "mode: at-most") {
		t.Errorf("marshal:\n%s", out)
	}
	if err := yaml.Unmarshal([]byte("x: {mode: exact}\n"), &m); err == nil {
		t.Error("a mapping without value must be refused")
	}
}

// TestWarnLowNofile: the tester's --set limits.nofile.soft=5 was accepted
// silently; a nofile below the usual 1024 lowers the limit and is warned
// about, wherever it is set.
func TestWarnLowNofile(t *testing.T) {
	p, err := Load("sys-tune", []string{"limits.nofile.soft=5"})
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(p.Warnings(), "\n")
	for _, want := range []string{`--set "limits.nofile.soft=5": limits.nofile.soft 5: lower than the usual default 1024; tune never lowers a nofile limit`} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings %q\n  lack %q", w, want)
		}
	}
	p, err = Parse("low.yaml", []byte("systemd:\n  default_limit_nofile: {soft: 512, hard: 4096}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "low.yaml:2:32: systemd.default_limit_nofile.soft 512: lower than the usual default 1024") {
		t.Errorf("warnings %q", w)
	}
	for _, name := range BuiltinNames() {
		b, err := Load(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if w := b.Warnings(); len(w) > 0 {
			t.Errorf("built-in %s warns: %q", name, w)
		}
	}
}

// TestWarnNofileAboveDefaultNrOpen: validate said ok to nofile 2097152
// with no fs.nr_open while tune plan refuses it on a host with the
// default nr_open 1048576; validate now warns and says what to add.
func TestWarnNofileAboveDefaultNrOpen(t *testing.T) {
	p, err := Parse("nr.yaml", []byte("limits:\n  nofile: {soft: 2097152, hard: 2097152}\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := p.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "nr.yaml:2:33: limits.nofile.hard 2097152: the profile sets no fs.nr_open; hosts with the default 1048576 will refuse this: add fs.nr_open at-least 2097152") {
		t.Errorf("warnings %q", w)
	}
	// The largest hard limit is named; at or below 1048576, or with
	// fs.nr_open in the profile, there is nothing to warn about.
	p, _ = Parse("nr.yaml", []byte("limits:\n  nofile: {soft: 1024, hard: 1048577}\nsystemd:\n  services: [emqx]\n  limit_nofile: {soft: 1024, hard: 4000000}\n"))
	if w := p.Warnings(); len(w) != 1 || !strings.Contains(w[0], "systemd.limit_nofile.hard 4000000") || !strings.Contains(w[0], "at-least 4000000") {
		t.Errorf("warnings %q", w)
	}
	for _, y := range []string{
		"limits:\n  nofile: {soft: 1048576, hard: 1048576}\n",
		"sysctl:\n  fs.nr_open: {value: \"2097152\", mode: at-least}\nlimits:\n  nofile: {soft: 2097152, hard: 2097152}\n",
	} {
		p, err := Parse("ok.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		if w := p.Warnings(); len(w) != 0 {
			t.Errorf("%q warns %q", y, w)
		}
	}
}

// applyMode is tune's rule for a mode (tune/sysval.Apply), restated:
// exact gives want; at-least raises each field of cur below want's
// field; at-most lowers each field above it.
func applyMode(t *testing.T, mode Mode, cur, want string) []int64 {
	t.Helper()
	c, err1 := Fields(cur)
	w, err2 := Fields(want)
	if err1 != nil || err2 != nil || len(c) != len(w) {
		t.Fatalf("applyMode(%q, %q)", cur, want)
	}
	out := slices.Clone(c)
	for i := range out {
		switch mode {
		case Exact:
			out[i] = w[i]
		case AtLeast:
			out[i] = max(c[i], w[i])
		case AtMost:
			out[i] = min(c[i], w[i])
		}
	}
	return out
}

// TestSysTuneDescriptionIsHonest: the description said "a host tuned
// higher is never lowered", but exact tcp_rmem/tcp_wmem lower a max of
// 33554432 to 16777216. Every key that can lower a host tuned higher
// (mode exact, numeric) must be named in the description, and the
// tcp_rmem/tcp_wmem comments must say why exact is needed: neither
// field-wise mode gives the script's value on a stock host.
func TestSysTuneDescriptionIsHonest(t *testing.T) {
	p, err := Load("sys-tune", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Description, "never lowered") {
		t.Errorf("description still claims nothing is lowered: %q", p.Description)
	}
	for k, s := range p.Sysctl {
		if s.Mode != Exact || k == "net.ipv4.ip_local_port_range" {
			continue
		}
		f, err := Fields(s.Value)
		if err != nil {
			continue
		}
		higher := make([]int64, len(f))
		for i := range f {
			higher[i] = 2 * f[i]
		}
		cur := formatFields(higher)
		got := applyMode(t, s.Mode, cur, s.Value)
		if slices.Equal(got, higher) {
			continue
		}
		short := k[strings.LastIndex(k, ".")+1:]
		if !strings.Contains(p.Description, short) {
			t.Errorf("%s (exact) lowers a host at %q to %q, and the description does not name it: %q", k, cur, s.Value, p.Description)
		}
	}
	stock := map[string]string{"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"}
	for k, host := range stock {
		want, _ := Fields(p.Sysctl[k].Value)
		for _, m := range []Mode{AtLeast, AtMost} {
			if slices.Equal(applyMode(t, m, host, p.Sysctl[k].Value), want) {
				t.Errorf("%s: %s would give the script's %q on a stock host; exact is not needed", k, m, p.Sysctl[k].Value)
			}
		}
		if c := p.Sysctl[k].Comment; !strings.Contains(strings.ToLower(c), "lower") || !strings.Contains(c, "field by field") && !strings.Contains(c, "same reason") {
			t.Errorf("%s comment does not say exact lowers a higher max and why: %q", k, c)
		}
	}
}
