package iotdb

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/iotdbfault"
	"github.com/hostprep/hostprep/internal/testenv"
)

func TestCLIOnRealIoTDB(t *testing.T) {
	addr := testenv.IoTDB(t)
	host, port, _ := strings.Cut(addr, ":")
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "pw")
	secret := os.Getenv("HOSTPREP_IOTDB_PASSWORD")
	if secret == "" {
		secret = "root"
	}
	if err := os.WriteFile(pwFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	html, csvPath := filepath.Join(dir, "report.html"), filepath.Join(dir, "steps.csv")
	out, stderr, code := testenv.Run(t, nil, "probe", "iotdb", "--host", host, "--port", port, "--password-file", pwFile,
		"--scenario", "write", "--steps", "1,2", "--step-duration", "1s", "--pool-size", "4",
		"--html", html, "--csv", csvPath, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, stderr)
	}
	var res Result
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
		"--steps", "1", "--step-duration", "500ms", "--min-tps", "1e9")
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
