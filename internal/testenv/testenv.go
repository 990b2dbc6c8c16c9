// Package testenv gives tests the real services and privileges they need:
// the mosquitto and IoTDB that scripts/test.sh starts on loopback, root, and
// a freshly built hostprep binary.
//
// Outside CI a missing service skips the test with the command that starts
// it; in CI (CI=true) it fails, so an integration test never passes by not
// running.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/sysctlkey"
)

// InCI reports whether the tests run under CI (CI=true), where missing
// services are failures, not skips.
func InCI() bool { return os.Getenv("CI") == "true" }

// SoakEnv turns on the long soak: HOSTPREP_TEST_SOAK=1 runs the probes'
// real-server scenario test with long steps. The test command and CI
// leave it unset, so the suite stays within its ten minutes.
const SoakEnv = "HOSTPREP_TEST_SOAK"

// SoakOr returns short, or long when SoakEnv is 1.
func SoakOr(short, long time.Duration) time.Duration {
	if os.Getenv(SoakEnv) == "1" {
		return long
	}
	return short
}

func need(t testing.TB, what, how string) {
	t.Helper()
	if InCI() {
		t.Fatalf("%s is not available in CI: %s", what, how)
	}
	t.Skipf("%s is not available: %s", what, how)
}

// MQTTBroker returns the URL (tcp://127.0.0.1:PORT) of the real mosquitto
// started by scripts/test.sh, from HOSTPREP_TEST_MQTT.
func MQTTBroker(t testing.TB) string {
	t.Helper()
	return service(t, "mosquitto", "mosquitto", "HOSTPREP_TEST_MQTT")
}

// RabbitMQ returns the URL (tcp://127.0.0.1:PORT) of the MQTT listener of
// the real RabbitMQ (Debian's rabbitmq-server with rabbitmq_mqtt) that
// scripts/rabbitmq.sh starts, from HOSTPREP_TEST_RABBITMQ: a second broker,
// one that bends the protocol (it answers a QoS 2 PUBLISH with PUBACK).
func RabbitMQ(t testing.TB) string {
	t.Helper()
	return service(t, "RabbitMQ's MQTT plugin", "rabbitmq", "HOSTPREP_TEST_RABBITMQ")
}

// IoTDB returns host:port of the real IoTDB DataNode started by
// scripts/test.sh, from HOSTPREP_TEST_IOTDB. The test then takes its turn
// on the host-wide IoTDB lock (IoTDBLockFile) until it ends: the one
// DataNode shares 2 cores with the suite, and two packages' load tests
// meeting on it stalled it (a CREATE TIMESERIES that did not return
// within 30 s). The lock is IoTDB's own, so these tests overlap with the
// global-sysctl ones; a test that needs both calls LockGlobalSysctls
// first.
func IoTDB(t testing.TB) string {
	t.Helper()
	a := service(t, "IoTDB", "iotdb", "HOSTPREP_TEST_IOTDB")
	lockIoTDB(t)
	return a
}

// service returns the address of a service scripts/test.sh starts, from
// the environment variable env; when it is unset the test skips (fails in
// CI) saying how to start it with scripts/SCRIPT.sh.
func service(t testing.TB, what, script, env string) string {
	t.Helper()
	a := os.Getenv(env)
	if a == "" {
		need(t, what, "run the README's test command (scripts/test.sh), or scripts/"+script+".sh start and export "+env)
	}
	return a
}

// RequireRoot skips (fails in CI) unless the test runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		need(t, "root", "run the tests as root")
	}
}

// RequireFiles skips (fails in CI) unless every one of paths exists
// (the programs and configuration a test runs with).
func RequireFiles(t testing.TB, paths ...string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			if InCI() {
				t.Fatalf("%s is needed: %v", p, err)
			}
			t.Skipf("%s is needed: %v", p, err)
		}
	}
}

// RequireUnshare skips (fails in CI) unless unshare(1) can make a new
// mount and network namespace here.
func RequireUnshare(t testing.TB) {
	t.Helper()
	RequireRoot(t)
	if err := exec.Command("unshare", "--mount", "--net", "true").Run(); err != nil {
		need(t, "unshare --mount --net", err.Error())
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// RepoRoot is the module root (the directory holding go.mod).
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Binary builds ./cmd/hostprep once per test process (with -race when the
// tests run with it) and returns the path of the binary.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		// One binary per checkout and race mode, in the checkout's
		// git-ignored .cache/testbin, rebuilt by each test process (the go
		// build cache makes that quick) and renamed into place, so test runs
		// leave no directory behind in /tmp.
		dir := filepath.Join(RepoRoot(), ".cache", "testbin")
		if buildErr = os.MkdirAll(dir, 0o755); buildErr != nil {
			return
		}
		name := "hostprep"
		if raceEnabled {
			name += "-race"
		}
		tmp := filepath.Join(dir, fmt.Sprintf(".%s.%d", name, os.Getpid()))
		args := []string{"build", "-o", tmp}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/hostprep")
		cmd := exec.Command("go", args...)
		cmd.Dir = RepoRoot()
		if buildOut, buildErr = cmd.CombinedOutput(); buildErr != nil {
			os.Remove(tmp)
			return
		}
		binPath = filepath.Join(dir, name)
		buildErr = os.Rename(tmp, binPath)
	})
	if buildErr != nil {
		t.Fatalf("building hostprep: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

// HostSysctl returns the live value of sysctl key (net.core.somaxconn) in
// this process's namespaces, read from /proc/sys and trimmed; an
// unreadable key fails the test.
func HostSysctl(t testing.TB, key string) string {
	t.Helper()
	b, err := os.ReadFile(sysctlkey.File("/proc/sys", key))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
