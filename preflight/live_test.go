package preflight

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/proclimits"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// Live tests against the mosquitto and IoTDB that scripts/test.sh starts:
// the listen() backlog read over sock_diag must be the Send-Q that
// `ss -ltn` prints for the same socket.

// servicePort returns the port of a HOSTPREP_TEST_* address.
func servicePort(t *testing.T, addr string) int {
	t.Helper()
	if u, err := url.Parse(addr); err == nil && u.Port() != "" {
		addr = u.Host
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%q: %v", addr, err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ssBacklogs runs `ss -ltnH sport = :PORT` and returns Send-Q by local
// address:port.
func ssBacklogs(t *testing.T, port int) map[string]uint32 {
	t.Helper()
	out, err := exec.Command("ss", "-ltnH", "sport", "=", ":"+strconv.Itoa(port)).Output()
	if err != nil {
		t.Fatalf("ss -ltn: %v", err)
	}
	m := map[string]uint32{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 4 || f[0] != "LISTEN" {
			continue
		}
		n, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			t.Fatalf("ss line %q: %v", line, err)
		}
		m[f[3]] = uint32(n)
	}
	if len(m) == 0 {
		t.Fatalf("ss -ltn shows no listener on port %d:\n%s", port, out)
	}
	return m
}

// ssEndpoint spells a listener's address as ss does ("127.0.0.1:18831",
// "[::ffff:127.0.0.1]:6667", "*:1883" for the wildcard).
func ssEndpoint(l facts.Listener) string {
	switch l.Address {
	case "0.0.0.0", "::":
		if l.Address == "::" {
			return "[::]:" + strconv.Itoa(l.Port)
		}
		return "0.0.0.0:" + strconv.Itoa(l.Port)
	}
	return l.Endpoint()
}

func TestLiveListenerBacklogEqualsSS(t *testing.T) {
	for _, svc := range []struct {
		name, addr, owner string
		want              uint32
	}{
		{"mosquitto", testenv.MQTTBroker(t), "mosquitto", 100},
		{"IoTDB DataNode", testenv.IoTDB(t), "java", 50},
	} {
		t.Run(svc.name, func(t *testing.T) {
			port := servicePort(t, svc.addr)
			ls, err := facts.ReadListeners()
			if err != nil {
				t.Fatal(err)
			}
			facts.FindOwners("/proc", ls, []int{port})
			ss := ssBacklogs(t, port)
			found := 0
			for _, l := range ls {
				if l.Port != port {
					continue
				}
				found++
				got, ok := ss[ssEndpoint(l)]
				if !ok {
					t.Errorf("sock_diag listener %s (%s) not in ss -ltn: %v", l.Endpoint(), ssEndpoint(l), ss)
					continue
				}
				if l.Backlog != got {
					t.Errorf("%s: sock_diag backlog %d, ss -ltn Send-Q %d", l.Endpoint(), l.Backlog, got)
				}
				if l.Backlog != svc.want {
					t.Errorf("%s: backlog %d, want %s's %d", l.Endpoint(), l.Backlog, svc.name, svc.want)
				}
				if l.Process != svc.owner || l.PID <= 0 {
					t.Errorf("%s: owner %q pid %d, want %s", l.Endpoint(), l.Process, l.PID, svc.owner)
				}
			}
			if found != len(ss) {
				t.Errorf("sock_diag found %d listeners on port %d, ss -ltn %d", found, port, len(ss))
			}
		})
	}
}

// runJSON runs the binary and decodes its --output json report.
func runJSON(t *testing.T, want int, args ...string) Report {
	t.Helper()
	return runJSONIf(t, func(code int) bool { return code == want }, args...)
}

// runJSONIf runs a preflight command with -o json, fails the test unless
// exitOK accepts its exit code, and returns the report.
func runJSONIf(t *testing.T, exitOK func(int) bool, args ...string) Report {
	t.Helper()
	out, stderr, code := testenv.Run(t, nil, append(args, "-o", "json")...)
	if !exitOK(code) {
		t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	return r
}

// The done-when: with the test mosquitto running, --port names
// its listener, whose backlog of 100 fails 2000 connections/s.
func TestE2ELiveBrokerBacklogFails(t *testing.T) {
	port := servicePort(t, testenv.MQTTBroker(t))
	r := runJSON(t, 1, "preflight", "--sockets", "5000", "--role", "broker", "--port", strconv.Itoa(port), "--conn-rate", "2000")
	c := testenv.CheckByID(t, r.Checks, "accept.backlog")
	if c.Status != verdict.Fail || !strings.Contains(c.Summary, "port "+strconv.Itoa(port)+" is 100") {
		t.Errorf("accept.backlog: %+v", c)
	}
	if len(r.Listeners) == 0 || r.Listeners[0].Backlog != 100 || r.Listeners[0].Port != port || r.Listeners[0].Process != "mosquitto" {
		t.Errorf("listeners %+v, want mosquitto on %d with backlog 100", r.Listeners, port)
	}
	// no --pid/--service: the listener's owner is the target process
	if tp := r.TargetProcess; tp.PID != r.Listeners[0].PID || tp.Assumed || !strings.Contains(tp.Source, "owner of the listener") {
		t.Errorf("target process %+v, want the listener's owner", tp)
	}
}

// iotdbHome is the release scripts/iotdb.sh unpacked (its cache layout).
func iotdbHome(t *testing.T) string {
	t.Helper()
	root := os.Getenv("HOSTPREP_CACHE")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".cache", "hostprep")
	}
	v := os.Getenv("HOSTPREP_IOTDB_VERSION")
	if v == "" {
		v = "2.0.10"
	}
	dir := filepath.Join(root, "iotdb-"+v)
	if _, err := os.Stat(filepath.Join(dir, "datanode", "conf", "iotdb-system.properties")); err != nil {
		if testenv.InCI() {
			t.Fatalf("IoTDB release not unpacked at %s: %v (scripts/iotdb.sh start fetches it)", dir, err)
		}
		t.Skipf("IoTDB release not unpacked at %s (run scripts/iotdb.sh start)", dir)
	}
	return dir
}

