package preflight

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"golang.org/x/sys/unix"
)

// embeddedRun runs `hostprep preflight --profile ready-small -o json`
// (a broker target whose MQTT probe runs the broker embedded) under
// prlimit --nofile=N:N, as a user who starts hostprep with that limit
// would, and returns the report.
func embeddedRun(t *testing.T, nofile uint64) Report {
	t.Helper()
	cmd := exec.Command("prlimit", fmt.Sprintf("--nofile=%d:%d", nofile, nofile), testenv.Binary(t), "preflight", "--profile", "ready-small", "-o", "json")
	out, stderr, code := testenv.Exec(t, cmd)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return r
}

// fdChecks are the report's fd.soft, fd.hard and fd.raise, by ID.
func fdChecks(t *testing.T, r Report) map[string]verdict.Check {
	t.Helper()
	m := map[string]verdict.Check{}
	for _, c := range r.Checks {
		if c.ID == "fd.soft" || c.ID == "fd.hard" || c.ID == "fd.raise" {
			m[c.ID] = c
		}
	}
	if len(m) != 3 {
		t.Fatalf("report lacks fd checks: %+v", r.Checks)
	}
	return m
}

// With the embedded broker the process that holds the sockets is
// hostprep itself: the fd checks judge its own limits, not a login
// shell's, and pass where those cover the target.
func TestEmbeddedBrokerJudgesHostprepItself(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max < 8000 {
		t.Skipf("hard nofile %d here: cannot start hostprep with 8000", lim.Max)
	}
	r := embeddedRun(t, 8000)
	if !r.Target.InProcess || !r.TargetProcess.Self || r.TargetProcess.PID != 0 {
		t.Fatalf("target %+v, process %+v: want the embedded broker judged as hostprep itself, no PID", r.Target, r.TargetProcess)
	}
	for id, c := range fdChecks(t, r) {
		if c.Status != verdict.Pass {
			t.Errorf("%s %s at nofile 8000 for 5000 sockets: %s (observed %s)", id, c.Status, c.Summary, c.Observed)
		}
	}
	if c := fdChecks(t, r)["fd.soft"]; !strings.Contains(c.Observed, "hostprep itself") || !strings.Contains(c.Observed, "raises its soft limit to its hard limit itself") {
		t.Errorf("fd.soft observed %q: want hostprep itself, and that it raises its own soft limit", c.Observed)
	}
}

// Where hostprep's own limit is short, fd.soft, fd.hard and fd.raise
// fail with fixes that name what exists: no --service or --pid (there is
// no other process to name), no /proc/PID/limits of a process that is
// gone when the report is read, and observed lines short enough to read.
func TestEmbeddedBrokerShortLimitFixes(t *testing.T) {
	r := embeddedRun(t, 3000)
	stale := regexp.MustCompile(`/proc/(\d+)/`)
	for id, c := range fdChecks(t, r) {
		if c.Status != verdict.Fail {
			t.Errorf("%s %s at nofile 3000 for 5000 sockets, want fail: %s", id, c.Status, c.Summary)
		}
		if c.Remedy == "" {
			t.Errorf("%s has no fix", id)
		}
		text := c.Summary + " " + c.Observed + " " + c.Remedy
		for _, bad := range []string{"--service UNIT", "--pid PID", "login shell"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s names %q, which does not apply to hostprep's own process: %s", id, bad, text)
			}
		}
		for _, m := range stale.FindAllStringSubmatch(text, -1) {
			if m[1] != "1" {
				t.Errorf("%s cites %s, a process that may be gone when the report is read: %s", id, m[0], text)
			}
		}
		if len(c.Observed) > 240 {
			t.Errorf("%s observed line is %d characters: %s", id, len(c.Observed), c.Observed)
		}
	}
}

// --port names the listener to judge: its owner is then the target, not
// hostprep's embedded broker.
func TestEmbeddedBrokerPortNamesAnother(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	out, stderr, code := testenv.Run(t, nil, "preflight", "--profile", "ready-small", "--port", port, "-o", "json")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if r.Target.InProcess || r.TargetProcess.Self || r.TargetProcess.PID != os.Getpid() {
		t.Errorf("--port %s: target %+v, process %+v; want the listener's owner, pid %d", port, r.Target, r.TargetProcess, os.Getpid())
	}
}
