package ready

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/iotdb"
	"github.com/hostprep/hostprep/preflight"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/ready/outcome"
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
		{Profile: prof, DryRun: true, Probes: map[string]loadprobe.Target{"mqtt": {Addr: "tcp://127.0.0.1:1883", User: "u", Password: "pw-not-printed"}}},
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

// --mqtt at a broker on this host names the listener preflight judges
// (its owner's limits, its backlog), as the profile's probe broker does.
func TestMQTTFlagNamesThePreflightListener(t *testing.T) {
	p, err := profiles.Load("ready-small", nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, skip := preflightTarget(p, Options{Probes: at("mqtt", "tcp://127.0.0.1:18834")})
	if skip != "" || tg.Role != preflight.Broker || !slices.Contains(tg.Ports, 18834) {
		t.Errorf("preflight target %+v (skip %q), want the broker's listener port 18834", tg, skip)
	}
	if p.Probe.MQTT != nil && p.Probe.MQTT.Broker == "tcp://127.0.0.1:18834" {
		t.Error("the caller's profile was changed")
	}
}

// --iotdb at a DataNode on this host names the listener preflight judges
// for an iotdb role, as the profile's probe.iotdb host and port do; the
// same flag leaves a broker's target as it is.
func TestIoTDBFlagNamesThePreflightListener(t *testing.T) {
	p, err := profiles.Load("ready-small", []string{"preflight.role=iotdb"})
	if err != nil {
		t.Fatal(err)
	}
	tg, skip := preflightTarget(p, Options{Probes: at("iotdb", "127.0.0.1:16667")})
	if skip != "" || tg.Role != preflight.IoTDB || !slices.Contains(tg.Ports, 16667) {
		t.Errorf("preflight target %+v (skip %q), want the DataNode's listener port 16667", tg, skip)
	}
	if p.Probe.IoTDB != nil && p.Probe.IoTDB.Port == 16667 {
		t.Error("the caller's profile was changed")
	}
	b, err := profiles.Load("ready-small", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tg, _ := preflightTarget(b, Options{Probes: at("iotdb", "127.0.0.1:16667")}); slices.Contains(tg.Ports, 16667) {
		t.Errorf("broker target %+v judges the DataNode's port", tg)
	}
}

// knee_workers (JSON metrics, --prom) is the knee step's workers (8),
// never the peak's (4), and is absent when no step was a knee;
// peak_workers is the peak's.
func TestIoTDBMetricsKneeIsTheKnee(t *testing.T) {
	r := &iotdb.Result{Steps: []iotdb.Step{{Workers: 4, TPS: 1000}, {Workers: 8, TPS: 990}}, Knee: iotdb.Knee{PeakWorkers: 4, PeakTPS: 1000, Workers: 8}}
	s := resultStep(r)
	if s.Metrics[outcome.MetricKneeWorkers] != 8 || s.Metrics[outcome.MetricPeakWorkers] != 4 {
		t.Errorf("metrics %v: want knee_workers 8, peak_workers 4", s.Metrics)
	}
	r.Knee.Workers = 0
	if _, ok := resultStep(r).Metrics[outcome.MetricKneeWorkers]; ok {
		t.Error("knee_workers reported with no knee")
	}
}