// The property names preflight reads exist in the release's own files.
func TestIoTDBPropertyNamesInRelease(t *testing.T) {
	home := iotdbHome(t)
	defs, src := facts.TemplateDefaults(filepath.Join(home, "datanode", "lib"))
	if src == "" {
		t.Fatalf("no iotdb-system.properties.template in %s/datanode/lib/node-commons-*.jar", home)
	}
	for _, p := range []string{facts.PropMaxClients, facts.PropFrameSize, facts.PropRPCPort} {
		if _, ok := defs[p]; !ok {
			t.Errorf("%s is not a property of %s", p, src)
		}
	}
	if defs[facts.PropMaxClients] != facts.IotdbBuiltinDefaults[facts.PropMaxClients] || defs[facts.PropFrameSize] != facts.IotdbBuiltinDefaults[facts.PropFrameSize] {
		t.Errorf("built-in defaults %v differ from the release's %s=%s, %s=%s", facts.IotdbBuiltinDefaults, facts.PropMaxClients, defs[facts.PropMaxClients], facts.PropFrameSize, defs[facts.PropFrameSize])
	}
	for _, f := range []string{"datanode/conf/datanode-env.sh", "confignode/conf/confignode-env.sh"} {
		b, err := os.ReadFile(filepath.Join(home, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []string{"MEMORY_SIZE=", "#ON_HEAP_MEMORY=", "#OFF_HEAP_MEMORY="} {
			if !strings.Contains(string(b), "\n"+v) {
				t.Errorf("%s has no line starting %q", f, v)
			}
		}
	}
}

// The done-when: with the test IoTDB running, --role iotdb
// --port 6667 names the DataNode listener's backlog and reads the
// release's configuration with --iotdb-home.
func TestE2ELiveIoTDB(t *testing.T) {
	port := servicePort(t, testenv.IoTDB(t))
	home := iotdbHome(t)
	r := runJSON(t, 1, "preflight", "--sockets", "1000", "--role", "iotdb", "--port", strconv.Itoa(port), "--conn-rate", "100",
		"--iotdb-home", home, "--pool-size", "600", "--loadgens", "2", "--batch-points", "1000")
	c := testenv.CheckByID(t, r.Checks, "accept.backlog")
	if c.Status != verdict.Fail || !strings.Contains(c.Summary, "port "+strconv.Itoa(port)+" is 50") {
		t.Errorf("accept.backlog: %+v", c)
	}
	if len(r.Listeners) == 0 || r.Listeners[0].Backlog != 50 || r.Listeners[0].Process != "java" {
		t.Errorf("listeners %+v, want the DataNode (java) with backlog 50", r.Listeners)
	}
	if r.IoTDB == nil || r.IoTDB.Properties[facts.PropRPCPort].Value != strconv.Itoa(port) || r.IoTDB.Properties[facts.PropRPCPort].Default {
		t.Fatalf("iotdb config %+v: want %s=%d read from the release's conf", r.IoTDB, facts.PropRPCPort, port)
	}
	// 600 x 2 sessions > the default 1000 clients
	if c := testenv.CheckByID(t, r.Checks, "iotdb.clients"); c.Status != verdict.Fail || !strings.Contains(c.Summary, facts.PropMaxClients+"=1000 < 1200") || !strings.Contains(c.Remedy, "iotdb-system.properties") {
		t.Errorf("iotdb.clients: %+v", c)
	}
	// dn_thrift_max_frame_size=0: min(64 MiB, heap / 64) = 16 MiB for the running 1 GiB heap
	if c := testenv.CheckByID(t, r.Checks, "iotdb.frame_size"); c.Status != verdict.Pass || !strings.Contains(c.Observed, "frames up to 16777216 bytes") {
		t.Errorf("iotdb.frame_size: %+v", c)
	}
	// the running DataNode's own -Xmx and -XX:MaxDirectMemorySize (scripts/iotdb.sh: 1g and 512m)
	if j := r.TargetJVM; j == nil || j.Heap != 1<<30 || j.Direct != 512<<20 {
		t.Errorf("target JVM %+v, want heap 1 GiB and direct 512 MiB from the DataNode's command line", j)
	}
	// the running ConfigNode too is judged by its own flags (scripts/iotdb.sh: 512m and 256m), not confignode-env.sh
	if c := testenv.CheckByID(t, r.Checks, "iotdb.memory"); c.Status == verdict.Skip || !strings.Contains(c.Observed, "running DataNode heap 1024 MiB") ||
		!strings.Contains(c.Observed, "running ConfigNode heap 512 MiB (-Xmx) + direct 256 MiB") || strings.Contains(c.Observed, "confignode-env.sh") {
		t.Errorf("iotdb.memory: %+v", c)
	}
}

// --record then --root reproduces the live verdict: the same JSON report
// byte for byte, and the same check statuses as a plain live run.
func TestE2ERecordReplayRoundTrip(t *testing.T) {
	port := strconv.Itoa(servicePort(t, testenv.MQTTBroker(t)))
	args := []string{"preflight", "--sockets", "5000", "--role", "broker", "--port", port, "--conn-rate", "2000", "-o", "json"}
	dir := filepath.Join(t.TempDir(), "host")
	rec, stderr, code := testenv.Run(t, nil, append(args, "--record", dir)...)
	if code != 1 {
		t.Fatalf("--record: exit %d, want 1 (the listener's backlog 100)\n%s", code, stderr)
	}
	rep, stderr, code := testenv.Run(t, nil, append(args, "--root", dir)...)
	if code != 1 {
		t.Fatalf("--root: exit %d, want 1\n%s", code, stderr)
	}
	if rec != rep {
		t.Errorf("replay differs from the recording run:\n--record: %s\n--root: %s", rec, rep)
	}
	live := runJSON(t, 1, args[:len(args)-2]...)
	var replayed Report
	if err := json.Unmarshal([]byte(rep), &replayed); err != nil {
		t.Fatal(err)
	}
	if replayed.Verdict != live.Verdict || len(replayed.Checks) != len(live.Checks) {
		t.Fatalf("replay verdict %s (%d checks), live %s (%d)", replayed.Verdict, len(replayed.Checks), live.Verdict, len(live.Checks))
	}
	for i, c := range live.Checks {
		if r := replayed.Checks[i]; r.ID != c.ID || r.Status != c.Status {
			t.Errorf("check %d: replay %s %s, live %s %s", i, r.ID, r.Status, c.ID, c.Status)
		}
	}
	// exactly what was read: the manifest lists every file, and no
	// process environment is copied
	m, err := facts.LoadRecording(dir)
	if err != nil || m == nil {
		t.Fatalf("manifest: %v", err)
	}
	var files []string
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Base(p) != facts.RecordManifest {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(files, ",") != strings.Join(m.Files, ",") {
		t.Errorf("files in the recording %v, manifest lists %v", files, m.Files)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "environ") {
			t.Errorf("recorded a process environment: %s", f)
		}
	}
	if _, _, code := testenv.Run(t, nil, append(args, "--record", dir)...); code != 2 {
		t.Errorf("--record into a non-empty directory: exit %d, want 2", code)
	}
	if _, _, code := testenv.Run(t, nil, append(args, "--record", t.TempDir()+"/x", "--root", dir)...); code != 2 {
		t.Errorf("--record with --root: exit %d, want 2", code)
	}
}

// runReport runs a preflight command with -o json and returns its report
// whatever the verdict (exit 0 or 1).
func runReport(t *testing.T, args ...string) Report {
	t.Helper()
	return runJSONIf(t, func(code int) bool { return code == 0 || code == 1 }, args...)
}

// The built-in iotdb profile fits a real DataNode: its conn_rate asks for
// an accept queue the DataNode's fixed listen() backlog of 50 holds; and
// with the profile's unit not installed (the test DataNode runs from the
// release's scripts), fd.* judge the process that owns the listener.
func TestE2ELiveIoTDBProfile(t *testing.T) {
	port := servicePort(t, testenv.IoTDB(t))
	r := runReport(t, "preflight", "--profile", "iotdb", "--port", strconv.Itoa(port))
	if c := testenv.CheckByID(t, r.Checks, "accept.backlog"); c.Status != verdict.Pass {
		t.Errorf("accept.backlog with the built-in iotdb profile: %+v", c)
	}
	if len(r.Listeners) == 0 || r.Listeners[0].PID == 0 {
		t.Fatalf("listeners %+v: want the DataNode's", r.Listeners)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "iotdb-datanode.service is not installed, but the listener on ") ||
		!strings.Contains(strings.Join(r.Notes, "\n"), "is owned by pid "+strconv.Itoa(r.Listeners[0].PID)) {
		t.Errorf("notes %q: want the absent unit and the listener's owner named", r.Notes)
	}
	for _, id := range []string{"fd.soft", "fd.hard", "fd.raise"} {
		c := testenv.CheckByID(t, r.Checks, id)
		if c.Status == verdict.Fail || strings.Contains(c.Summary, "not installed") {
			t.Errorf("%s judged the absent unit, not the DataNode (pid %d): %+v", id, r.Listeners[0].PID, c)
		}
	}
}

// TestLiveSharedListenerJudgesLeastLimited: a listening socket held by
// two processes — this test (soft nofile raised by the Go runtime) and a
// child that inherited it at nofile 1000:1000, as a pre-forking server's
// worker or a socket-activated service under systemd does — is judged on
// the child, the less limited, and a note names both. Field case: the
// parent that only waits was judged (20000) while the worker that
// accepted hit EMFILE at 1018 connections.
func TestLiveSharedListenerJudgesLeastLimited(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	lf, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	child := exec.Command("prlimit", "--nofile=1000:1000", "sleep", "60")
	child.ExtraFiles = []*os.File{lf}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	waitSleep(t, child.Process.Pid) // prlimit execs sleep with the socket
	f, err := Gather(t.Context(), GatherOptions{Role: facts.Broker, Ports: []int{port}})
	if err != nil {
		t.Fatal(err)
	}
	if tp := f.Target; tp.PID != child.Process.Pid || tp.NofileSoft != 1000 {
		t.Errorf("target pid %d nofile %d:%d, want the child %d at 1000", tp.PID, tp.NofileSoft, tp.NofileHard, child.Process.Pid)
	}
	var note string
	for _, n := range f.Notes {
		if strings.Contains(n, "2 processes hold") {
			note = n
		}
	}
	if !strings.Contains(note, fmt.Sprintf("pid %d", os.Getpid())) || !strings.Contains(note, fmt.Sprintf("pid %d (127.0.0.1:%d, nofile 1000:1000,", child.Process.Pid, port)) {
		t.Errorf("no note naming both holders: %q", f.Notes)
	}
}

// TestLiveHeldFilesCountAgainstNofile: the files a running target already
// holds (an IoTDB DataNode's TsFiles and WAL, a broker's persistence)
// take file descriptors before any socket does. Field case: a server at
// nofile 2000 holding 1500 files passed fd.soft for 1900 sockets and hit
// EMFILE after 494 connections.
func TestLiveHeldFilesCountAgainstNofile(t *testing.T) {
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) not installed")
	}
	var files []*os.File
	for range 1500 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}
	child := exec.Command("prlimit", "--nofile=2000:2000", "sleep", "60")
	child.ExtraFiles = files
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	waitSleep(t, child.Process.Pid)
	f, err := Gather(t.Context(), GatherOptions{PID: child.Process.Pid})
	if err != nil {
		t.Fatal(err)
	}
	if h := f.Target.HeldFDs; h < 1500 || h > 1510 {
		t.Fatalf("held files %d, want the 1500 passed plus stdio", h)
	}
	tg := facts.Target{Sockets: 1900, Role: facts.IoTDB, ConnRate: 10}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := testenv.CheckByID(t, checks.Evaluate(f, tg), "fd.soft"); c.Status != verdict.Fail || !strings.Contains(c.Expected, "other files pid") {
		t.Errorf("fd.soft with 1500 files held: %s", message(c))
	}
	if cp := checks.CapacityOf(f, tg); cp.Sockets > 2000-1500 {
		t.Errorf("capacity %d sockets, want at most the 500 descriptors left", cp.Sockets)
	}
}

