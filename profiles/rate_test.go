package profiles

import (
	"strings"
	"testing"
)

// TestRateFields: conn_rate is read as 1000, "1000/s" or "60000/m" in
// the preflight target and the MQTT probe, as is the IoTDB probe's
// min_tps (operations/s), and --set accepts the same;
// anything else is an error at its line:col saying what a rate looks like.
func TestRateFields(t *testing.T) {
	for _, v := range []string{"1000", "1000/s", "60000/m", `"1000/s"`} {
		p, err := Parse("profile.yaml", []byte("preflight: {sockets: 10, role: broker, conn_rate: "+v+"}\nprobe:\n  mqtt: {clients: 10, conn_rate: "+v+"}\n  iotdb: {thresholds: {min_tps: "+v+"}}\n"))
		if err != nil {
			t.Fatalf("conn_rate %s: %v", v, err)
		}
		if p.Preflight.ConnRate != 1000 || p.Probe.MQTT.ConnRate != 1000 || p.Probe.IoTDB.Thresholds.MinTPS != 1000 {
			t.Errorf("rate %s: preflight %v, probe.mqtt %v, probe.iotdb.thresholds.min_tps %v; want 1000/s", v, p.Preflight.ConnRate, p.Probe.MQTT.ConnRate, p.Probe.IoTDB.Thresholds.MinTPS)
		}
	}
	for _, tc := range []struct{ yaml, want string }{
		{"preflight: {sockets: 10, role: broker, conn_rate: 1000/h}\n", "profile.yaml:1:51: preflight.conn_rate: \"1000/h\" is not a rate >= 0 such as 1000, 1000/s or 60000/m"},
		{"probe:\n  mqtt: {conn_rate: fast}\n", "profile.yaml:2:21: probe.mqtt.conn_rate: \"fast\" is not a rate"},
		{"probe:\n  mqtt: {conn_rate: -5/s}\n", "probe.mqtt.conn_rate"},
	} {
		_, err := Parse("profile.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.yaml, err, tc.want)
		}
	}
	p, err := Load("ready-small", []string{"preflight.conn_rate=30000/m"})
	if err != nil || p.Preflight.ConnRate != 500 {
		t.Fatalf("--set preflight.conn_rate=30000/m: %v %v", err, p)
	}
	if _, err := Load("ready-small", []string{"preflight.conn_rate=lots"}); err == nil || !strings.Contains(err.Error(), `"lots" is not a rate`) {
		t.Errorf("--set preflight.conn_rate=lots: %v", err)
	}
}
