package mqtt

import (
	"reflect"
	"testing"
	"time"

	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/profiles"
)

// fillAll sets every field of c (also ones added later) to a value that
// is neither zero nor what Defaults or the test profile give, so a path
// that drops a field shows. A field of a kind it cannot fill fails the
// test: teach it the new kind.
func fillAll(t *testing.T, c *Config) {
	t.Helper()
	v := reflect.ValueOf(c).Elem()
	for i := 0; i < v.NumField(); i++ {
		f, sf := v.Field(i), v.Type().Field(i)
		if !sf.IsExported() {
			f = reflect.NewAt(f.Type(), f.Addr().UnsafePointer()).Elem()
		}
		switch x := f.Addr().Interface().(type) {
		case *string:
			*x = "set-" + sf.Name
		case *int:
			*x = 7
		case *float64:
			*x = 7.5
		case *uint64:
			*x = 7
		case *bool:
			*x = true
		case *time.Duration:
			*x = 7 * time.Second
		case *time.Time:
			*x = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
		case *fleet.Shard:
			*x = fleet.Shard{K: 2, N: 3}
		case *profiles.MQTTThresholds:
			l, r := 0.25, 0.5
			*x = profiles.MQTTThresholds{Loss: &l, ConnectFailRate: &r, ConnectP95: 7 * time.Second, AckP95: 8 * time.Second, E2EP99: 9 * time.Second}
		case *map[string]string:
			*x = map[string]string{"broker": "set-" + sf.Name}
		case *ProgressWriter:
			*x = progressSink{}
		default:
			t.Fatalf("Config.%s (%s): fillAll cannot set it; add its type here so the resolver test covers it", sf.Name, f.Type())
		}
	}
}

type progressSink struct{}

func (progressSink) Write(p []byte) (int, error) { return len(p), nil }

var resolveProfile = &profiles.MQTTProbe{Broker: "tcp://profile:1883", Clients: 500, ConnRate: 50, QoS: 2, Size: 300,
	PubInterval: 3 * time.Second, Keepalive: 90 * time.Second, Duration: time.Minute,
	Thresholds: profiles.MQTTThresholds{AckP95: time.Second}}

// Every setting given explicitly survives Resolve, whatever the profile
// says: adding a Config field that some path drops fails here.
func TestResolveKeepsEveryExplicitSetting(t *testing.T) {
	var explicit Config
	fillAll(t, &explicit)
	got := Resolve(resolveProfile, explicit, func(string) bool { return true })
	if !reflect.DeepEqual(got, explicit) {
		gv, ev := reflect.ValueOf(got), reflect.ValueOf(explicit)
		for i := 0; i < gv.NumField(); i++ {
			if gv.Field(i).CanInterface() && !reflect.DeepEqual(gv.Field(i).Interface(), ev.Field(i).Interface()) {
				t.Errorf("Resolve dropped Config.%s: got %v, given %v", gv.Type().Field(i).Name, gv.Field(i), ev.Field(i))
			}
		}
		if !t.Failed() {
			t.Errorf("Resolve dropped an unexported field: got %+v", got)
		}
	}
}

// A setting not given comes from the profile, else the defaults; one that
// is not a setting (no flag tag) always comes from the caller.
func TestResolveLayers(t *testing.T) {
	var explicit Config
	fillAll(t, &explicit)
	got := Resolve(resolveProfile, explicit, func(f string) bool { return f == "clients" || f == "ack-p95" })
	base := ConfigFromProfile(resolveProfile)
	if got.Clients != 7 || got.Thresholds.AckP95 != 8*time.Second {
		t.Errorf("explicit clients/ack-p95 lost: %d %v", got.Clients, got.Thresholds.AckP95)
	}
	if got.ConnRate != 50 || got.QoS != 2 || got.Broker != "tcp://profile:1883" || got.Grace != Defaults().Grace {
		t.Errorf("profile/default layer lost: %+v", got)
	}
	if *got.Thresholds.Loss != *base.Thresholds.Loss || got.Thresholds.E2EP99 != base.Thresholds.E2EP99 {
		t.Errorf("thresholds not given must come from the profile/defaults: %+v", got.Thresholds)
	}
	if got.Password != explicit.Password || got.Workers != 7 || got.Procs != 7 || got.NoFileLimit != 7 || !got.goroutinePerConn {
		t.Errorf("fields that are not settings must come from the caller: %+v", got)
	}
	if got := Resolve(nil, Defaults(), func(string) bool { return false }); !reflect.DeepEqual(got, Defaults()) {
		t.Errorf("nothing given, no profile: %+v, want Defaults()", got)
	}
}
