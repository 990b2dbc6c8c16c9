package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

func TestProfilesCLI(t *testing.T) {
	out, _, code := testenv.Run(t, nil, "profiles", "list")
	if code != 0 || !strings.Contains(out, "sys-tune") || !strings.Contains(out, "ready-small") || !strings.Contains(out, "DESCRIPTION") {
		t.Errorf("profiles list: exit %d\n%s", code, out)
	}
	out, _, code = testenv.Run(t, nil, "profiles", "list", "--output", "json")
	var list []struct{ Name, Summary, Description string }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) < 5 {
		t.Errorf("profiles list --output json: exit %d\n%s", code, out)
	}

	out, _, code = testenv.Run(t, nil, "profiles", "show", "sys-tune")
	// sys-tune keeps the script's 1000 and lets the running kernel's
	// nearest accepted value stand in where it is refused.
	if code != 0 || !strings.Contains(out, "net.ipv4.ip_local_port_range:\n    value: 1000 65535\n    mode: exact\n    if_refused: nearest") {
		t.Errorf("profiles show: exit %d\n%s", code, out)
	}
	out, _, code = testenv.Run(t, nil, "profiles", "show", "--raw", "sys-tune")
	if code != 0 || !strings.Contains(out, "# sys-tune:") {
		t.Errorf("profiles show --raw keeps comments: exit %d\n%s", code, out)
	}
	out, _, code = testenv.Run(t, nil, "profiles", "show", "mqtt-broker-1m", "--set", "net.core.somaxconn=65535", "--output", "json")
	var shown struct {
		Sysctl map[string]struct{ Value, Mode string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &shown) != nil || shown.Sysctl["net.core.somaxconn"].Value != "65535" || shown.Sysctl["net.core.somaxconn"].Mode != "at-least" {
		t.Errorf("profiles show --set --output json: exit %d\n%s", code, out)
	}

	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(good, []byte("include: [ready-small]\nsysctl:\n  net.ipv4.ip_local_port_range: \"1024 65534\"\n"), 0o644)
	os.WriteFile(bad, []byte("sysctl:\n  net.ipv4.ip_local_port_range: \"1000 65535\"\n"), 0o644)

	out, errOut, code := testenv.Run(t, nil, "profiles", "validate", good)
	if code != 0 || !strings.Contains(out, "good.yaml: ok") || !strings.Contains(out, "parity") || errOut != "" {
		t.Errorf("validate good: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	out, errOut, code = testenv.Run(t, nil, "profiles", "validate", good, bad)
	if code != 2 {
		t.Errorf("validate bad: exit %d, want 2", code)
	}
	if lines := strings.Split(strings.TrimSpace(errOut), "\n"); len(lines) != 1 || !strings.Contains(errOut, "bad.yaml:2:33:") || !strings.Contains(errOut, "ip_unprivileged_port_start") {
		t.Errorf("validate bad: want one line naming bad.yaml:2:33 and ip_unprivileged_port_start, got %q", errOut)
	}
	if !strings.Contains(out, "good.yaml: ok") {
		t.Errorf("the valid file is still reported: %q", out)
	}
	out, _, code = testenv.Run(t, nil, "profiles", "validate", "--output", "json", good, bad)
	var res []struct {
		File  string
		OK    bool
		Error string
	}
	if code != 2 || json.Unmarshal([]byte(out), &res) != nil || len(res) != 2 || !res[0].OK || res[1].OK || res[1].Error == "" {
		t.Errorf("validate --output json: exit %d\n%s", code, out)
	}
	_, errOut, code = testenv.Run(t, nil, "profiles", "show", "nosuch")
	if code != 2 || !strings.Contains(errOut, "not a built-in") {
		t.Errorf("show nosuch: exit %d %q", code, errOut)
	}
	_, _, code = testenv.Run(t, nil, "profiles", "list", "--output", "xml")
	if code != 2 {
		t.Errorf("--output xml: exit %d, want 2", code)
	}
}

// profiles validate shows every problem of a file, a line each, not the
// first with "(and 1 more problem)", so a file is fixed in one run; JSON
// lists them in "problems".
func TestProfilesValidateShowsEveryProblem(t *testing.T) {
	f := filepath.Join(t.TempDir(), "two.yaml")
	os.WriteFile(f, []byte("sysctl:\n  bogus.key: \"1\"\nlimits:\n  nofile: {soft: 5, hard: 2}\n"), 0o644)
	_, errOut, code := testenv.Run(t, nil, "profiles", "validate", f)
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	if code != 2 || len(lines) != 2 || !strings.Contains(lines[0], "two.yaml:2:3:") || !strings.Contains(lines[1], "two.yaml:4:18:") || strings.Contains(errOut, "more problem") {
		t.Errorf("validate: exit %d, want 2 and one line per problem (2:3 bogus.key, 4:18 nofile); stderr %q", code, errOut)
	}
	out, _, code := testenv.Run(t, nil, "profiles", "validate", "-o", "json", f)
	var res []struct{ Problems []string }
	if code != 2 || json.Unmarshal([]byte(out), &res) != nil || len(res) != 1 || len(res[0].Problems) != 2 {
		t.Errorf("validate -o json: exit %d, want 2 problems listed: %s", code, out)
	}

	// Schema problems (misspelt fields, wrong kinds) are all listed too,
	// in file order, not just the first.
	typos := filepath.Join(t.TempDir(), "typos.yaml")
	os.WriteFile(typos, []byte("sysctl:\n  net.core.somaxconn: {value: \"1\", mdoe: at-least}\nlimits:\n  nofle: {soft: 1, hard: 2}\nprobe:\n  mqtt:\n    clents: 5\n"), 0o644)
	_, errOut, code = testenv.Run(t, nil, "profiles", "validate", typos)
	lines = strings.Split(strings.TrimSpace(errOut), "\n")
	want := []string{`typos.yaml:2:36: net.core.somaxconn: unknown field "mdoe"`, `typos.yaml:4:3: unknown field "nofle" in limits`, `typos.yaml:7:5: unknown field "clents" in probe.mqtt`}
	if code != 2 || len(lines) != len(want) {
		t.Fatalf("validate: exit %d, want 2 and %d lines; stderr %q", code, len(want), errOut)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d = %q, want %q", i+1, lines[i], w)
		}
	}
}

// TestProfilesValidateRefusesLineInjection: the tester's profile whose
// name carries a sysctl line is invalid (exit 2), for validate and for
// tune plan, before anything is written.
func TestProfilesValidateRefusesLineInjection(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "inject.yaml")
	os.WriteFile(f, []byte("name: \"a\\nnet.ipv4.ip_forward = 1\"\nsysctl:\n  net.core.somaxconn: \"4096\"\n"), 0o644)
	for _, args := range [][]string{{"profiles", "validate", f}, {"tune", "plan", "--profile", f}} {
		_, errOut, code := testenv.Run(t, nil, args...)
		if code != 2 || !strings.Contains(errOut, "inject.yaml:1:7:") || !strings.Contains(errOut, "only letters, digits") {
			t.Errorf("%v: exit %d, want 2 naming inject.yaml:1:7 and the name rule; stderr %q", args, code, errOut)
		}
	}
}

