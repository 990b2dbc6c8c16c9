package iotdb

import (
	"strings"
	"testing"
)

// A refused login (801) in a step's status codes is suggested under the
// caller's names for the user and password settings (ready: --iotdb-user
// and --iotdb-password-file; `probe iotdb`: --user and --password-file),
// and under the library's own names (no CLI flag) by default.
func TestRefusedLoginSuggestionNamesTheCallersSettings(t *testing.T) {
	steps := []Step{{Workers: 1, StatusCodes: map[string]int64{"801": 3}}}
	for _, c := range []struct {
		cfg          Config
		setting, fix string
	}{
		{Config{PoolSize: 1}, "probe.iotdb.user / password", "check probe.iotdb.user and the password (the password setting)"},
		{Config{PoolSize: 1, SettingNames: probeFlags(&Config{})}, "--user / password", "check --user and the password (--password-file or $HOSTPREP_IOTDB_PASSWORD)"},
		{Config{PoolSize: 1, SettingNames: map[string]string{"user": "--iotdb-user", "password": "--iotdb-password-file or $HOSTPREP_IOTDB_PASSWORD"}},
			"--iotdb-user / password", "check --iotdb-user and the password (--iotdb-password-file or $HOSTPREP_IOTDB_PASSWORD)"},
	} {
		var got *Suggestion
		for _, s := range Suggest(&c.cfg, steps, "") {
			if strings.Contains(s.Observed, "status 801") {
				got = &s
			}
		}
		if got == nil || got.Setting != c.setting || !strings.HasPrefix(got.Fix, c.fix) {
			t.Errorf("names %v: suggestion %+v; want setting %q and fix %q", c.cfg.SettingNames, got, c.setting, c.fix)
		}
	}
}
