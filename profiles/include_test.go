package profiles

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

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
