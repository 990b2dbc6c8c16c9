package profiles

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

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
