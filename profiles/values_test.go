package profiles

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestFields(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int64
		err  string
	}{
		{"4096\t131072\t6291456", []int64{4096, 131072, 6291456}, ""},
		{" 1  2 ", []int64{1, 2}, ""},
		{"-1", []int64{-1}, ""},
		{"9223372036854775807", []int64{9223372036854775807}, ""},
		{"", nil, "empty value"},
		{"1 two", nil, `field 2 "two" is not a whole number`},
		{"1.5", nil, "not a whole number"},
		{"9223372036854775808", nil, "not a whole number"},
	} {
		got, err := Fields(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Fields(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Fields(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if s := formatFields([]int64{4096, 16384, 4194304}); s != "4096\t16384\t4194304" {
		t.Errorf("formatFields = %q", s)
	}
	if KeyFields("net.ipv4.tcp_mem") != 3 || KeyFields("net.ipv4.ip_local_port_range") != 2 || KeyFields("net.core.somaxconn") != 0 {
		t.Error("KeyFields")
	}
}

func TestParsePortRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi int
		err    string
	}{
		{"32768\t60999", 32768, 60999, ""},
		{"1024 65535", 1024, 65535, ""},
		{"1 1", 1, 1, ""}, // the kernel accepts it; Validate refuses it
		{"1000 65535", 1000, 65535, ""},
		{"0 100", 0, 0, "not a port number 1..65535"},
		{"1024 65536", 0, 0, "not a port number"},
		{"2000 1000", 0, 0, "low end 2000 is above high end 1000"},
		{"1024", 0, 0, "want two port numbers"},
		{"a b", 0, 0, "not a port number"},
	} {
		lo, hi, err := ParsePortRange(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePortRange(%q) error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || lo != tc.lo || hi != tc.hi {
			t.Errorf("ParsePortRange(%q) = %d, %d, %v", tc.in, lo, hi, err)
		}
	}
}

func TestReservedPorts(t *testing.T) {
	rs, err := ParseReservedPorts("8883, 1883,8000-8010,1884")
	if err != nil {
		t.Fatal(err)
	}
	want := []PortRange{{Lo: 8883, Hi: 8883}, {Lo: 1883, Hi: 1883}, {Lo: 8000, Hi: 8010}, {Lo: 1884, Hi: 1884}}
	if !reflect.DeepEqual(rs, want) {
		t.Errorf("parse %v", rs)
	}
	if s := FormatReservedPorts(rs); s != "1883-1884,8000-8010,8883" {
		t.Errorf("format %q", s)
	}
	if rs, err := ParseReservedPorts(" \n"); rs != nil || err != nil {
		t.Errorf("empty: %v %v", rs, err)
	}
	for _, bad := range []string{"1883;8883", "1,,2", "5-3", "70000", "-5", "1-", "a"} {
		if _, err := ParseReservedPorts(bad); err == nil {
			t.Errorf("ParseReservedPorts(%q) accepted", bad)
		}
	}
	merged := NormalizePortRanges(append(portsToRanges([]int{1883, 8883, 8083, 8084, 18083}), PortRange{Lo: 8080, Hi: 8085}))
	if s := FormatReservedPorts(merged); s != "1883,8080-8085,8883,18083" {
		t.Errorf("merge %q", s)
	}
	if !ContainsPort(merged, 8082) || ContainsPort(merged, 8086) {
		t.Error("ContainsPort")
	}
	if FormatReservedPorts(nil) != "" {
		t.Error("nil ranges should format as empty")
	}
}

// TestNormalizePortRangesProperties: for any list of ranges the normalized
// form covers exactly the same ports, is sorted, has no overlapping or
// adjacent ranges, and formats to a string that parses back to itself.
func TestNormalizePortRangesProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, 12).Draw(t, "n")
		var rs []PortRange
		for i := 0; i < n; i++ {
			lo := rapid.IntRange(0, 300).Draw(t, "lo")
			hi := rapid.IntRange(lo, min(lo+rapid.IntRange(0, 40).Draw(t, "len"), 65535)).Draw(t, "hi")
			rs = append(rs, PortRange{Lo: lo, Hi: hi})
		}
		norm := NormalizePortRanges(rs)
		for port := 0; port <= 400; port++ {
			if ContainsPort(rs, port) != ContainsPort(norm, port) {
				t.Fatalf("port %d: in input %v, in normalized %v (%v -> %v)", port, ContainsPort(rs, port), ContainsPort(norm, port), rs, norm)
			}
		}
		for i := 1; i < len(norm); i++ {
			if norm[i].Lo <= norm[i-1].Hi+1 {
				t.Fatalf("ranges %v and %v overlap or touch", norm[i-1], norm[i])
			}
		}
		s := FormatReservedPorts(rs)
		back, err := ParseReservedPorts(s)
		if err != nil {
			t.Fatalf("format %q does not parse: %v", s, err)
		}
		if FormatReservedPorts(back) != s || !reflect.DeepEqual(NormalizePortRanges(back), norm) {
			t.Fatalf("format/parse not a fixpoint: %q -> %v", s, back)
		}
	})
}

