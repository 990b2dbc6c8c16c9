package profiles

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// TestValidationRules: every static rule, each with the position the
// message must name and words of the rule and its fix.
func TestValidationRules(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want []string // substrings of the error; nil = valid
	}{
		{"minimal valid", "description: x\nsysctl:\n  net.core.somaxconn: \"4096\"\n", nil},
		{"bare int value is accepted", "sysctl:\n  net.core.somaxconn: 4096\n", nil},
		{"mapping form", "sysctl:\n  net.core.somaxconn: {value: \"4096\", mode: at-least, comment: x}\n", nil},

		// modes
		{"unknown mode", "sysctl:\n  net.core.somaxconn: {value: \"1\", mode: atleast}\n",
			[]string{"profile.yaml:2:42:", `mode "atleast"`, "want exact, at-least or at-most"}},
		{"at-least on non-numeric", "sysctl:\n  kernel.core_pattern: {value: \"core.%p\", mode: at-least}\n",
			[]string{"profile.yaml:2:32:", "kernel.core_pattern", "use mode exact"}},
		{"at-least on range", "sysctl:\n  net.ipv4.ip_local_port_range: {value: \"1024 65535\", mode: at-least}\n",
			[]string{"profile.yaml:2:", "use mode exact"}},

		// triples
		{"tcp_rmem two fields", "sysctl:\n  net.ipv4.tcp_rmem: \"4096 87380\"\n",
			[]string{"profile.yaml:2:22:", `net.ipv4.tcp_rmem "4096 87380": want three numbers min default max`}},
		{"tcp_wmem not numbers", "sysctl:\n  net.ipv4.tcp_wmem: \"4k 16k 4m\"\n",
			[]string{"profile.yaml:2:22:", "want three numbers", "4096 16384 4194304"}},
		{"tcp_rmem unordered", "sysctl:\n  net.ipv4.tcp_rmem: \"4096 16777216 131072\"\n",
			[]string{"profile.yaml:2:22:", "ordered min <= default <= max", `"4096 131072 16777216"`}},
		{"tcp_mem unordered names pages", "sysctl:\n  net.ipv4.tcp_mem: \"3 2 1\"\n",
			[]string{"profile.yaml:2:21:", "min <= pressure <= max", "pages"}},
		{"udp_mem ok", "sysctl:\n  net.ipv4.udp_mem: \"1 2 3\"\n", nil},
		{"tcp_rmem zero min", "sysctl:\n  net.ipv4.tcp_rmem: \"0 1 2\"\n", []string{"field 1 is 0", ">= 1"}},

		// port range
		{"port range below unprivileged start", "sysctl:\n  net.ipv4.ip_local_port_range: \"1000 65535\"\n",
			[]string{"profile.yaml:2:33:", "ip_unprivileged_port_start", "EINVAL", `"1024 65535"`}},
		{"port range allowed by profile's lower unprivileged start",
			"sysctl:\n  net.ipv4.ip_unprivileged_port_start: \"1000\"\n  net.ipv4.ip_local_port_range: \"1000 65535\"\n", nil},
		{"port range below profile's raised unprivileged start",
			"sysctl:\n  net.ipv4.ip_unprivileged_port_start: \"2048\"\n  net.ipv4.ip_local_port_range: \"1500 65535\"\n",
			[]string{"profile.yaml:3:", "below net.ipv4.ip_unprivileged_port_start 2048 (set by this profile at profile.yaml:2:40)", `use "2048 65535"`}},
		{"port range reversed", "sysctl:\n  net.ipv4.ip_local_port_range: \"60000 40000\"\n",
			[]string{"profile.yaml:2:33:", "low end 60000 is above high end 40000"}},
		{"port range one port", "sysctl:\n  net.ipv4.ip_local_port_range: \"5000 5000\"\n",
			[]string{"make high greater than low"}},
		{"port range three fields", "sysctl:\n  net.ipv4.ip_local_port_range: \"1 2 3\"\n",
			[]string{"want two port numbers"}},
		{"port range above 65535", "sysctl:\n  net.ipv4.ip_local_port_range: \"1024 70000\"\n",
			[]string{`"70000" is not a port number 1..65535`}},
		{"unprivileged start out of range", "sysctl:\n  net.ipv4.ip_unprivileged_port_start: \"70000\"\n",
			[]string{"out of the range the kernel accepts, 0..65535"}},

		// reserved ports
		{"reserved ports ok", "sysctl:\n  net.ipv4.ip_local_reserved_ports: \"1883,8000-8010\"\n", nil},
		{"reserved ports empty ok", "sysctl:\n  net.ipv4.ip_local_reserved_ports: \"\"\n", nil},
		{"reserved ports bad syntax", "sysctl:\n  net.ipv4.ip_local_reserved_ports: \"1883;8883\"\n",
			[]string{"profile.yaml:2:37:", `"1883,8000-8010"`}},
		{"reserved ports reversed range", "sysctl:\n  net.ipv4.ip_local_reserved_ports: \"9000-8000\"\n",
			[]string{"range start 9000 is above its end 8000"}},
		{"reserve_ports out of range", "reserve_ports: [1883, 0, 70000]\n",
			[]string{"profile.yaml:1:23:", "reserve_ports[1] 0", "1..65535", "(and 1 more problem)"}},

		// single numbers
		{"somaxconn not a number", "sysctl:\n  net.core.somaxconn: \"lots\"\n",
			[]string{"profile.yaml:2:23:", "want one whole number"}},
		{"swappiness above 200", "sysctl:\n  vm.swappiness: \"300\"\n", []string{"0..200"}},
		{"nr_open above kernel max", "sysctl:\n  fs.nr_open: \"4294967296\"\n", []string{"2147483584"}},
		{"empty value", "sysctl:\n  net.core.somaxconn: \"\"\n", []string{"empty value"}},

		// keys
		{"slash key", "sysctl:\n  net/core/somaxconn: \"1\"\n", []string{"profile.yaml:2:3:", `"net.core.somaxconn"`}},
		// an interface's dot stays in its component (the VLAN eth0.100)
		{"slash key of a dotted interface", "sysctl:\n  net/ipv4/conf/eth0.100/rp_filter: \"2\"\n", []string{"profile.yaml:2:3:", `"net.ipv4.conf.eth0/100.rp_filter"`}},
		{"proc path of a dotted interface", "sysctl:\n  /proc/sys/net/ipv4/conf/eth0.100/rp_filter: \"2\"\n", []string{`"net.ipv4.conf.eth0/100.rp_filter"`}},
		{"unknown tree", "sysctl:\n  foo.bar: \"1\"\n", []string{"not under a /proc/sys tree"}},

		// nofile
		{"soft above hard", "limits:\n  nofile: {soft: 2048, hard: 1024}\n",
			[]string{"profile.yaml:2:18:", "soft 2048 is above hard 1024", "lower soft to 1024"}},
		{"hard missing", "limits:\n  nofile: {soft: 2048}\n", []string{"limits.nofile.hard is 0 or missing"}},
		{"hard above profile nr_open", "sysctl:\n  fs.nr_open: \"1048576\"\nlimits:\n  nofile: {soft: 2097152, hard: 2097152}\n",
			[]string{"profile.yaml:4:33:", "above fs.nr_open 1048576 set at profile.yaml:2:15", "raise fs.nr_open to at least 2097152"}},
		{"nr_open raised with it", "sysctl:\n  fs.nr_open: \"2097152\"\nlimits:\n  nofile: {soft: 2097152, hard: 2097152}\n", nil},
		{"file-max below nofile", "sysctl:\n  fs.file-max: \"65536\"\nlimits:\n  nofile: {soft: 1024, hard: 1048576}\n",
			[]string{"profile.yaml:4:30:", "above fs.file-max 65536", "raise fs.file-max to at least 1048576"}},
		{"systemd limit above nr_open", "sysctl:\n  fs.nr_open: \"1048576\"\nsystemd:\n  services: [emqx]\n  limit_nofile: {soft: 1, hard: 2000000}\n",
			[]string{"profile.yaml:5:", "systemd.limit_nofile hard 2000000", "fs.nr_open"}},
		{"systemd services without limit", "systemd:\n  services: [emqx]\n",
			[]string{"profile.yaml:2:13:", "set systemd.limit_nofile"}},
		{"bad unit name", "systemd:\n  services: [\"a b\"]\n  limit_nofile: {soft: 1, hard: 1}\n",
			[]string{"profile.yaml:2:14:", "not a systemd unit name"}},
		{"bad pam user", "limits:\n  nofile: {soft: 1, hard: 1}\n  users: [\"\"]\n", []string{"not a pam_limits domain"}},
		// systemd.tasks_max: a number of tasks or infinity, for services
		{"tasks_max", "systemd:\n  services: [iotdb]\n  limit_nofile: {soft: 1, hard: 1}\n  tasks_max: 16384\n", nil},
		{"tasks_max infinity", "systemd:\n  services: [iotdb]\n  limit_nofile: {soft: 1, hard: 1}\n  tasks_max: infinity\n", nil},
		{"tasks_max 0", "systemd:\n  services: [iotdb]\n  limit_nofile: {soft: 1, hard: 1}\n  tasks_max: 0\n",
			[]string{"profile.yaml:4:14:", "systemd.tasks_max 0", "systemd ignores TasksMax=0", "infinity"}},
		{"tasks_max above pids.max", "systemd:\n  services: [iotdb]\n  limit_nofile: {soft: 1, hard: 1}\n  tasks_max: 4194305\n",
			[]string{"profile.yaml:4:14:", "above 4194304", "write at most 4194304"}},
		{"tasks_max a percentage", "systemd:\n  services: [iotdb]\n  limit_nofile: {soft: 1, hard: 1}\n  tasks_max: 50%\n",
			[]string{"profile.yaml:4:14:", "systemd.tasks_max", `a whole number of tasks (1..4194304) or "infinity"`}},
		{"tasks_max not decimal", "systemd:\n  services: [iotdb]\n  limit_nofile: {soft: 1, hard: 1}\n  tasks_max: 0x4000\n",
			[]string{"profile.yaml:4:14:", `or "infinity"`}},
		{"tasks_max without services", "systemd:\n  tasks_max: 16384\n",
			[]string{"profile.yaml:2:14:", "systemd.services is empty", "list the units in systemd.services"}},

		// preflight
		{"preflight role", "preflight: {sockets: 10, role: server}\n",
			[]string{"profile.yaml:1:32:", `preflight.role "server": want one of broker, loadgen, iotdb`}},
		{"preflight sockets zero", "preflight: {sockets: 0, role: broker}\n", []string{"preflight.sockets 0", "> 0"}},
		{"preflight destination", "preflight: {sockets: 1, role: loadgen, destinations: [\"broker\"]}\n",
			[]string{"want ip:port"}},

		// probes
		{"qos 3", "probe:\n  mqtt: {qos: 3}\n", []string{"profile.yaml:2:15:", "QoS is 0, 1 or 2"}},
		{"negative duration", "probe:\n  mqtt: {duration: -5s}\n", []string{"probe.mqtt.duration -5s"}},
		{"loss above 1", "probe:\n  mqtt:\n    thresholds: {loss: 5}\n", []string{"want a fraction 0..1"}},
		{"keepalive too long", "probe:\n  mqtt: {keepalive: 24h}\n", []string{"65535s"}},
		{"broker URL", "probe:\n  mqtt: {broker: \"localhost:1883\"}\n", []string{"tcp://127.0.0.1:1883"}},
		{"iotdb scenario", "probe:\n  iotdb: {scenario: read}\n", []string{"want one of write, batch, mixed"}},
		{"iotdb step zero", "probe:\n  iotdb: {steps: [2, 0]}\n", []string{"profile.yaml:2:22:", "steps[1] 0"}},
		{"iotdb target step", "probe:\n  iotdb: {steps: [2, 4], thresholds: {target_step: 3}}\n", []string{"not one of steps [2 4]"}},
		{"iotdb error rate", "probe:\n  iotdb:\n    thresholds: {max_error_rate: 1.5}\n", []string{"max_error_rate 1.5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("profile.yaml", []byte(tc.yaml))
			checkErr(t, err, tc.want)
		})
	}
}

