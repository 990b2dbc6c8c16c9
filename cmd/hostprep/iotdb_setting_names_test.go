package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/loadprobe/iotdb"
)

// `hostprep probe iotdb` names every setting that has a flag by that
// flag in the probe's messages (iotdbNames fills iotdb.Config.SettingNames),
// so its output names --pool-size, --call-timeout, ... rather than the
// library's own names, which are no flags; every flag it names is one the
// command has, and the address is --node-urls when node URLs were given.
func TestProbeIoTDBSettingNamesAreItsFlags(t *testing.T) {
	flags := newProbeIoTDBCmd().Flags()
	token := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	for _, nodes := range [][]string{nil, {"db1:6667"}} {
		names := iotdbNames(&iotdb.Config{NodeURLs: nodes})
		for _, k := range iotdb.SettingKeys() {
			if f := iotdbFlag(k); f != "" && names[k] != "--"+f {
				t.Errorf("%s named %q, want --%s", k, names[k], f)
			}
		}
		for k, n := range names {
			for _, f := range token.FindAllString(n, -1) {
				if flags.Lookup(strings.TrimPrefix(f, "--")) == nil {
					t.Errorf("%s named %q: probe iotdb has no flag %s", k, n, f)
				}
			}
		}
		want := "--host/--port"
		if len(nodes) > 0 {
			want = "--node-urls"
		}
		if names["address"] != want || names["pool_size"] != "--pool-size" || names["thresholds.p95"] != "--max-p95" ||
			names["password"] != "--password-file or $"+iotdb.PasswordEnv || names["output"] != "--output json" {
			t.Errorf("node URLs %v: names %v", nodes, names)
		}
	}
}