// FuzzParse: Parse never panics, and whatever it accepts re-renders to
// YAML that parses to the same profile. The seed corpus (built-ins and
// tricky snippets) runs as a normal test; `go test -fuzz FuzzParse
// ./profiles` explores further.
func FuzzParse(f *testing.F) {
	for _, n := range BuiltinNames() {
		b, _ := Builtin(n)
		f.Add(b)
	}
	for _, s := range []string{
		"",
		"a: &a [*a]\n",
		"sysctl: {net.core.somaxconn: {value: 1, mode: at-least}}\n",
		"sysctl:\n  net.ipv4.ip_local_port_range: \"1000 65535\"\n",
		"include: [sys-tune, loadgen]\nlimits: {nofile: {soft: 1, hard: 2}}\n",
		"include: [ready-small]\nprobe: {mqtt: {duration: 1s}}\n",
		"probe: {iotdb: {steps: [1, 2], thresholds: {target_step: 2}}}\n",
		"<<: {a: 1}\n",
		"sysctl: !!map {}\n",
		"sysctl: {? [a]: b}\n",
		"reserve_ports: [1, 65535]\npreflight: {sockets: 1, role: broker, destinations: [\"[::1]:1883\"]}\n",
		"description: \"\\x00\"\n",
		"---\n...\n",
		// Empty sections of every kind mean the same as absent ones.
		"probe:\n iotdb:\n  thresholds:\n",
		"probe:\n mqtt:\n  thresholds:\n",
		"probe:\n mqtt:\n",
		"probe:\n",
		"limits:\n nofile:\n",
		"systemd:\n tasks_max:\n",
		"preflight:\n",
		"preflight:\n destinations:\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				panic(fmt.Sprintf("HANG on %q", data))
			}
		}()
		defer close(done)
		p, err := Parse("fuzz.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		y, err := p.YAMLBytes()
		if err != nil {
			t.Fatalf("YAMLBytes: %v", err)
		}
		q, err := Parse("fuzz.yaml", y)
		if err != nil {
			t.Fatalf("accepted profile re-renders to invalid YAML: %v\n%s", err, y)
		}
		p.src, q.src = nil, nil
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip differs:\n%#v\n%#v", p, q)
		}
	})
}

// formatFields is the inverse of Fields: the numbers joined by a tab, as
// the kernel prints multi-value keys ("4096\t131072\t6291456").
func formatFields(fs []int64) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = strconv.FormatInt(f, 10)
	}
	return strings.Join(s, "\t")
}

// portsToRanges turns single ports (as in Profile.ReservePorts) into
// one-port ranges, for merging with ParseReservedPorts results.
func portsToRanges(ports []int) []PortRange {
	out := make([]PortRange, 0, len(ports))
	for _, p := range ports {
		out = append(out, PortRange{Lo: p, Hi: p})
	}
	return out
}

// TestRoundTripKeepsGivenZeros: a key written at its zero value
// (thresholds.connect_p95: 0s, "not judged") survives YAMLBytes and
// JSONBytes, so `profiles show` output loads back to the same profile,
// not to one judged at the default thresholds.
func TestRoundTripKeepsGivenZeros(t *testing.T) {
	data := []byte("name: zero\nprobe:\n  mqtt:\n    qos: 0\n    thresholds: {connect_p95: 0s, ack_p95: 0s}\n  iotdb:\n    thresholds: {p95: 0s, min_tps: 0}\n")
	p, err := Parse("zero.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	y, err := p.YAMLBytes()
	if err != nil {
		t.Fatal(err)
	}
	q, err := Parse("zero.yaml", y)
	if err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	for _, k := range []string{"qos", "thresholds.connect_p95", "thresholds.ack_p95"} {
		if !q.Probe.MQTT.Has(k) {
			t.Errorf("probe.mqtt.%s lost by YAMLBytes:\n%s", k, y)
		}
	}
	for _, k := range []string{"thresholds.p95", "thresholds.min_tps"} {
		if !q.Probe.IoTDB.Has(k) {
			t.Errorf("probe.iotdb.%s lost by YAMLBytes:\n%s", k, y)
		}
	}
	if q.Probe.MQTT.Has("thresholds.e2e_p99") {
		t.Errorf("a key never written appeared:\n%s", y)
	}
	p.src, q.src = nil, nil
	if !reflect.DeepEqual(p, q) {
		t.Errorf("round trip differs:\n%#v\n%#v", p, q)
	}
	js, err := p.JSONBytes()
	if err != nil || !strings.Contains(string(js), `"connect_p95": "0s"`) {
		t.Errorf("JSON lacks connect_p95 0s: %v\n%s", err, js)
	}
}
