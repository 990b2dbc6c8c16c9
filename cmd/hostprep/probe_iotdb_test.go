package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/iotdbfault"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/loadprobe/iotdb"
)

// `hostprep probe iotdb` end to end: flags, password file, outputs,
// progress, interrupts and exit codes, against the real IoTDB and the
// fault server.

// iotdbPasswordFile writes the test server's password
// ($HOSTPREP_IOTDB_PASSWORD, default root) to a file for --password-file
// and returns its path and the password.
func iotdbPasswordFile(t *testing.T) (path, secret string) {
	t.Helper()
	secret = os.Getenv("HOSTPREP_IOTDB_PASSWORD")
	if secret == "" {
		secret = "root"
	}
	path = filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(path, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, secret
}

func TestCLIOnRealIoTDB(t *testing.T) {
	addr := testenv.IoTDB(t)
	host, port, _ := strings.Cut(addr, ":")
	dir := t.TempDir()
	pwFile, secret := iotdbPasswordFile(t)
	html, csvPath := filepath.Join(dir, "report.html"), filepath.Join(dir, "steps.csv")
	out, stderr, code := testenv.Run(t, nil, "probe", "iotdb", "--host", host, "--port", port, "--password-file", pwFile,
		"--scenario", "write", "--steps", "1,2", "--step-duration", "1s", "--pool-size", "4",
		"--html", html, "--csv", csvPath, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	var res iotdb.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--output json is not a Result: %v\n%s", err, out)
	}
	if len(res.Steps) != 2 || res.Verdict != "pass" || res.Steps[1].Workers != 2 {
		t.Errorf("result: %d steps, verdict %s", len(res.Steps), res.Verdict)
	}
	if secret != "root" && strings.Contains(out+stderr, secret) {
		t.Errorf("the password appears in the output")
	}
	page, err := os.ReadFile(html)
	// Response time, throughput and the per-second latency heat map (the
	// probe records Step.Seconds).
	if err != nil || strings.Count(string(page), "<svg") != 3 || !strings.Contains(string(page), "heat map") {
		t.Errorf("--html: %v, %d charts (want 3, the heat map among them)", err, strings.Count(string(page), "<svg"))
	}
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != 3 || rows[0][1] != "workers" || rows[2][1] != "2" {
		t.Errorf("--csv: %v rows %v", err, rows)
	}
	if !strings.Contains(stderr, "probe iotdb: 2 workers:") {
		t.Errorf("no per-step progress on stderr: %s", stderr)
	}

	// A threshold that cannot be met: exit 1 naming the check.
	_, stderr, code = testenv.Run(t, nil, "probe", "iotdb", "--host", host, "--port", port, "--password-file", pwFile,
		"--steps", "1", "--step-duration", "500ms", "--min-tps", "9000000")
	if code != 1 || !strings.Contains(stderr, "iotdb.min_tps") {
		t.Errorf("unmeetable --min-tps: exit %d, stderr %s; want 1 naming iotdb.min_tps", code, stderr)
	}
}

func TestCLIExitCodes(t *testing.T) {
	// Bad input: exit 2, one line naming the flag.
	_, stderr, code := testenv.Run(t, nil, "probe", "iotdb", "--scenario", "bogus")
	if code != 2 || !strings.Contains(stderr, "--scenario") {
		t.Errorf("--scenario bogus: exit %d, %s", code, stderr)
	}
	_, stderr, code = testenv.Run(t, nil, "probe", "iotdb", "--steps", "1,2", "--target-step", "5")
	if code != 2 || !strings.Contains(stderr, "--target-step") {
		t.Errorf("--target-step 5: exit %d, %s", code, stderr)
	}
	_, stderr, code = testenv.Run(t, nil, "probe", "iotdb", "--password-file", "/nonexistent/pw")
	if code != 2 || !strings.Contains(stderr, "--password-file") {
		t.Errorf("missing password file: exit %d, %s", code, stderr)
	}

	// Nothing listening: exit 3.
	srv, err := iotdbfault.Start(iotdbfault.None)
	if err != nil {
		t.Fatal(err)
	}
	host, port := srv.HostPort()
	srv.Close()
	_, stderr, code = testenv.Run(t, nil, "probe", "iotdb", "--host", host, "--port", strconv.Itoa(port), "--steps", "1", "--step-duration", "200ms")
	if code != 3 || !strings.Contains(stderr, "cannot open a session") {
		t.Errorf("closed port: exit %d, %s", code, stderr)
	}

	// A server rejecting every write: exit 1 with the error-rate check.
	srv = iotdbfault.StartT(t, iotdbfault.Status)
	host, port = srv.HostPort()
	secret := "s3cr3t-Pw-not-printed"
	out, stderr, code := testenv.Run(t, []string{"HOSTPREP_IOTDB_PASSWORD=" + secret}, "probe", "iotdb", "--host", host, "--port", strconv.Itoa(port),
		"--steps", "1", "--step-duration", "300ms", "--warmup", "-1s", "--log-level", "debug")
	if code != 1 || !strings.Contains(stderr, "iotdb.error_rate") || !strings.Contains(out, "status") {
		t.Errorf("status fault: exit %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	if strings.Contains(out+stderr, secret) {
		t.Errorf("the password from $HOSTPREP_IOTDB_PASSWORD was printed")
	}
}

func TestCLIRejectsZeroValuesAndDescendingSteps(t *testing.T) {
	for _, args := range [][]string{
		{"--step-duration", "0"}, {"--pool-size", "0"}, {"--port", "0"}, {"--wait-timeout", "0"},
		{"--call-timeout", "0"}, {"--steps", "4,2"},
	} {
		out, stderr, code := testenv.Run(t, nil, append([]string{"probe", "iotdb", "--host", "127.0.0.1"}, args...)...)
		line := strings.TrimSpace(stderr)
		if code != 2 || !strings.Contains(line, args[0]) || strings.Contains(line, "\n") || out != "" {
			t.Errorf("%v: exit %d\nstdout %q\nstderr %q\nwant exit 2, one line naming %s", args, code, out, stderr, args[0])
		}
	}
	// ready refuses a profile's bad IoTDB probe setting before tuning.
	prof := filepath.Join(t.TempDir(), "bad-probe.yaml")
	if err := os.WriteFile(prof, []byte("include: [iotdb]\nprobe:\n  iotdb:\n    host: 127.0.0.1\n    steps: [4, 2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := testenv.Run(t, nil, "ready", "--profile", prof, "--dry-run")
	if code != 2 || !strings.Contains(stderr, "probe.iotdb.steps") {
		t.Errorf("ready with probe.iotdb.steps [4, 2]: exit %d\nstdout %s\nstderr %s\nwant exit 2 naming probe.iotdb.steps", code, out, stderr)
	}
}

// The CLI: SIGINT during a step gives exit 3, the report says
// interrupted, and no PASS: in the last step (the tester's `--steps 1
// --step-duration 20s`) and in a step with another still to come (`1,2`,
// cut in step 1).
func TestCLIInterruptDuringAStepExits3(t *testing.T) {
	addr := testenv.IoTDB(t)
	host, port, _ := strings.Cut(addr, ":")
	pw, _ := iotdbPasswordFile(t)
	for _, tc := range []struct {
		steps string
		after time.Duration
	}{{"1", 4 * time.Second}, {"1,2", 4 * time.Second}} {
		cmd := exec.Command(testenv.Binary(t), "probe", "iotdb", "--host", host, "--port", port, "--password-file", pw,
			"--steps", tc.steps, "--step-duration", "20s", "--pool-size", "4")
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(tc.after, func() { _ = cmd.Process.Signal(syscall.SIGINT) })
		err := cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != 3 || !strings.Contains(o.String(), "interrupted") || !strings.Contains(o.String(), "partial") ||
			strings.Contains(o.String(), "verdict: PASS") || !strings.Contains(e.String(), "interrupted") {
			t.Errorf("--steps %s, SIGINT after %v: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 3, report saying interrupted and partial, no PASS",
				tc.steps, tc.after, code, o.String(), e.String())
		}
	}
}
