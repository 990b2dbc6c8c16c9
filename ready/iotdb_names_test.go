package ready

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/iotdb"
	"github.com/hostprep/hostprep/profiles"
)

// readyIoTDBFlags are ready's flags the IoTDB probe's messages may name.
var readyIoTDBFlags = []string{"--iotdb", "--iotdb-user", "--iotdb-password-file", "--output"}

var (
	probeIoTDBCommand = regexp.MustCompile("`hostprep probe iotdb --[a-z0-9-]+`")
	flagToken         = regexp.MustCompile(`--[a-z][a-z0-9-]*`)
)

// notReadyFlags are the flags msg names as ready's that ready does not
// have ("`hostprep probe iotdb --rate`", naming the other command, is
// none).
func notReadyFlags(msg string) []string {
	var out []string
	for _, f := range flagToken.FindAllString(probeIoTDBCommand.ReplaceAllString(msg, ""), -1) {
		if !slices.Contains(readyIoTDBFlags, f) {
			out = append(out, f)
		}
	}
	return out
}

// The IoTDB probe ready builds (iotdb.Probe.Ready) names its settings as ready
// offers them: the address --iotdb (given) or the profile's
// probe.iotdb.host and probe.iotdb.port, the pool size
// probe.iotdb.pool_size, the user --iotdb-user or the profile's key;
// every setting of the probe (iotdb.SettingKeys, the address, the JSON
// output) is named without a flag ready lacks, and so are the
// suggestions and remedies of a run: never "raise --pool-size", a flag
// of `hostprep probe iotdb` only.
func TestIoTDBConfigNamesReadySettings(t *testing.T) {
	for _, c := range []struct {
		name                    string
		probe                   *profiles.IoTDBProbe
		o                       Options
		address, user, poolSize string
	}{
		{"--iotdb and a profile section with a user", &profiles.IoTDBProbe{Host: "db1", PoolSize: 8, User: "admin"}, Options{Probes: at("iotdb", "127.0.0.1:6667")},
			"--iotdb", "probe.iotdb.user (or --iotdb-user)", "probe.iotdb.pool_size"},
		{"the profile's host", &profiles.IoTDBProbe{Host: "db1"}, Options{},
			"probe.iotdb.host and probe.iotdb.port", "--iotdb-user", "probe.iotdb.pool_size"},
		{"--iotdb, no profile section", nil, Options{Probes: map[string]loadprobe.Target{"iotdb": {Addr: "127.0.0.1:6667", User: "u"}}},
			"--iotdb", "--iotdb-user", "probe.iotdb.pool_size"},
	} {
		p := &profiles.Profile{Name: "p"}
		p.Probe.IoTDB = c.probe
		cfg, skip := iotdbConfig(p, c.o)
		if skip != "" {
			t.Fatalf("%s: %s", c.name, skip)
		}
		name := func(k string) string {
			if n := cfg.SettingNames[k]; n != "" {
				return n
			}
			return iotdb.SettingName(k)
		}
		for k, want := range map[string]string{"address": c.address, "user": c.user, "pool_size": c.poolSize,
			"password": "--iotdb-password-file or $" + iotdb.PasswordEnv, "call_timeout": "`hostprep probe iotdb --call-timeout` (ready uses the default)"} {
			if got := name(k); got != want {
				t.Errorf("%s: %s named %q, want %q", c.name, k, got, want)
			}
		}
		for _, k := range append(iotdb.SettingKeys(), "address", "output") {
			if bad := notReadyFlags(name(k)); len(bad) > 0 {
				t.Errorf("%s: %s named %q: %v are no flags of ready", c.name, k, name(k), bad)
			}
		}

		// A run's suggestions and remedies under these names.
		cfg.Steps, cfg.PoolSize, cfg.WaitTimeout = []int{16}, 4, time.Millisecond
		st := iotdb.Step{Workers: 16, Ops: 100, OK: 40, Errors: 60, ErrorRate: 0.6, Bound: iotdb.BoundPool,
			ErrorsByClass: map[string]int64{iotdb.ClassWaitTimeout: 30, iotdb.ClassDeadline: 20, iotdb.ClassStatus: 10},
			StatusCodes:   map[string]int64{"500": 1, "801": 1, "803": 1, "906": 1}}
		var msgs []string
		for _, s := range iotdb.Suggest(&cfg, []iotdb.Step{st}, "2.0.10") {
			msgs = append(msgs, s.Setting, s.Fix)
		}
		for _, ch := range iotdb.Checks(&cfg, []iotdb.Step{st}) {
			msgs = append(msgs, ch.Summary, ch.Remedy)
		}
		for _, m := range msgs {
			if bad := notReadyFlags(m); len(bad) > 0 {
				t.Errorf("%s: %q names %v, flags ready does not have", c.name, m, bad)
			}
		}
		all := strings.Join(msgs, "\n")
		for _, want := range []string{"probe.iotdb.pool_size 16 or more", "`hostprep probe iotdb --call-timeout` (ready uses the default)", c.user + " / password"} {
			if !strings.Contains(all, want) {
				t.Errorf("%s: no suggestion or remedy names %q:\n%s", c.name, want, all)
			}
		}
	}
}