// TestLiveTargetInOtherNetNS: a target in another network namespace has
// its own somaxconn, port range, listeners and conntrack table; what
// hostprep reads is its own namespace's, so the network checks do not
// judge it but say how to run inside it. Field case: a broker in a
// namespace at somaxconn 64 passed accept.backlog on the host's 4096 and
// on another process's listeners on the same port.
func TestLiveTargetInOtherNetNS(t *testing.T) {
	testenv.RequireUnshare(t)
	child := exec.Command("unshare", "--net", "sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	self, _ := os.Readlink("/proc/self/ns/net")
	deadline := time.Now().Add(5 * time.Second)
	for {
		ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", child.Process.Pid))
		if ns != "" && ns != self {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d never entered a new network namespace", child.Process.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f, err := Gather(t.Context(), GatherOptions{PID: child.Process.Pid, Role: facts.Broker})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Target.NetNS, "net:[") || !strings.Contains(f.Target.NetNS, self) {
		t.Fatalf("target netns %q, want it named beside hostprep's %s", f.Target.NetNS, self)
	}
	tg := facts.Target{Sockets: 500, Role: facts.Broker, ConnRate: 40}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	cs := checks.Evaluate(f, tg)
	for _, id := range []string{"accept.backlog", "accept.syn_backlog", "ports.collision", "tcp.tw_buckets"} {
		if c := testenv.CheckByID(t, cs, id); c.Status != verdict.Warn || !strings.Contains(c.Summary, "another network namespace") || !strings.Contains(c.Remedy, fmt.Sprintf("nsenter --net=/proc/%d/ns/net", child.Process.Pid)) {
			t.Errorf("%s for a target in another netns: %s", id, message(c))
		}
	}
	if c := testenv.CheckByID(t, cs, "fd.soft"); strings.Contains(c.Summary, "network namespace") {
		t.Errorf("fd.soft is the process's own, judged anywhere: %s", message(c))
	}
	// without root another user's ns link cannot be read: /proc/PID/net
	// tells the same (each namespace has its own proc entries)
	denied := os.ErrPermission
	if ns, unseen := facts.NetNSByProcNet(child.Process.Pid, denied); ns == "" || unseen != "" {
		t.Errorf("by /proc/PID/net: netns %q unseen %q, want another namespace", ns, unseen)
	}
	if ns, unseen := facts.NetNSByProcNet(os.Getpid(), denied); ns != "" || unseen != "" {
		t.Errorf("by /proc/PID/net for hostprep's own: netns %q unseen %q, want the same namespace", ns, unseen)
	}
	// a recording carries it: the ns links are not copied
	rec, err := Gather(t.Context(), GatherOptions{PID: child.Process.Pid, Role: facts.Broker, Record: filepath.Join(t.TempDir(), "rec")})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Target.NetNS != f.Target.NetNS {
		t.Errorf("replayed netns %q, live %q", rec.Target.NetNS, f.Target.NetNS)
	}
	// one that could not be read (another user's, without root) is not
	// judged either
	f.Target.NetNS, f.Target.NetNSUnseen = "", "/proc/1234/ns/net: permission denied"
	if c := testenv.CheckByID(t, checks.Evaluate(f, tg), "accept.syn_backlog"); c.Status != verdict.Warn || !strings.Contains(c.Summary, "could not be read") || !strings.Contains(c.Remedy, "as root") {
		t.Errorf("accept.syn_backlog with the netns unread: %s", message(c))
	}
}

// TestLiveSoftRemedyRuns runs the live prlimit remedy fd.soft gives for
// another user's process and checks that the process then has the limit.
// Field cases: as root on a host whose bounding set lacks
// CAP_SYS_RESOURCE, `prlimit --pid P` on mosquitto's process failed with
// EPERM, and so did `runuser -u mosquitto -- prlimit ...` for a process
// whose group is not its user's primary group (the kernel's
// check_prlimit_permission wants the caller's uid and gid to equal the
// target's, or that capability). Here: nobody, group users (100).
func TestLiveSoftRemedyRuns(t *testing.T) {
	testenv.RequireRoot(t)
	for _, tool := range []string{"prlimit", "setpriv"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s (util-linux) not installed", tool)
		}
	}
	child := exec.Command("setpriv", "--reuid=65534", "--regid=100", "--clear-groups", "prlimit", "--nofile=1024:8192", "sleep", "60")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	pid := child.Process.Pid
	waitSleep(t, pid) // setpriv and prlimit exec sleep in the same process
	f, err := Gather(t.Context(), GatherOptions{PID: pid})
	if err != nil {
		t.Fatal(err)
	}
	if ts := f.Target.Tasks; ts.UID != "65534" || ts.GID != "100" {
		t.Errorf("target uid %q gid %q, want 65534 and 100", ts.UID, ts.GID)
	}
	tg := facts.Target{Sockets: 1500, Role: facts.Broker, ConnRate: 10}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := testenv.CheckByID(t, checks.Evaluate(f, tg), "fd.soft")
	i := strings.Index(c.Remedy, "setpriv --reuid")
	if i < 0 {
		i = strings.Index(c.Remedy, "prlimit --pid")
	}
	if c.Status != verdict.Fail || i < 0 {
		t.Fatalf("fd.soft: %s", message(c))
	}
	cmd := c.Remedy[i:]
	if out, err := exec.Command("sh", "-c", cmd).CombinedOutput(); err != nil {
		t.Fatalf("the remedy %q failed: %v %s", cmd, err, out)
	}
	soft, hard, err := proclimits.Nofile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil || soft < 1564 || hard != 8192 {
		t.Errorf("after %q: nofile %d:%d %v, want soft >= 1564, hard 8192", cmd, soft, hard, err)
	}
}

// waitSleep waits (5 s at most) until pid runs sleep(1): a wrapper such
// as prlimit has exec'd it with the limits and files it was given.
func waitSleep(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(b)) == "sleep" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("child %d never ran sleep", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestHeldFilesUnseenDoNotPass: where the files the target holds could not
// be counted (another user's /proc/PID/fd, without root), a nofile that
// covers the sockets alone is no promise. Field case: nofile 8000 passed
// for 4000 sockets as a non-root user; the process held 5006 files and
// hit EMFILE after 2994 connections.
func TestHeldFilesUnseenDoNotPass(t *testing.T) {
	f := host(t, "target_process: {pid: 4242, managed_by: shell, nofile_soft: 8000, nofile_hard: 8000, held_fds_unseen: \"/proc/4242/fd: permission denied\"}\n")
	tg := facts.Target{Sockets: 4000, Role: facts.Broker, ConnRate: 10}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"fd.soft", "fd.hard"} {
		if c := testenv.CheckByID(t, checks.Evaluate(f, tg), id); c.Status != verdict.Warn || !strings.Contains(c.Summary, "could not be counted") || !strings.Contains(c.Remedy, "as root") {
			t.Errorf("%s: %s", id, message(c))
		}
	}
	if cp := checks.CapacityOf(f, tg); !slices.ContainsFunc(cp.Unknown, func(u checks.UnknownLimit) bool { return u.Check == "fd.soft" }) {
		t.Errorf("capacity unknown %+v: want the held files named", cp.Unknown)
	}
}
