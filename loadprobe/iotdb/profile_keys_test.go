package iotdb

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// A probe.iotdb key left out means the probe's default; a key written as
// 0 is kept and refused by the probe's own Validate, named at the
// profile's file:line:col (never silently replaced by the default).
func TestProfileKeysOmittedDefaultExplicitRefused(t *testing.T) {
	p, err := profiles.Parse("p.yaml", []byte("probe:\n  iotdb:\n    steps: [2]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := ConfigFromProfile(p.Probe.IoTDB); c.PoolSize != Defaults.PoolSize || c.Port != Defaults.Port {
		t.Errorf("left out: want default pool %d port %d, got %d %d", Defaults.PoolSize, Defaults.Port, c.PoolSize, c.Port)
	}
	if err := CheckProfile(p); err != nil {
		t.Errorf("valid section refused: %v", err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"pool_size: 0", "p.yaml:3:16: probe.iotdb.pool_size 0:"},
		{"port: 0", "p.yaml:3:11: probe.iotdb.port 0:"},
		{"step_duration: 0s", "p.yaml:3:20: probe.iotdb.step_duration 0s:"},
		{"fetch_size: 0", "p.yaml:3:17: probe.iotdb.fetch_size 0:"},
	} {
		p, err := profiles.Parse("p.yaml", []byte("probe:\n  iotdb:\n    "+tc.yaml+"\n"))
		if err != nil {
			t.Errorf("%s: the profile parser refused it (%v); the probe's rule should", tc.yaml, err)
			continue
		}
		err = CheckProfile(p)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || exitcode.Code(err) != exitcode.BadInput {
			t.Errorf("%s: want %q... (exit 2), got %v", tc.yaml, tc.want, err)
		}
	}
}
