package preflight

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"golang.org/x/sys/unix"
)

// The done-when on this machine: hard nofile (20000 here), no
// CAP_SYS_RESOURCE, one source address: 1M loadgen sockets must fail naming
// all three.
func TestE2EMillionLoadgenFails(t *testing.T) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Max >= 1010000 {
		t.Skipf("this host's hard nofile %d already covers 1M sockets", lim.Max)
	}
	capSys, err := facts.HasCap("/proc/self/status", facts.CapSysResource)
	if err != nil {
		t.Fatal(err)
	}
	out, stderr, code := testenv.Run(t, nil, "preflight", "--sockets", "1000000", "--role", "loadgen")
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	hard := fmt.Sprint(lim.Max) // the binary inherits the test process's hard limit
	for _, want := range []string{"hard nofile " + hard + " < 1000000", "FAIL   fd.soft", "FAIL   ports.ephemeral"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !capSys && !strings.Contains(out, "cannot be raised without CAP_SYS_RESOURCE: "+hard+" file descriptors") {
		t.Errorf("output does not name the missing CAP_SYS_RESOURCE and the %s ceiling:\n%s", hard, out)
	}
	if !regexp.MustCompile(`need \d+ source addresses`).MatchString(out) {
		t.Errorf("output does not say how many source addresses are needed:\n%s", out)
	}
	if !strings.Contains(stderr, "fd.soft") {
		t.Errorf("stderr should name the failed checks: %s", stderr)
	}
}

// Every machine-readable output parses with standard tools.
func TestE2EOutputsParse(t *testing.T) {
	args := []string{"preflight", "--sockets", "50000", "--role", "broker", "--conn-rate", "500"}

	out, stderr, code := testenv.Run(t, nil, append(args, "-o", "json")...)
	if code != 0 && code != 1 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	var r Report
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("JSON does not parse into Report: %v\n%s", err, out)
	}
	if r.Target.Sockets != 50000 || len(r.Checks) != len(checks.CheckIDs()) || r.Capacity.Sockets <= 0 || r.Verdict != verdict.Worst(r.Checks) {
		t.Errorf("JSON report: target %+v, %d checks, capacity %+v, verdict %s", r.Target, len(r.Checks), r.Capacity, r.Verdict)
	}
	wantCode := 0
	if r.Verdict == verdict.Fail {
		wantCode = 1
	}
	if code != wantCode {
		t.Errorf("exit %d with verdict %s", code, r.Verdict)
	}
	for _, c := range r.Checks {
		if c.Status == verdict.Fail && (c.Observed == "" || c.Expected == "" || c.Remedy == "") {
			t.Errorf("failing check without observed/expected/remedy: %+v", c)
		}
	}

	out, _, _ = testenv.Run(t, nil, append(args, "-o", "junit")...)
	var doc struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &doc); err != nil || len(doc.Suites) != 1 {
		t.Fatalf("JUnit does not parse: %v\n%s", err, out)
	}
	if doc.Suites[0].Tests != len(checks.CheckIDs()) {
		t.Errorf("JUnit tests=%d, want %d", doc.Suites[0].Tests, len(checks.CheckIDs()))
	}
	for _, c := range doc.Suites[0].Cases {
		if c.Failure != nil && c.Skipped != nil {
			t.Errorf("%s both failed and skipped", c.Name)
		}
	}

	out, _, _ = testenv.Run(t, nil, append(args, "-o", "prom")...)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(out))
	if err != nil {
		t.Fatalf("prom does not parse: %v\n%s", err, out)
	}
	if f := fams["hostprep_preflight_check_status"]; f == nil || len(f.Metric) != len(checks.CheckIDs()) {
		t.Errorf("one gauge per check expected:\n%s", out)
	}
	if f := fams["hostprep_preflight_capacity_sockets"]; f == nil || f.Metric[0].Gauge.GetValue() <= 0 {
		t.Errorf("capacity gauge missing:\n%s", out)
	}
}

