package ready

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// A probe setting the MQTT probe would refuse (mqtt.Config.Validate) is
// refused before anything is tuned: exit 2, nothing run.
func TestBadProbeSettingRefusedBeforeTune(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "bad-probe.yaml")
	// size 10 passes the profile schema (non-negative) but not the probe
	// (the payload carries a 24-byte header).
	yaml := "name: bad-probe\nprobe:\n  mqtt:\n    clients: 10\n    qos: 1\n    size: 10\n"
	if err := os.WriteFile(prof, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{
		{Profile: prof},
		{Profile: prof, DryRun: true, MQTT: "tcp://127.0.0.1:1883", MQTTUser: "u", MQTTPassword: "pw-not-printed"},
	} {
		f := newFakes()
		res, err := run(context.Background(), o, f.runners())
		if exitcode.Code(err) != exitcode.BadInput || res != nil || len(f.ran) != 0 {
			t.Errorf("%+v: err %v, ran %v; want exit 2 before tune and nothing run", o, err, f.ran)
			continue
		}
		if strings.Contains(err.Error(), "pw-not-printed") {
			t.Errorf("password leaked: %v", err)
		}
	}
	// The first case must be refused for the probe setting, by name.
	_, err := run(context.Background(), Options{Profile: prof}, newFakes().runners())
	if err == nil || !strings.Contains(err.Error(), "bad-probe.yaml:6:11: probe.mqtt.size 10: want 24") || strings.Contains(err.Error(), "--size") {
		t.Errorf("want the probe's size rule named at the profile's file:line:col, not a flag; got %v", err)
	}
}
