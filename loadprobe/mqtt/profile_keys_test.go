package mqtt

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// A probe.mqtt key left out means the probe's default, a key written as
// 0 is taken as written (and refused where Validate refuses 0), and the
// refusal names the profile file:line:col and key, not a CLI flag.
func TestProfileKeysOmittedDefaultExplicitRefused(t *testing.T) {
	p, err := profiles.Parse("p.yaml", []byte("probe:\n  mqtt:\n    clients: 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := ConfigFromProfile(p.Probe.MQTT)
	if c.QoS != Defaults().QoS || c.Clients != 10 || c.ConnRate != Defaults().ConnRate {
		t.Errorf("qos left out: want QoS %d (default), 10 clients, %g conn/s; got QoS %d, %d, %g", Defaults().QoS, Defaults().ConnRate, c.QoS, c.Clients, c.ConnRate)
	}
	if err := CheckProfile(p); err != nil {
		t.Errorf("valid section refused: %v", err)
	}
	p, err = profiles.Parse("p.yaml", []byte("probe:\n  mqtt:\n    qos: 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := ConfigFromProfile(p.Probe.MQTT); c.QoS != 0 {
		t.Errorf("qos: 0 written: got QoS %d", c.QoS)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"clients: 0", "p.yaml:3:14: probe.mqtt.clients 0: want at least 1"},
		{"conn_rate: \"0/s\"", "p.yaml:3:16: probe.mqtt.conn_rate 0: want a positive rate"},
		{"size: 5", "p.yaml:3:11: probe.mqtt.size 5: want 24 to"},
		{"pub_interval: 0s", "p.yaml:3:19: probe.mqtt.pub_interval 0s: want a positive duration"},
		{"keepalive: 0s", "p.yaml:3:16: probe.mqtt.keepalive 0s: want 1s to"},
		{"duration: 0s", "p.yaml:3:15: probe.mqtt.duration 0s: want a positive duration"},
	} {
		p, err := profiles.Parse("p.yaml", []byte("probe:\n  mqtt:\n    "+tc.yaml+"\n"))
		if err != nil {
			t.Errorf("%s: the profile parser refused it (%v); the probe's rule should", tc.yaml, err)
			continue
		}
		err = CheckProfile(p)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "--") || exitcode.Code(err) != exitcode.BadInput {
			t.Errorf("%s: want %q... (exit 2, no flag named), got %v (exit %d)", tc.yaml, tc.want, err, exitcode.Code(err))
		}
	}
}

// A fractional rate is shown with its unit, not rounded: 1/m reads
// "1/m (0.017/s)".
func TestConfigStringShowsRateUnit(t *testing.T) {
	c := Defaults()
	c.ConnRate = 1.0 / 60
	if s := c.String(); !strings.Contains(s, "conn_rate=1/m (0.017/s)") {
		t.Errorf("String() = %q, want conn_rate=1/m (0.017/s)", s)
	}
}