// TestProfilesValidateRefusesProbeSettings: a probe.mqtt value the probe
// refuses (clients: 0, conn_rate "0/s", size 5) fails `profiles validate`
// with exit 2 at the profile's file:line:col, not at a flag never given.
func TestProfilesValidateRefusesProbeSettings(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ yaml, want string }{
		{"clients: 0", "p.yaml:3:14: probe.mqtt.clients 0"},
		{"conn_rate: \"0/s\"", "p.yaml:3:16: probe.mqtt.conn_rate 0"},
		{"size: 5", "p.yaml:3:11: probe.mqtt.size 5"},
		{"pool_size: 0", "p.yaml:3:16: probe.iotdb.pool_size 0"},
	} {
		f := filepath.Join(dir, "p.yaml")
		section := "mqtt"
		if strings.HasPrefix(tc.want, "p.yaml:3:16: probe.iotdb") {
			section = "iotdb"
		}
		os.WriteFile(f, []byte("probe:\n  "+section+":\n    "+tc.yaml+"\n"), 0o644)
		_, errOut, code := testenv.Run(t, nil, "profiles", "validate", f)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "--") {
			t.Errorf("%s: exit %d, want 2 naming %q and no flag; stderr %q", tc.yaml, code, tc.want, errOut)
		}
		_, errOut, code = testenv.Run(t, nil, "probe", section, "--profile", f)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("probe %s --profile with %s: exit %d, want 2 naming %q; stderr %q", section, tc.yaml, code, tc.want, errOut)
		}
	}
}

// TestProfilesValidateRefusesNonRegularFile: /dev/zero is refused at once
// with exit 2 naming the path, not read until memory runs out.
func TestProfilesValidateRefusesNonRegularFile(t *testing.T) {
	_, errOut, code := testenv.Run(t, nil, "profiles", "validate", "/dev/zero")
	if code != 2 || !strings.Contains(errOut, "/dev/zero") || !strings.Contains(errOut, "not a regular file") {
		t.Errorf("validate /dev/zero: exit %d, want 2 naming the path; stderr %q", code, errOut)
	}
}

// TestProfilesValidateWarnsNofileAboveDefaultNrOpen: exit 0 (the file is
// valid) but with the warning that tune plan will refuse it on a host
// with the default fs.nr_open.
func TestProfilesValidateWarnsNofileAboveDefaultNrOpen(t *testing.T) {
	f := filepath.Join(t.TempDir(), "nr.yaml")
	os.WriteFile(f, []byte("limits:\n  nofile: {soft: 2097152, hard: 2097152}\n"), 0o644)
	out, _, code := testenv.Run(t, nil, "profiles", "validate", f)
	if code != 0 || !strings.Contains(out, "warning:") || !strings.Contains(out, "add fs.nr_open at-least 2097152") {
		t.Errorf("validate: exit %d, want 0 with the fs.nr_open warning; stdout %q", code, out)
	}
}
