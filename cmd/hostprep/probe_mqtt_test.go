package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
)

// Every layered MQTT probe setting (a Config field with a `flag` tag, and
// the thresholds) is a flag of `hostprep probe mqtt`, so mqtt.Resolve can
// take it from the command line: a new Config setting without a flag
// fails here.
func TestProbeMQTTOffersEverySetting(t *testing.T) {
	cmd := newProbeCmd(mqtt.Probe)
	for _, name := range mqtt.Settings() {
		if cmd.Flags().Lookup(name) == nil {
			t.Errorf("mqtt.Config setting %q has no --%s flag on `hostprep probe mqtt`", name, name)
		}
	}
}

// `hostprep probe mqtt` with no broker runs against the embedded one and
// passes (exit 0); bad input is exit 2 and names the flag.
func TestCLIEmbeddedPasses(t *testing.T) {
	out, errOut, code := testenv.Run(t, nil, "probe", "mqtt", "--clients", "5", "--duration", "1s", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	var res mqtt.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Verdict == verdict.Fail || !strings.Contains(res.BrokerNote, "embedded broker") {
		t.Fatalf("want a passing embedded run, got %v %s %q", err, res.Verdict, res.BrokerNote)
	}
	out, errOut, code = testenv.Run(t, nil, "probe", "mqtt", "--qos", "3")
	if code != 2 || !strings.Contains(out+errOut, "--qos 3") {
		t.Fatalf("want exit 2 naming --qos 3, got exit %d:\n%s%s", code, out, errOut)
	}
}

// The real thing: the CLI as a child with a lowered RLIMIT_NOFILE.
func TestFDLimitBinary(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit not installed")
	}
	bin := testenv.Binary(t)
	cmd := exec.Command("prlimit", "--nofile=256:256", bin, "probe", "mqtt", "--clients", "500")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), "RLIMIT_NOFILE 256") {
		t.Fatalf("want exit 3 naming RLIMIT_NOFILE 256, got %v:\n%s", err, out)
	}
}

// An empty --password-file is refused the same way by both probes (exit
// 2, before any load): neither runs with an empty password.
func TestEmptyPasswordFileRefusedByBothProbes(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.pw")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, probe := range []string{"mqtt", "iotdb"} {
		_, stderr, code := testenv.Run(t, nil, "probe", probe, "--password-file", empty, "--host", "127.0.0.1")
		if probe == "mqtt" {
			_, stderr, code = testenv.Run(t, nil, "probe", probe, "--password-file", empty, "--username", "u")
		}
		if code != 2 || !strings.Contains(stderr, "--password-file "+empty+" is empty") {
			t.Errorf("probe %s with an empty password file: exit %d, %q; want exit 2 saying it is empty", probe, code, stderr)
		}
	}
}

// Field case probe/bound-source-remedy: more clients than one bound
// --source-ips address has ports for are refused before any connect
// (exit 3), counting ports per source address (bind(src, 0) holds the port
// whatever the destination) and offering only fixes that work for the
// probe: more --source-ips, or a wider range; never more destinations
// (the probe has one broker).
func TestProbeMQTTPortsPerBoundSource(t *testing.T) {
	sb := testenv.NewSandbox(t)
	if _, errOut, code := sb.Run("sh", "-c", "echo '40000 40999' > /proc/sys/net/ipv4/ip_local_port_range"); code != 0 {
		t.Fatalf("narrow the sandbox's port range: %s", errOut)
	}
	_, errOut, code := sb.Hostprep("probe", "mqtt", "--clients", "1500", "--conn-rate", "1000", "--source-ips", "127.0.0.2", "--duration", "3s")
	if code != 3 {
		t.Fatalf("exit %d, want 3 (refused before connecting):\n%s", code, errOut)
	}
	for _, want := range []string{"1000 ports per source address", "40000-40999", "x 1 source address", "--source-ips", "2 or more source addresses"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("want %q in:\n%s", want, errOut)
		}
	}
	if strings.Contains(errOut, "destination endpoint") {
		t.Errorf("suggests more destinations, which a bound client and one broker cannot use:\n%s", errOut)
	}
}