func TestE2EBadInput(t *testing.T) {
	_, stderr, code := testenv.Run(t, nil, "preflight", "--sockets", "1000", "--role", "broker", "--ignore", "fd.sotf")
	if code != 2 || !strings.Contains(stderr, `"fd.sotf"`) || !strings.Contains(stderr, "fd.soft") {
		t.Errorf("unknown --ignore ID: exit %d, %s", code, stderr)
	}
	_, stderr, code = testenv.Run(t, nil, "preflight", "--sockets", "1000", "--role", "server")
	if code != 2 || !strings.Contains(stderr, "--role") {
		t.Errorf("bad role: exit %d, %s", code, stderr)
	}
	_, stderr, code = testenv.Run(t, nil, "preflight", "--sockets", "1000", "--role", "broker", "-o", "yaml")
	if code != 2 {
		t.Errorf("bad output: exit %d, %s", code, stderr)
	}
	_, stderr, code = testenv.Run(t, nil, "preflight", "--sockets", "1000", "--role", "broker", "--pid", "999999999")
	if code != 2 || !strings.Contains(stderr, "--pid") {
		t.Errorf("missing pid: exit %d, %s", code, stderr)
	}
	// nonsense values are refused in one line naming the flag and value,
	// never silently replaced by a default
	for _, c := range []struct{ args, want string }{
		{"--pid -1", "--pid -1: want the PID (> 0)"},
		{"--pid 0", "--pid 0: want the PID (> 0)"},
		{"--pid 999999999", "--pid 999999999: no such process"},
		{"--active --active-timeout -1s", "--active-timeout -1s: want a positive time bound"},
		{"--active --active-timeout 0s", "--active-timeout 0s: want a positive time bound"},
		{"--active-timeout 5s", "--active-timeout 5s needs --active"},
		{"--active --active-sockets -4", "--active-sockets -4: want at least 2 sockets"},
		{"--active --active-sockets 1", "--active-sockets 1: want at least 2 sockets"},
		{"--sockets 0", "--sockets 0: want a positive number"},
		{"--sockets -5", "--sockets -5: want a positive number"},
		{"--conn-rate -1", `--conn-rate: "-1" is not a rate > 0`},
		{"--port 0", "--port 0: want the TCP port"},
		{"--role loadgen --port 1883", "--port [1883] with --role loadgen"},
		{"--role iotdb --iotdb-home /nonexistent", "--iotdb-home /nonexistent: no conf/iotdb-system.properties"},
		{"--root /nonexistent", "--root /nonexistent"},
		{"--root /proc/version", "--root /proc/version is not a directory: give the directory `hostprep preflight --record DIR` wrote"},
		{"--active --root /tmp", "--active with --root /tmp"},
	} {
		args := append([]string{"preflight", "--sockets", "100"}, strings.Fields(c.args)...)
		out, stderr, code := testenv.Run(t, nil, args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || out != "" {
			t.Errorf("%s: exit %d, stderr %q, stdout %d bytes; want exit 2 and one line with %q", c.args, code, stderr, len(out), c.want)
		}
	}
	// A profile without a preflight section takes the target from
	// --sockets and --role (it used to refuse, asking for exactly those).
	if out, stderr, code := testenv.Run(t, nil, "preflight", "--profile", "sys-tune", "--sockets", "1000", "--role", "loadgen", "-o", "json"); code == 2 || !strings.Contains(out, `"role": "loadgen"`) {
		t.Errorf("--profile sys-tune --sockets 1000 --role loadgen: exit %d, %s\n%.300s", code, stderr, out)
	}
	if _, stderr, code := testenv.Run(t, nil, "preflight", "--profile", "sys-tune"); code != 2 || !strings.Contains(stderr, "has no preflight section") {
		t.Errorf("--profile sys-tune alone: exit %d, %s; want 2 saying it has no preflight section", code, stderr)
	}
	// no --sockets and no profile: the flag is required, not "--sockets 0"
	out, stderr, code := testenv.Run(t, nil, "preflight", "--role", "broker")
	if code != 2 || !strings.Contains(stderr, "--sockets is required") || strings.Contains(stderr, "--sockets 0") || out != "" {
		t.Errorf("no --sockets: exit %d, stderr %q", code, stderr)
	}
	assertNoChildren(t)
}

// --ignore turns the failures into warnings: exit 0; --strict fails again.
func TestE2EIgnoreAndStrict(t *testing.T) {
	out, _, _ := testenv.Run(t, nil, "preflight", "--sockets", "1000000", "--role", "loadgen", "-o", "json")
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, c := range r.Checks {
		if c.Status == verdict.Fail {
			failed = append(failed, c.ID)
		}
	}
	if len(failed) == 0 {
		t.Skip("nothing fails for 1M sockets on this host")
	}
	_, stderr, code := testenv.Run(t, nil, "preflight", "--sockets", "1000000", "--role", "loadgen", "--ignore", strings.Join(failed, ","))
	if code != 0 {
		t.Errorf("with %v ignored: exit %d %s", failed, code, stderr)
	}
	_, _, code = testenv.Run(t, nil, "preflight", "--sockets", "1000000", "--role", "loadgen", "--ignore", strings.Join(failed, ","), "--strict")
	if code != 1 {
		t.Errorf("--strict with warnings: exit %d, want 1", code)
	}
}

// --active with a small K: the child opens the sockets under the target's
// limits and prints the kernel bytes per socket.
func TestE2EActive(t *testing.T) {
	r := runReport(t, "preflight", "--sockets", "3000", "--role", "broker", "--active")
	m := r.Capacity.Measured
	if m == nil || m.ReachedSockets != 3000 || m.Connections != 1500 || m.FirstError != "" {
		t.Fatalf("measured %+v", m)
	}
	// an idle TCP socket costs a few KiB of slab; anything outside 1..64 KiB is a broken measurement
	if m.BytesPerSocket < 1024 || m.BytesPerSocket > 64<<10 {
		t.Errorf("bytes per socket %.0f is implausible", m.BytesPerSocket)
	}
	if c := testenv.CheckByID(t, r.Checks, "active"); c.Status != verdict.Pass {
		t.Errorf("active check %+v", c)
	}
	if !m.CostMeasured || !r.Capacity.BytesPerSocketMeasured || r.Capacity.BytesPerSocket != m.BytesPerSocket {
		t.Errorf("3000 sockets is a measurement: measured %+v, capacity %+v", m, r.Capacity)
	}
	text, _, _ := testenv.Run(t, nil, "preflight", "--sockets", "2000", "--role", "broker", "--active")
	if !strings.Contains(text, "bytes per socket") || !strings.Contains(text, "2 fds per connection") ||
		!strings.Contains(text, "opened 2000 of 2000 sockets as 1000 loopback connections: both ends counted") ||
		!strings.Contains(text, "(1000 loopback connections, both ends in the measuring process)") {
		t.Errorf("text output lacks the measurement or how many connections it was:\n%s", text)
	}
	help, _, _ := testenv.Run(t, nil, "preflight", "--help")
	for _, want := range []string{"--active --sockets 15000 opens 7500 connections", "counting both ends as sockets (--sockets 15000 opens 7500 connections)", "both ends counted: K/2 loopback connections"} {
		if !strings.Contains(strings.Join(strings.Fields(help), " "), want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	assertNoChildren(t)
}

// --log-level debug shows where the facts and limits came from and the
// measuring child's command line.
func TestE2EDebugLog(t *testing.T) {
	_, stderr, code := testenv.Run(t, nil, "--log-level", "debug", "preflight", "--sockets", "10", "--active")
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"preflight: facts gathered", "preflight: target process limits", "source=", "systemd_running=",
		"preflight --active: starting the measuring child", facts.ActiveChildArg + " --sockets 10 --nofile", "preflight --active: child finished", "preflight: check"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("debug log lacks %q:\n%s", want, stderr)
		}
	}
	_, stderr, _ = testenv.Run(t, nil, "preflight", "--sockets", "10")
	if strings.Contains(stderr, "level=DEBUG") {
		t.Errorf("debug lines at the default level:\n%s", stderr)
	}
}

// --active with 10 sockets cannot measure the cost per socket: the report
// says so and keeps the estimate, never "0 bytes each".
func TestE2EActiveTooSmall(t *testing.T) {
	// an odd --active-sockets is rounded down to whole connections, and said
	odd := runReport(t, "preflight", "--sockets", "10", "--active", "--active-sockets", "7")
	if m := odd.Capacity.Measured; m == nil || m.RequestedSockets != 6 || m.ReachedSockets != 6 || !strings.Contains(strings.Join(odd.Notes, "\n"), "--active-sockets 7 rounded down to 6") {
		t.Errorf("odd --active-sockets: measured %+v, notes %q", odd.Capacity.Measured, odd.Notes)
	}

	r := runReport(t, "preflight", "--sockets", "10", "--role", "broker", "--active")
	m := r.Capacity.Measured
	if m == nil || m.ReachedSockets != 10 || m.CostMeasured || !strings.Contains(m.CostNote, "too small to measure") {
		t.Fatalf("measured %+v", m)
	}
	if r.Capacity.BytesPerSocket != checks.EstimatedBytesPerSocket || r.Capacity.BytesPerSocketMeasured {
		t.Errorf("capacity must keep the estimate: %+v", r.Capacity)
	}
	if c := testenv.CheckByID(t, r.Checks, "active"); !strings.Contains(c.Summary, "too small to measure") || strings.Contains(c.Summary, " 0 bytes") {
		t.Errorf("active check %+v", c)
	}
	assertNoChildren(t)
}

// In a network namespace of its own with a 1000-port range, 3000 sockets
// (1500 connections) need a second loopback source address.
func TestE2EActiveExtraSourceAddresses(t *testing.T) {
	testenv.RequireUnshare(t)
	bin := testenv.Binary(t)
	script := `ip link set lo up && echo "40000 40999" > /proc/sys/net/ipv4/ip_local_port_range && exec "$0" preflight --sockets 3000 --role broker --active -o json`
	cmd := exec.Command("unshare", "--net", "sh", "-c", script, bin)
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() > 1 {
		t.Fatalf("%v: %s", err, ee.Stderr)
	}
	var r Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	m := r.Capacity.Measured
	if m == nil || m.ReachedSockets != 3000 || m.SourceAddresses < 2 {
		t.Fatalf("measured %+v, want 3000 sockets over >= 2 source addresses", m)
	}
	if c := testenv.CheckByID(t, r.Checks, "container"); c.Status != verdict.Warn {
		t.Errorf("own network namespace not reported: %+v", c)
	}
}

// The child must not outlive a killed hostprep.
func TestE2EActiveChildDiesWithParent(t *testing.T) {
	bin := testenv.Binary(t)
	cmd := exec.Command(bin, "preflight", "--sockets", "15000", "--role", "broker", "--active")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := testenv.Eventually(10*time.Second, func() bool { return len(childrenOf(bin)) > 0 })
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !seen {
		// without a child there is nothing to prove: the test must not pass
		t.Fatalf("the measuring child (%s %s) never appeared within 10 s", bin, facts.ActiveChildArg)
	}
	assertNoChildren(t)
}

// childrenOf lists PIDs whose command line is our binary's active child.
func childrenOf(bin string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 2 && args[0] == bin && args[2] == facts.ActiveChildArg {
			var pid int
			fmt.Sscan(e.Name(), &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}

func assertNoChildren(t *testing.T) {
	t.Helper()
	bin := testenv.Binary(t)
	if !testenv.Eventually(5*time.Second, func() bool { return len(childrenOf(bin)) == 0 }) {
		t.Errorf("measuring children left behind: %v", childrenOf(bin))
	}
}

// --profile needs no other flags; explicit flags override the profile.
func TestE2EProfile(t *testing.T) {
	r := runReport(t, "preflight", "--profile", "mqtt-broker-1m")
	if r.Target.Sockets != 1000000 || r.Target.Role != facts.Broker || r.TargetProcess.Unit == "" {
		t.Errorf("profile target %+v, process %+v", r.Target, r.TargetProcess)
	}
	out, _, _ := testenv.Run(t, nil, "preflight", "--profile", "mqtt-broker-1m", "--sockets", "500", "-o", "json")
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Target.Sockets != 500 {
		t.Errorf("--sockets must override the profile: %v %+v", err, r.Target)
	}
}

// On this machine systemd is not PID 1 (no /run/systemd/system): a unit's
// LimitNOFILE cannot apply, a unit that does not exist is bad input, and
// no check may claim systemd sets the limits.
func TestE2EWithoutSystemd(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here")
	}
	_, stderr, code := testenv.Run(t, nil, "preflight", "--sockets", "10", "--service", "nosuch.service")
	if code != 2 || !strings.Contains(stderr, "nosuch.service") || !strings.Contains(stderr, "systemd is not running") {
		t.Errorf("--service nosuch.service: exit %d, %s", code, stderr)
	}
	out, stderr, code := testenv.Run(t, nil, "preflight", "--profile", "mqtt-broker-1m", "-o", "json")
	if code != 1 {
		t.Fatalf("--profile mqtt-broker-1m: exit %d, want 1: %s", code, stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.TargetProcess.ManagedBy == "systemd" {
		t.Errorf("target process managed by systemd without systemd: %+v", r.TargetProcess)
	}
	for _, c := range r.Checks {
		if strings.Contains(c.Summary, "PID 1") || (strings.HasPrefix(c.ID, "fd.") && strings.Contains(c.Remedy, "systemctl")) {
			t.Errorf("%s assumes systemd: %s", c.ID, message(c))
		}
	}
	if c := testenv.CheckByID(t, r.Checks, "fd.soft"); c.Status != verdict.Fail {
		t.Errorf("fd.soft: %s", message(c))
	}
}

// What `tune apply --profile mqtt-broker-1m` leaves in a sandbox — limits.d
// at 2097152 and a drop-in for emqx.service, whose unit is not installed —
// must not make the fd checks pass: systemd is not running, the unit does
// not exist, and without CAP_SYS_RESOURCE in the bounding set no login can
// get limits.d's 2097152. The files go to tmpfs mounts of a private mount
// namespace; no sysctl is touched.
func TestE2EAfterTuneInSandbox(t *testing.T) {
	testenv.RequireUnshare(t)
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here")
	}
	bin := testenv.Binary(t)
	script := `set -e
mount -t tmpfs hostprep-test /etc/security/limits.d
mount -t tmpfs hostprep-test /etc/systemd
mkdir -p /etc/systemd/system/emqx.service.d
printf '* soft nofile 2097152\n* hard nofile 2097152\nroot soft nofile 2097152\nroot hard nofile 2097152\n' > /etc/security/limits.d/60-hostprep.conf
printf '[Service]\nLimitNOFILE=2097152:2097152\n' > /etc/systemd/system/emqx.service.d/60-hostprep.conf
exec "$0" preflight --profile mqtt-broker-1m -o json`
	out, err := exec.Command("unshare", "--mount", "sh", "-c", script, bin).Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("want exit 1: %v %s", err, out)
	}
	var r Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// The profile names [emqx, mosquitto]: judged on the first installed
	// (mosquitto where the README's test command installed it), else on
	// emqx.service, which has only the drop-in.
	tp := r.TargetProcess
	why := "not installed"
	if _, err := os.Stat("/usr/lib/systemd/system/mosquitto.service"); err == nil {
		why = "systemd is not running"
		if tp.UnitMissing || tp.Unit != "mosquitto.service" {
			t.Errorf("the installed one of the profile's services is mosquitto.service: %+v", tp)
		}
	} else if !tp.UnitMissing || tp.Unit != "emqx.service" {
		t.Errorf("the profile's emqx.service has only a drop-in: %+v", tp)
	}
	if c := testenv.CheckByID(t, r.Checks, "fd.soft"); c.Status != verdict.Fail || !strings.Contains(c.Summary, why) {
		t.Errorf("fd.soft: %s", message(c))
	}
	if bnd, err := facts.HasCapIn("/proc/self/status", "CapBnd", facts.CapSysResource); err == nil && !bnd {
		var lim unix.Rlimit
		_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
		if tp.NofileHard != lim.Max || !strings.Contains(tp.Source, "CapBnd") {
			t.Errorf("without CAP_SYS_RESOURCE in CapBnd a login cannot get 2097152: %+v", tp)
		}
		if c := testenv.CheckByID(t, r.Checks, "fd.hard"); c.Status != verdict.Fail {
			t.Errorf("fd.hard passes on limits nobody here can get: %s", message(c))
		}
	}
}

// --pid: the child takes that process's limits; asking for more sockets
// than they allow stops at EMFILE, classified and reported as a failure.
func TestE2EActiveHitsTargetLimit(t *testing.T) {
	pid := sleeperUnder600(t)
	out, stderr, code := testenv.Run(t, nil, "preflight", "--sockets", "1000", "--pid", pid, "--active", "--active-sockets", "1000", "-o", "json")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s\n%s", code, stderr, out)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	m := r.Capacity.Measured
	if m == nil || m.NofileSoft != 600 || m.FirstError != "EMFILE" || m.ReachedSockets >= 600 || m.ReachedSockets < 400 {
		t.Fatalf("measured %+v", m)
	}
	if c := testenv.CheckByID(t, r.Checks, "active"); c.Status != verdict.Fail || !strings.Contains(c.Summary, "EMFILE") {
		t.Errorf("active check %+v", c)
	}
	if c := testenv.CheckByID(t, r.Checks, "fd.soft"); c.Status != verdict.Fail || !strings.Contains(c.Summary, "soft nofile 600") || !strings.Contains(c.Summary, "1000 sockets") {
		t.Errorf("fd.soft %+v", c)
	}
}

// --record must name a new or empty directory: an existing file, a path
// below a file and a non-empty directory are bad input (exit 2, one line
// naming --record), refused before anything is gathered or created.
func TestRecordRefusesNonDirectory(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "afile")
	full := filepath.Join(dir, "full")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(full, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, rec := range []string{file, filepath.Join(file, "sub"), full} {
		out, stderr, code := testenv.Run(t, nil, "preflight", "--sockets", "10", "--record", rec)
		if code != 2 || !strings.HasPrefix(stderr, "hostprep: --record "+rec+": ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || out != "" {
			t.Errorf("--record %s: exit %d, stdout %q, stderr %q; want exit 2 and one line naming --record", rec, code, out, stderr)
		}
	}
}

// --pid: fd.hard and fd.raise judge the named process by the host's
// bounding set too. Where CAP_SYS_RESOURCE is outside it (this sandbox),
// neither suggests prlimit or tune (root cannot raise the limit either:
// prlimit fails with EPERM); where it is inside, fd.raise offers prlimit.
func TestE2EPidRemediesFollowTheBoundingSet(t *testing.T) {
	pid := sleeperUnder600(t)
	out, stderr, code := testenv.Run(t, nil, "preflight", "--sockets", "1000000", "--role", "loadgen", "--pid", pid, "-o", "json")
	var r Report
	if code != 1 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("exit %d, want 1 with a JSON report: %s\n%s", code, stderr, out)
	}
	raise, hard := testenv.CheckByID(t, r.Checks, "fd.raise"), testenv.CheckByID(t, r.Checks, "fd.hard")
	bnd, err := facts.HasCapIn("/proc/self/status", "CapBnd", facts.CapSysResource)
	if err != nil {
		t.Fatal(err)
	}
	if offers := strings.Contains(raise.Remedy+hard.Remedy, "prlimit"); offers != bnd {
		t.Errorf("CAP_SYS_RESOURCE in the bounding set: %v, yet prlimit offered: %v\nfd.hard: %s\nfd.raise: %s", bnd, offers, hard.Remedy, raise.Remedy)
	}
}

// sleeperUnder600 starts `sleep 30` with a soft nofile of 600, waits
// until it runs (so /proc/PID/limits shows 600) and returns its PID; it
// is killed at t's end.
func sleeperUnder600(t *testing.T) string {
	t.Helper()
	sleeper := exec.Command("sh", "-c", "ulimit -Sn 600 && exec sleep 30")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	pid := fmt.Sprint(sleeper.Process.Pid)
	testenv.WaitFor(t, 5*time.Second, "sleep to run under ulimit -Sn 600", func() bool {
		b, _ := os.ReadFile("/proc/" + pid + "/comm")
		return strings.TrimSpace(string(b)) == "sleep"
	})
	return pid
}
