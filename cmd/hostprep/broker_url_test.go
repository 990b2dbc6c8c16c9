package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
)

// A broker URL is SCHEME://HOST[:PORT]: the probe ignores a path, a query
// or a fragment, and every report and log line printed them — `ready
// --mqtt 'tcp://127.0.0.1:18831?password=PW'` put the password on stdout,
// in the --json and --html files and in the debug log. For every scheme,
// every way a URL reaches the probe (probe mqtt --broker, ready --mqtt, a
// profile's probe.mqtt.broker for both) refuses them with exit 2 before
// anything runs: one line naming the setting, no report file written, and
// the secret nowhere in stdout or stderr. (Port 1: the code before this
// refused nothing and ran against it, failing to connect.)
func TestBrokerURLWithSecretPartsRefusedEverywhere(t *testing.T) {
	const secret = "Zq9UrlPW"
	dir := t.TempDir()
	logs := []string{"--log-format", "json", "--log-level", "debug"}
	for _, scheme := range mqtt.BrokerSchemes {
		for _, tail := range []string{"?password=" + secret, "/" + secret, "#" + secret} {
			broker := scheme + "://127.0.0.1:1" + tail
			prof := filepath.Join(dir, "p.yaml")
			if err := os.WriteFile(prof, []byte(fmt.Sprintf("include: [ready-small]\nprobe:\n  mqtt: {broker: %q, clients: 5, duration: 1s}\n", broker)), 0o600); err != nil {
				t.Fatal(err)
			}
			j, h, c := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html"), filepath.Join(dir, "r.csv")
			for _, run := range []struct {
				setting string
				args    []string
			}{
				{"--broker", append([]string{"probe", "mqtt", "--broker", broker, "--clients", "5", "--duration", "1s", "-o", "json", "--html", h, "--csv", c}, logs...)},
				{"probe.mqtt.broker", append([]string{"probe", "mqtt", "--profile", prof, "-o", "json", "--html", h}, logs...)},
				{"--mqtt", append([]string{"ready", "--profile", "ready-small", "--no-tune", "--mqtt", broker, "--json", j, "--html", h}, logs...)},
				{"probe.mqtt.broker", append([]string{"ready", "--profile", prof, "--no-tune", "-o", "json", "--json", j, "--html", h}, logs...)},
			} {
				stdout, stderr, code := testenv.Run(t, nil, run.args...)
				if code != 2 || strings.Contains(stdout+stderr, secret) || !strings.Contains(stderr, run.setting+" ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
					t.Errorf("%s: exit %d, want 2 with one line naming %s and never the secret\nstdout %s\nstderr %s", strings.Join(run.args[:3], " "), code, run.setting, stdout, stderr)
				}
				for _, f := range []string{j, h, c} {
					if _, err := os.Stat(f); !os.IsNotExist(err) {
						t.Errorf("%s: %s written (err %v)", strings.Join(run.args[:3], " "), f, err)
						os.Remove(f)
					}
				}
			}
		}
	}
}