// checkErr asserts err is nil when want is nil, else a one-line BadInput
// error containing every want substring.
func checkErr(t *testing.T, err error, want []string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("want valid, got %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("want an error containing %q, got nil", want)
	}
	if code := exitcode.Code(err); code != exitcode.BadInput {
		t.Errorf("exit code %d, want %d (bad input): %v", code, exitcode.BadInput, err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error %q\n  does not contain %q", msg, w)
		}
	}
}

// TestYAMLStrictness: unknown fields, wrong types, syntax, duplicate keys,
// aliases and several documents are refused with file:line:col.
func TestYAMLStrictness(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"unknown top-level field", "descripton: typo\n", []string{"profile.yaml:1:1:", `unknown field "descripton" in profile`, "known fields: name, description, include"}},
		{"unknown nested field", "limits:\n  nofile: {soft: 1, hard: 1, max: 2}\n", []string{"profile.yaml:2:30:", `unknown field "max" in limits.nofile; known fields: soft, hard`}},
		{"unknown sysctl entry field", "sysctl:\n  net.core.somaxconn: {value: \"1\", mdoe: exact}\n", []string{"profile.yaml:2:36:", `unknown field "mdoe"`, "value, mode, optional, if_refused, comment"}},
		{"sysctl entry without value", "sysctl:\n  net.core.somaxconn: {mode: exact}\n", []string{"profile.yaml:2:23:", "no value"}},
		{"sysctl value is a list", "sysctl:\n  net.core.somaxconn: [1, 2]\n", []string{"profile.yaml:2:23:", "got a list"}},
		{"sysctl value with a leading zero", "sysctl:\n  net.core.somaxconn: \"0100\"\n", []string{"profile.yaml:2:23:", "leading 0", "octal", "write 100"}},
		{"sysctl value unquoted float", "sysctl:\n  vm.dirty_ratio: 1.5\n", []string{"profile.yaml:2:19:", "quote the exact text"}},
		{"sysctl value null", "sysctl:\n  vm.swappiness:\n", []string{"profile.yaml:2:", "no value"}},
		{"multi-line sysctl value", "sysctl:\n  vm.swappiness: \"1\\n2\"\n", []string{"profile.yaml:2:18:", "one line of text"}},
		{"optional not bool", "sysctl:\n  net.core.somaxconn: {value: \"1\", optional: maybe}\n", []string{"optional: want true or false"}},
		{"wrong type int", "preflight:\n  sockets: many\n  role: broker\n", []string{"profile.yaml:2:12:", `preflight.sockets: "many" is not a whole number`}},
		{"wrong type negative uint", "limits:\n  nofile: {soft: -1, hard: 1}\n", []string{"profile.yaml:2:18:", "limits.nofile.soft", "whole number >= 0"}},
		{"duration as plain number", "probe:\n  mqtt: {duration: 20}\n", []string{"profile.yaml:2:20:", `"500ms"`}},
		{"malformed duration", "probe:\n  mqtt: {pub_interval: 1sec}\n", []string{"probe.mqtt.pub_interval", "not a duration"}},
		{"list where mapping", "limits: [1]\n", []string{"profile.yaml:1:9:", "want a mapping with fields nofile, users"}},
		{"scalar where list", "reserve_ports: 1883\n", []string{"profile.yaml:1:16:", "want a list"}},
		{"bool field", "sysctl:\n  x.y: \"1\"\n", []string{"not under a /proc/sys tree"}},
		{"duplicate key", "description: a\ndescription: b\n", []string{"profile.yaml:2:1:", "given twice (first at line 1)"}},
		{"duplicate sysctl key", "sysctl:\n  vm.swappiness: \"1\"\n  vm.swappiness: \"2\"\n", []string{"profile.yaml:3:3:", `key "vm.swappiness" given twice`}},
		{"alias", "a: &x 1\n", []string{`unknown field "a"`}},
		{"alias refused", "description: &d hello\nname: *d\n", []string{"profile.yaml:2:7:", "alias *d is not supported"}},
		{"syntax error", "sysctl:\n  a: b\n c: d\n", []string{"profile.yaml:", "YAML syntax"}},
		{"tab indentation", "sysctl:\n\tnet.core.somaxconn: 1\n", []string{"profile.yaml:2:1:", "tab character: YAML indents with spaces only"}},
		{"empty document", "", []string{"profile.yaml:1:1:", "empty profile"}},
		{"comment only", "# nothing\n", []string{"empty profile"}},
		{"top-level list", "- a\n", []string{"profile.yaml:1:1:", "want a mapping of profile fields"}},
		{"two documents", "description: a\n---\ndescription: b\n", []string{"more than one YAML document"}},
		{"file include in Parse", "include: [other.yaml]\n", []string{"profile.yaml:1:11:", "file includes are resolved by Load"}},
		{"unknown builtin include", "include: [nosuch]\n", []string{"profile.yaml:1:11:", `"nosuch"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("profile.yaml", []byte(tc.yaml))
			checkErr(t, err, tc.want)
		})
	}
}

// TestFieldCases are the tune field cases in testdata/fieldcases, static
// side.
func TestFieldCases(t *testing.T) {
	t.Run("port-range-below-unprivileged-start", func(t *testing.T) {
		p := fieldCaseProfile(t, "port-range-below-unprivileged-start.yaml")
		_, err := Parse("port-range-below-unprivileged-start.yaml", p)
		checkErr(t, err, []string{"ip_unprivileged_port_start", `"1024 65535"`, "1000", "EINVAL"})
		// The built-in made from the same script keeps the script's
		// number and asks tune for the nearest value the kernel takes
		// (1024 on a stock host; tune's TestSysTuneTakesTheNearestPortRange).
		st, err := Load("sys-tune", nil)
		if err != nil {
			t.Fatal(err)
		}
		if e := st.Sysctl["net.ipv4.ip_local_port_range"]; e.Value != "1000 65535" || e.IfRefused != RefusedNearest {
			t.Errorf("sys-tune port range %+v, want the script's \"1000 65535\" with if_refused nearest", e)
		}
	})
	t.Run("nofile-above-nr-open", func(t *testing.T) {
		p := fieldCaseProfile(t, "nofile-above-nr-open.yaml")
		// The case's host has fs.nr_open 1048576; a profile that sets
		// nr_open to that value itself must be refused statically.
		withNrOpen := append(p, []byte("sysctl: {fs.nr_open: \"1048576\"}\n")...)
		_, err := Parse("nofile-above-nr-open.yaml", withNrOpen)
		checkErr(t, err, []string{"fs.nr_open", "2097152", "1048576", "raise fs.nr_open to at least 2097152"})
		// Raising nr_open in the same profile makes it valid.
		ok := append(p, []byte("sysctl: {fs.nr_open: {value: \"2097152\", mode: at-least}}\n")...)
		if _, err := Parse("nofile-above-nr-open.yaml", ok); err != nil {
			t.Errorf("with fs.nr_open 2097152: %v", err)
		}
		// --set lowering nr_open under the limits is refused too, naming the --set.
		_, err = Load("mqtt-broker-1m", []string{"fs.nr_open=1048576"})
		checkErr(t, err, []string{"fs.nr_open 1048576 set at --set \"fs.nr_open=1048576\"", "raise fs.nr_open"})
	})
}

// TestTextWrittenToFiles: strings that end up in the files tune writes
// (the name in every header, comments, unit names, pam_limits domains,
// sysctl keys) cannot smuggle a line into them. The first case is the
// tester's: a name with a newline became a live sysctl line.
func TestTextWrittenToFiles(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"newline in name", "name: \"a\\nnet.ipv4.ip_forward = 1\"\nsysctl: {vm.swappiness: \"1\"}\n",
			[]string{"profile.yaml:1:7:", `name "a\nnet.ipv4.ip_forward = 1"`, "only letters, digits", `"a-net.ipv4.ip_forward-1"`}},
		{"space in name", "name: my broker\n", []string{`name "my broker"`, `"my-broker"`}},
		{"carriage return in name", "name: \"a\\rb\"\n", []string{"only letters, digits"}},
		{"name too long", "name: " + strings.Repeat("a", 65) + "\n", []string{"longer than 64 characters"}},
		{"name ok", "name: broker-eu_1.v2\n", nil},
		{"control character in description", "description: \"ok\\x1b[2J\"\n", []string{"profile.yaml:1:14:", "description: control character U+001B"}},
		{"multi-line description ok", "description: |\n  line one\n  line two\n", nil},
		{"control character in comment", "sysctl:\n  vm.swappiness: {value: \"1\", comment: \"a\\rvm.overcommit_memory = 1\"}\n",
			[]string{"profile.yaml:2:", "vm.swappiness comment: control character U+000D"}},
		{"newline in comment is folded by the writer", "sysctl:\n  vm.swappiness: {value: \"1\", comment: \"a\\nb\"}\n", nil},
		{"carriage return in key", "sysctl:\n  \"vm.swappiness\\r\": \"1\"\n", []string{"not a sysctl key"}},
		{"newline in unit", "systemd:\n  services: [\"emqx\\nExecStart=/bin/sh\"]\n  limit_nofile: {soft: 1, hard: 1}\n",
			[]string{"profile.yaml:2:14:", "not a systemd unit name"}},
		{"slash in unit", "systemd:\n  services: [\"../../x\"]\n  limit_nofile: {soft: 1, hard: 1}\n", []string{"not a systemd unit name", "no white space, slashes"}},
		{"socket unit", "systemd:\n  services: [emqx.socket]\n  limit_nofile: {soft: 1, hard: 1}\n", []string{"not one of .socket units"}},
		{"two @ in unit", "systemd:\n  services: [\"a@b@c\"]\n  limit_nofile: {soft: 1, hard: 1}\n", []string{"not a systemd unit name"}},
		{"unit too long", "systemd:\n  services: [" + strings.Repeat("u", 250) + "]\n  limit_nofile: {soft: 1, hard: 1}\n", []string{"255-character"}},
		{"units ok", "systemd:\n  services: [emqx, mosquitto.service, \"getty@tty1.service\", \"x@.service\", \"dev-disk-by\\\\x2duuid\"]\n  limit_nofile: {soft: 1, hard: 1}\n", nil},
		{"newline in pam user", "limits:\n  nofile: {soft: 1, hard: 1}\n  users: [\"root\\n* hard nofile 1\"]\n", []string{"profile.yaml:3:11:", "not a pam_limits domain"}},
		{"vertical tab in pam user", "limits:\n  nofile: {soft: 1, hard: 1}\n  users: [\"a\\vb\"]\n", []string{"not a pam_limits domain"}},
		{"pam users ok", "limits:\n  nofile: {soft: 1, hard: 1}\n  users: [\"*\", root, \"@mqtt\", \"%adm\", \"1000:\", \"@500:600\"]\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("profile.yaml", []byte(tc.yaml))
			checkErr(t, err, tc.want)
		})
	}
	// A name taken from the file name is made valid instead of refused.
	p, err := Parse("my broker\n.yaml", []byte("sysctl: {vm.swappiness: \"1\"}\n"))
	if err != nil || p.Name != "my-broker" {
		t.Errorf("name from file name: %v, %v", p, err)
	}
}

// TestTabIndentation: a tab where YAML wants indentation is named as
// such, at its line and column, instead of yaml.v3's "found character
// that cannot start any token"; tabs where YAML allows them stay valid.
func TestTabIndentation(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"tab indents a key", "sysctl:\n\tnet.core.somaxconn: \"1\"\n",
			[]string{"profile.yaml:2:1: line 2: tab character: YAML indents with spaces only"}},
		{"tab after spaces", "limits:\n  nofile:\n  \tsoft: 1\n",
			[]string{"profile.yaml:3:3: line 3: tab character: YAML indents with spaces only"}},
		{"tab after a list marker", "reserve_ports:\n  -\t1883\n",
			[]string{"profile.yaml:2:4: line 2: tab character"}},
		{"tab reported on the line before", "limits:\n  nofile:\n    soft: 1\n\t  hard: 1\n",
			[]string{"profile.yaml:4:1: line 4: tab character"}},
		{"blank line with a tab", "sysctl:\n  net.core.somaxconn: \"1\"\n\t\n",
			[]string{"profile.yaml:3:1: line 3: tab character"}},
		{"other syntax errors unchanged", "sysctl:\n  net.core.somaxconn: \"1\n", []string{"YAML syntax:"}},
		{"tab in a value is fine", "sysctl:\n  net.ipv4.tcp_rmem: \"4096\t131072\t6291456\"\n", nil},
		{"tab before a comment is fine", "description: x\t# a comment\n", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("profile.yaml", []byte(tc.yaml))
			checkErr(t, err, tc.want)
			if tc.want != nil && tc.name == "other syntax errors unchanged" && strings.Contains(err.Error(), "tab") {
				t.Errorf("blames a tab: %v", err)
			}
		})
	}
}

// TestRootCauseFirst: a value out of its own range (the tester's --set
// ip_unprivileged_port_start=70000) is reported first and alone, not
// behind a port-range message suggesting the invalid range "70000 65535"
// (nothing is judged against it), and a suggested port range is always
// one the kernel accepts.
func TestRootCauseFirst(t *testing.T) {
	// sys-tune's own port range says if_refused: nearest; a --set of it
	// is the caller's value, which a refusal does not change.
	sysTune := func(sets ...string) error {
		_, err := Load("sys-tune", append([]string{"net.ipv4.ip_local_port_range=1024 65535"}, sets...))
		return err
	}
	err := sysTune("net.ipv4.ip_unprivileged_port_start=70000")
	checkErr(t, err, []string{`--set "net.ipv4.ip_unprivileged_port_start=70000": net.ipv4.ip_unprivileged_port_start 70000: above the maximum 65535, out of the range the kernel accepts, 0..65535`})
	if err != nil && (strings.Contains(err.Error(), "more problem") || strings.Contains(err.Error(), "70000 65535")) {
		t.Errorf("root cause not alone: %v", err)
	}
	// Valid starts: the suggestion is a valid range, or none.
	for _, tc := range []struct {
		start string
		want  []string
	}{
		{"2048", []string{`use "2048 65535" or lower net.ipv4.ip_unprivileged_port_start`, `set by this profile at --set "net.ipv4.ip_unprivileged_port_start=2048"`}},
		{"65534", []string{`use "65534 65535"`}},
		{"65535", []string{"no port range fits above 65535", "lower net.ipv4.ip_unprivileged_port_start"}},
	} {
		err := sysTune("net.ipv4.ip_unprivileged_port_start=" + tc.start)
		checkErr(t, err, tc.want)
		if err != nil && strings.Contains(err.Error(), `"65535 65535"`) {
			t.Errorf("suggests a one-port range: %v", err)
		}
	}
	// A high end the start is not below: suggest the widest valid range.
	_, err = Parse("p.yaml", []byte("sysctl:\n  net.ipv4.ip_unprivileged_port_start: \"5000\"\n  net.ipv4.ip_local_port_range: \"1024 4000\"\n"))
	checkErr(t, err, []string{`use "5000 65535"`})

	// The same for nofile against an out-of-range fs.nr_open: the nr_open
	// problem comes first and nofile is not judged against it.
	err = sysTune("fs.nr_open=10")
	checkErr(t, err, []string{`--set "fs.nr_open=10": fs.nr_open 10: below the minimum 64, out of the range`})
	if err != nil && strings.Contains(err.Error(), "more problem") {
		t.Errorf("derived problems reported with the root cause: %v", err)
	}
	// A problem of a value on its own sorts before one comparing two
	// keys, even when the comparison is earlier in the file.
	_, err = Parse("p.yaml", []byte("sysctl:\n  fs.nr_open: \"1048576\"\nlimits:\n  nofile: {soft: 2097152, hard: 2097152}\nreserve_ports: [0]\n"))
	checkErr(t, err, []string{"p.yaml:5:17: reserve_ports[0] 0", "(and 1 more problem)"})
}

// TestSetValueCannotInjectLines: a --set value (or a profile built in
// code) bypasses the YAML reader's one-line rule; Validate refuses control
// characters in any sysctl value, so none reaches the sysctl file.
func TestSetValueCannotInjectLines(t *testing.T) {
	_, err := Load("sys-tune", []string{"kernel.core_pattern=core\nnet.ipv4.ip_forward = 1"})
	checkErr(t, err, []string{`--set "kernel.core_pattern=core\nnet.ipv4.ip_forward = 1"`, "control character U+000A", "one line"})
	p := &Profile{Name: "code", Sysctl: map[string]Sysctl{"kernel.core_pattern": {Value: "a\rb"}}}
	checkErr(t, p.Validate(), []string{"control character U+000D"})
	p = &Profile{Name: "code", Sysctl: map[string]Sysctl{"net.ipv4.tcp_rmem": {Value: "4096\t131072\t6291456"}}}
	if err := p.Validate(); err != nil {
		t.Errorf("tabs between fields: %v", err)
	}
}

// TestBoundSaysWhichSide: a value out of a kernel bound says whether it
// is below the minimum or above the maximum ("-1 ... a larger value is
// refused" read wrong).
func TestBoundSaysWhichSide(t *testing.T) {
	for v, want := range map[string]string{"-1": "below the minimum 0", "2147483648": "above the maximum 2147483647"} {
		_, err := Parse("p.yaml", []byte("sysctl:\n  net.core.somaxconn: \""+v+"\"\n"))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "larger") {
			t.Errorf("somaxconn %s: %v, want %q", v, err, want)
		}
	}
}

// TestIntegersAreDecimal: an integer field takes decimal digits only, in
// a file and in --set alike; yaml.v3 alone also reads 0x400, 0o1000
// (512: a typo for 1000 passed unseen), 1_024, 1024.0 and 01024.
func TestIntegersAreDecimal(t *testing.T) {
	for _, v := range []string{"0x400", "0o1000", "1_024", "1024.0", "01024", "+1024"} {
		_, err := Parse("p.yaml", []byte("limits:\n  nofile: {soft: "+v+", hard: 1048576}\n"))
		if err == nil || !strings.Contains(err.Error(), "p.yaml:2:18: limits.nofile.soft") || !strings.Contains(err.Error(), "decimal") {
			t.Errorf("soft: %s: %v", v, err)
		}
		if _, err := Load("ready-small", []string{"limits.nofile.soft=" + v}); err == nil || !strings.Contains(err.Error(), "decimal") {
			t.Errorf("--set limits.nofile.soft=%s: %v", v, err)
		}
	}
	for _, v := range []string{"1024", "0"} {
		if _, err := Parse("p.yaml", []byte("probe:\n  mqtt: {clients: "+v+"}\n")); err != nil {
			t.Errorf("clients: %s: %v", v, err)
		}
	}
}
