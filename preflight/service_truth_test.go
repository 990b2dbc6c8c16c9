package preflight

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/profiles"
)

// Checks that judge the real service, by check ID and status on recorded
// hosts.
func TestServiceTruthStatuses(t *testing.T) {
	cases := []struct {
		name   string
		host   string
		target facts.Target
		id     string
		status verdict.Status
	}{
		{"orphans over the limit now fail whatever the target", `sockstat: {orphan: 65738}
sysctl: {net.ipv4.tcp_max_orphans: "65536"}`, facts.Target{Sockets: 10, Role: facts.Broker}, "tcp.orphans", verdict.Fail},
		{"orphans below the limit", `sockstat: {orphan: 100}
sysctl: {net.ipv4.tcp_max_orphans: "65536"}`, facts.Target{Sockets: 10, Role: facts.Broker}, "tcp.orphans", verdict.Pass},
		{"tcp_mem max above RAM warns at 10 sockets", `mem_total_bytes: 8589934592
sysctl: {net.ipv4.tcp_mem: "1000000 1500000 4000000"}`, facts.Target{Sockets: 10, Role: facts.Broker}, "mem.tcp_mem", verdict.Warn},
		{"tcp_mem pressure above RAM warns", `mem_total_bytes: 8589934592
sysctl: {net.ipv4.tcp_mem: "1000000 3000000 3000001"}`, facts.Target{Sockets: 10, Role: facts.Loadgen}, "mem.tcp_mem", verdict.Warn},
		{"tcp_mem of the kernel's own sizing passes", `mem_total_bytes: 8589934592`, facts.Target{Sockets: 10, Role: facts.Broker}, "mem.tcp_mem", verdict.Pass},
		// The kernel's sk_acceptq_is_full: full when more wait than the
		// backlog (listen(3) holds 4, listen(0) holds 1).
		{"accept queue full now", `listeners: [{port: 1883, backlog: 4096, accept_queue: 4097, process: mosquitto}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 100}, "accept.queue", verdict.Fail},
		{"accept queue at its backlog still takes one", `listeners: [{port: 1883, backlog: 4096, accept_queue: 4096, process: mosquitto}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 100}, "accept.queue", verdict.Pass},
		{"listen(0) with one waiting is full", `listeners: [{port: 1883, backlog: 0, accept_queue: 1, process: mosquitto}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 100}, "accept.queue", verdict.Fail},
		{"listener backlog covers the rate", `listeners: [{port: 1883, backlog: 4096, process: emqx}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 100}, "accept.backlog", verdict.Pass},
		// sock_diag's backlog is already capped at somaxconn as it was at
		// listen(): one above today's somaxconn was listened before it was
		// lowered, and holds until the server listens again (measured in a
		// namespace: backlog 100 after somaxconn went to 64 queued 101)
		{"somaxconn lowered after listen(): holds now, a restart caps it", `listeners: [{port: 1883, backlog: 65535}]
sysctl: {net.core.somaxconn: "4096"}`, facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 2500}, "accept.backlog", verdict.Warn},
		{"somaxconn too small with nothing listening yet", `sysctl: {net.core.somaxconn: "4096"}`, facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 2500}, "accept.backlog", verdict.Fail},
		{"--port picks the listener", `listeners: [{port: 1883, backlog: 100}, {port: 11883, backlog: 4096}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 500, Ports: []int{11883}}, "accept.backlog", verdict.Pass},
		{"nothing listens yet: not judged", ``, facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 500}, "accept.backlog", verdict.Skip},
		{"listeners unreadable: cannot pass", `listening_ports: [1883]`, facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 500}, "accept.backlog", verdict.Warn},
		{"max_map_count default warns for iotdb", `sysctl: {vm.max_map_count: "65530"}`, facts.Target{Sockets: 10, Role: facts.IoTDB}, "iotdb.max_map_count", verdict.Warn},
		{"max_map_count tuned", `sysctl: {vm.max_map_count: "262144"}`, facts.Target{Sockets: 10, Role: facts.IoTDB}, "iotdb.max_map_count", verdict.Pass},
		{"iotdb config not read without --iotdb-home", ``, facts.Target{Sockets: 10, Role: facts.IoTDB}, "iotdb.clients", verdict.Skip},
		{"unnamed server process: fd.soft warns", ``, facts.Target{Sockets: 5000, Role: facts.Broker}, "fd.soft", verdict.Warn},
		{"unnamed loadgen: the login shell is the truth", ``, facts.Target{Sockets: 5000, Role: facts.Loadgen}, "fd.soft", verdict.Fail},
		{"unit asks infinity: resolved to PID 1's hard limit", `target_process: {managed_by: systemd, unit: emqx.service, nofile_soft: infinity, nofile_hard: infinity}
pid1_nofile: {soft: 65536, hard: 65536}`, facts.Target{Sockets: 70000, Role: facts.Broker}, "fd.hard", verdict.Fail},
		{"unit asks infinity, PID 1 allows it", `target_process: {managed_by: systemd, unit: emqx.service, nofile_soft: infinity, nofile_hard: infinity}
pid1_nofile: {soft: 1048576, hard: 1048576}`, facts.Target{Sockets: 70000, Role: facts.Broker}, "fd.hard", verdict.Pass},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := c.target
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			got := testenv.CheckByID(t, checks.Evaluate(host(t, c.host), tg), c.id)
			if got.Status != c.status {
				t.Errorf("%s: %s, want %s: %s", c.id, got.Status, c.status, message(got))
			}
		})
	}
}

func TestResolveNofile(t *testing.T) {
	inf := uint64(facts.Unlimited)
	cases := []struct {
		name     string
		req      profiles.Limit
		nrOpen   int64
		pid1     *profiles.Limit
		want     profiles.Limit
		resolved bool
	}{
		{"fits: applied as written", profiles.Limit{Soft: 1024, Hard: 524288}, 1048576, &profiles.Limit{Hard: 65536}, profiles.Limit{Soft: 1024, Hard: 524288}, false},
		{"infinity: PID 1's hard limit", profiles.Limit{Soft: inf, Hard: inf}, 1048576, &profiles.Limit{Soft: 65536, Hard: 65536}, profiles.Limit{Soft: 65536, Hard: 65536}, true},
		{"above nr_open: PID 1's hard limit", profiles.Limit{Soft: 2000000, Hard: 2000000}, 1048576, &profiles.Limit{Hard: 524288}, profiles.Limit{Soft: 524288, Hard: 524288}, true},
		{"soft below PID 1 stays", profiles.Limit{Soft: 1024, Hard: inf}, 1048576, &profiles.Limit{Hard: 65536}, profiles.Limit{Soft: 1024, Hard: 65536}, true},
		{"PID 1 unknown: at most nr_open", profiles.Limit{Soft: inf, Hard: inf}, 1048576, nil, profiles.Limit{Soft: 1048576, Hard: 1048576}, true},
	}
	for _, c := range cases {
		got, how := facts.ResolveNofile(c.req, c.nrOpen, c.pid1, "")
		if got != c.want || (how != "") != c.resolved {
			t.Errorf("%s: %+v (%q), want %+v resolved=%v", c.name, got, how, c.want, c.resolved)
		}
	}
}

func TestJVMMemoryFollowsEnvScript(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		m             facts.JVMMemory
		ram           uint64
		confignode    bool
		heapMB, dirMB int64
	}{
		{facts.JVMMemory{}, 24 * gib, false, 12288 / 5 * 4, 12288 - 12288/5*4}, // half of RAM, 4..16 GiB: 4/5 heap
		{facts.JVMMemory{}, 4 * gib, false, 2048 / 4 * 3, 2048 - 2048/4*3},     // below 4 GiB: 3/4 heap
		{facts.JVMMemory{}, 64 * gib, true, 8192 / 5 * 4, 8192 - 8192/5*4},     // ConfigNode: 3/10 of RAM, at most 8 GiB
		{facts.JVMMemory{MemorySize: "2G"}, 64 * gib, false, 1536, 512},
		{facts.JVMMemory{HeapOverride: "1G", DirectOverride: "512M"}, 64 * gib, false, 1024, 512},
	}
	for i, c := range cases {
		h, d, how := c.m.HeapAndDirect(c.ram, c.confignode)
		if h != c.heapMB<<20 || d != c.dirMB<<20 {
			t.Errorf("case %d: heap %d MiB direct %d MiB (%s), want %d and %d", i, h>>20, d>>20, how, c.heapMB, c.dirMB)
		}
	}
}

// A remedy never contradicts another check. Where fd.raise says the hard
// limit cannot be raised, fd.soft suggests no soft limit above it (and no
// ulimit that changes nothing), fd.hard does not suggest setting it with
// tune or prlimit when no process on the host can get it, and fd.hard
// and fd.raise name the same ceiling and the same split. Remedies that
// change persistent limits point at hostprep tune, never at hand-editing
// limits.d.
func TestRemediesAgree(t *testing.T) {
	pid1 := profiles.Limit{Soft: 32768, Hard: 32768}
	for _, c := range []struct {
		name           string
		soft           uint64
		pid            int
		blocked        bool
		pid1           *profiles.Limit
		hardRemedy     string // fd.hard's remedy contains it
		raiseRemedy    string // and fd.raise's
		noSoftAbove    uint64 // no number in fd.soft's ulimit/prlimit above it
		softSaysAlread bool   // fd.soft says the soft limit is already at the hard one
	}{
		{name: "shell, this process lacks the capability", soft: 1024, hardRemedy: "hostprep tune apply", raiseRemedy: "`hostprep tune apply --profile PROFILE --set limits.nofile.soft=101000 --set limits.nofile.hard=101000`", noSoftAbove: 20000},
		{name: "pid, this process lacks the capability", soft: 1024, pid: 4242, hardRemedy: "prlimit", raiseRemedy: "prlimit --pid 4242 --nofile=101000:101000", noSoftAbove: 20000},
		{name: "container without the capability", soft: 1024, blocked: true, hardRemedy: "split the load over 6 processes/hosts of at most 20000", raiseRemedy: "split the load over 6 processes/hosts of at most 20000", noSoftAbove: 20000},
		{name: "container, soft at hard", soft: 20000, blocked: true, hardRemedy: "split the load", raiseRemedy: "split the load", noSoftAbove: 20000, softSaysAlread: true},
		{name: "container, PID 1 higher", soft: 1024, pid: 4242, blocked: true, pid1: &pid1, hardRemedy: "split the load over 4 processes/hosts of at most 32768", raiseRemedy: "split the load over 4 processes/hosts of at most 32768", noSoftAbove: 20000},
	} {
		f := host(t, fmt.Sprintf(`target_process: {managed_by: shell, nofile_soft: %d, nofile_hard: 20000}
capabilities_missing: [CAP_SYS_RESOURCE]`, c.soft))
		f.Target.PID, f.Target.NoRaiseBound, f.Pid1Nofile = c.pid, c.blocked, c.pid1
		tg := facts.Target{Sockets: 100000, Role: facts.Loadgen}
		if err := tg.Validate(); err != nil {
			t.Fatal(err)
		}
		cs := checks.Evaluate(f, tg)
		raise, hard, soft := testenv.CheckByID(t, cs, "fd.raise"), testenv.CheckByID(t, cs, "fd.hard"), testenv.CheckByID(t, cs, "fd.soft")
		if raise.Status != verdict.Fail || hard.Status != verdict.Fail || soft.Status != verdict.Fail {
			t.Errorf("%s: fd.raise %s fd.hard %s fd.soft %s, want all fail", c.name, raise.Status, hard.Status, soft.Status)
		}
		if !strings.Contains(hard.Remedy, c.hardRemedy) || !strings.Contains(raise.Remedy, c.raiseRemedy) {
			t.Errorf("%s: fd.hard remedy %q (want %q), fd.raise remedy %q (want %q)", c.name, hard.Remedy, c.hardRemedy, raise.Remedy, c.raiseRemedy)
		}
		if c.blocked && regexp.MustCompile(`hostprep tune|prlimit`).MatchString(hard.Remedy+raise.Remedy) {
			t.Errorf("%s: where no process can raise a hard limit, a remedy suggests tune or prlimit: %q / %q", c.name, hard.Remedy, raise.Remedy)
		}
		for _, m := range regexp.MustCompile(`(?:ulimit -n |--nofile=)(\d+)`).FindAllStringSubmatch(soft.Remedy, -1) {
			if n, _ := strconv.ParseUint(m[1], 10, 64); n > c.noSoftAbove && (c.blocked || !strings.Contains(soft.Remedy, "hostprep tune")) {
				t.Errorf("%s: fd.soft remedy suggests %s above the hard limit %d that fd.raise says cannot be raised here: %s", c.name, m[0], c.noSoftAbove, soft.Remedy)
			}
		}
		if c.softSaysAlread != strings.Contains(soft.Remedy, "already at the hard limit") {
			t.Errorf("%s: fd.soft remedy %q (soft %d, hard 20000)", c.name, soft.Remedy, c.soft)
		}
		for _, ch := range cs {
			if regexp.MustCompile(`(?i)(edit|add .* to) /etc/security/limits|\(limits\.d, systemd`).MatchString(ch.Remedy) {
				t.Errorf("%s: %s remedy hand-edits limits.d instead of hostprep tune: %s", c.name, ch.ID, ch.Remedy)
			}
		}
	}
}

// The MQTT probe's pre-checks are preflight's fd.soft and ports.ephemeral
// on this process's facts.
func TestOwnProcessChecks(t *testing.T) {
	cs := checks.OwnProcessChecks(2000, nil, 1024)
	if cs[0].ID != "fd.soft" || cs[0].Status != verdict.Fail || cs[1].ID != "ports.ephemeral" {
		t.Fatalf("2000 fds under nofile 1024: %+v", cs)
	}
	if cs := checks.OwnProcessChecks(10, nil, 1024); cs[0].Status != verdict.Pass || cs[1].Status != verdict.Pass {
		t.Errorf("10 fds: %+v", cs)
	}
	// one source address can never hold more connections to one
	// destination than there are ports
	if cs := checks.OwnProcessChecks(70000, []string{"127.0.0.1"}, 100000); cs[1].Status != verdict.Fail {
		t.Errorf("70000 connections from one address: %+v", cs[1])
	}
	if cs := checks.OwnProcessChecks(70000, []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}, 100000); cs[1].Status != verdict.Pass {
		t.Errorf("70000 connections from three addresses: %+v", cs[1])
	}
}

// OwnProcessFD is fd.soft, fd.hard and fd.raise on this process's facts,
// those of a process started from the same shell: with the limit given
// (1024) and a load above it, fd.raise judges whether the hard limit can
// be raised here, as preflight --role loadgen does for that shell.
func TestOwnProcessFD(t *testing.T) {
	cs := checks.OwnProcessFD(2000, 1024)
	if len(cs) != 3 || cs[0].ID != "fd.soft" || cs[1].ID != "fd.hard" || cs[2].ID != "fd.raise" {
		t.Fatalf("want fd.soft, fd.hard, fd.raise: %+v", cs)
	}
	if cs[0].Status != verdict.Fail || cs[1].Status != verdict.Fail || cs[2].Status == verdict.Skip || cs[2].Remedy == "" && cs[2].Status == verdict.Fail {
		t.Errorf("2000 fds under nofile 1024: %+v", cs)
	}
	if cs := checks.OwnProcessFD(10, 1024); cs[0].Status != verdict.Pass || cs[2].Status != verdict.Pass {
		t.Errorf("10 fds: %+v", cs)
	}
}

func TestRunningJVMMemory(t *testing.T) {
	if j := facts.ParseJVMFlags([]byte("/usr/bin/python3\x00-Xmx1g\x00"), "x"); j != nil {
		t.Errorf("not a JVM: %+v", j)
	}
	j := facts.ParseJVMFlags([]byte("/usr/lib/jvm/bin/java\x00-Xms1g\x00-Xmx12g\x00-Dpassword=secret\x00-XX:MaxDirectMemorySize=6g\x00org.apache.iotdb.db.service.DataNode\x00"), "/proc/9/cmdline")
	if j == nil || j.Heap != 12<<30 || j.Direct != 6<<30 {
		t.Fatalf("flags %+v", j)
	}
	f := host(t, `mem_total_bytes: 17179869184`)
	f.TargetJVM = j
	tg := facts.Target{Sockets: 10, Role: facts.IoTDB}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := testenv.CheckByID(t, checks.Evaluate(f, tg), "iotdb.memory"); c.Status != verdict.Fail {
		t.Errorf("18 GiB of JVM on 16 GiB RAM: %s %s", c.Status, message(c))
	}
	f.TargetJVM = &facts.JVMFlags{Heap: 4 << 30, Direct: 2 << 30}
	if c := testenv.CheckByID(t, checks.Evaluate(f, tg), "iotdb.memory"); c.Status != verdict.Pass {
		t.Errorf("6 GiB of JVM on 16 GiB RAM: %s %s", c.Status, message(c))
	}
}

// A recorded host's files are read by the same code as a live host's: a
// drop-in's LimitNOFILE=infinity resolves to PID 1's hard limit.
func TestRecordedFilesMergeUnit(t *testing.T) {
	f := host(t, `target_process: {managed_by: systemd, unit: emqx.service}
pid1_nofile: {soft: 65536, hard: 65536}
files:
  /lib/systemd/system/emqx.service: "[Service]\nExecStart=/usr/bin/emqx foreground\nLimitNOFILE=1048576\n"
  /etc/systemd/system/emqx.service.d/override.conf: "[Service]\nLimitNOFILE=infinity\n"
  /etc/security/limits.d/90-nofile.conf: "* soft nofile 1048576\n* hard nofile 1048576\nroot hard nofile 524288\n"`)
	tp := f.Target
	if tp.NofileSoft != 65536 || tp.NofileHard != 65536 || tp.Requested != "infinity:infinity" || tp.UnitFile != "/lib/systemd/system/emqx.service" {
		t.Errorf("target %+v: want infinity from the drop-in resolved to 65536", tp)
	}
	// pam_limits for root: "*" lines never apply to root, its own line does
	if l := f.Login; l == nil || l.Soft != nil || l.Hard == nil || l.Hard.Value != 524288 || l.Hard.From != "/etc/security/limits.d/90-nofile.conf:3" {
		t.Errorf("limits.d from files: %+v", l)
	}
	if _, err := facts.LoadHostYAML("t", strings.NewReader(`files: {/root/.ssh/id_rsa: "x"}`)); exitcode.Code(err) != exitcode.BadInput {
		t.Errorf("a file outside the configuration preflight reads: %v", err)
	}
}

// tcp_mem above RAM is named even when the target also needs more.
func TestTCPMemAboveRAMFirst(t *testing.T) {
	f := host(t, `mem_total_bytes: 8589934592
sysctl: {net.ipv4.tcp_mem: "1000000 3000000 4000000"}`)
	tg := facts.Target{Sockets: 10000000, Role: facts.Broker}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := testenv.CheckByID(t, checks.Evaluate(f, tg), "mem.tcp_mem")
	if c.Status != verdict.Warn || !strings.Contains(c.Summary, "above physical memory") {
		t.Errorf("%s: %s", c.Status, c.Summary)
	}
}

// A recording keeps only the configuration lines preflight reads.
func TestRecordKeepsOnlyReadLines(t *testing.T) {
	unit := "[Unit]\nDescription=x\n[Service]\nEnvironment=DB_PASSWORD=hunter2\nExecStart=/usr/bin/emqx --token s3cret\nUser=emqx\nLimitNOFILE=infinity\n"
	got := string(facts.KeepReadLines("/etc/systemd/system/emqx.service", []byte(unit)))
	if strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") || !strings.Contains(got, "LimitNOFILE=infinity") || !strings.Contains(got, "User=emqx") || !strings.Contains(got, "[Service]") {
		t.Errorf("unit kept as %q", got)
	}
	lim := "# comment\n* soft nofile 1048576\n@adm hard nproc 10\nroot - nofile 65536\n"
	if got := string(facts.KeepReadLines("/etc/security/limits.conf", []byte(lim))); got != "\n* soft nofile 1048576\n\nroot - nofile 65536\n" {
		t.Errorf("limits.conf kept as %q", got)
	}
	// a file with no line read stays non-empty: an empty one is masked
	if got := string(facts.KeepReadLines("/etc/systemd/system/x.service.d/a.conf", []byte("Environment=A=b"))); got != "\n" {
		t.Errorf("a drop-in with nothing read kept as %q, want one empty line", got)
	}
}

// A recording replays hostconf's reading of a unit exactly: a unit file
// reached through a symlink is named as on the host, a drop-in masked by
// a symlink to /dev/null stays masked, line numbers survive the dropped
// secret lines, and the secret does not reach the recording.
func TestRecordReplaysBootFiles(t *testing.T) {
	host := testenv.TempTree(t, map[string]string{
		"opt/emqx/emqx.service":                               "[Service]\nEnvironment=PW=hunter2\nLimitNOFILE=65536\nUser=emqx\n",
		"usr/lib/systemd/system/emqx.service.d/override.conf": "[Service]\nLimitNOFILE=1024\n",
	})
	for link, target := range map[string]string{
		"etc/systemd/system/emqx.service":                 "/opt/emqx/emqx.service",
		"etc/systemd/system/emqx.service.d/override.conf": "/dev/null",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(host, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(host, link)); err != nil {
			t.Fatal(err)
		}
	}
	g := &facts.Gatherer{Root: host, F: &facts.Facts{}, Rec: facts.NewRecorder()}
	live, err := g.UnitFromFiles("emqx.service")
	if err != nil {
		t.Fatal(err)
	}
	want := facts.UnitNofile{File: "/opt/emqx/emqx.service (as /etc/systemd/system/emqx.service)", Lim: profiles.Limit{Soft: 65536, Hard: 65536},
		From: "/opt/emqx/emqx.service (as /etc/systemd/system/emqx.service):3", Found: true, User: "emqx"}
	if len(live.Files) == 0 || live.Files[0].Path != "/etc/systemd/system/emqx.service" {
		t.Errorf("live host: files %+v, want the unit file first", live.Files)
	}
	live.Files = nil
	if !reflect.DeepEqual(live, want) {
		t.Fatalf("live host: %+v, want %+v", live, want)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := g.Rec.Write(dir); err != nil {
		t.Fatal(err)
	}
	replay := &facts.Gatherer{Root: filepath.Join(dir, host), F: &facts.Facts{}}
	got, err := replay.UnitFromFiles("emqx.service")
	got.Files = nil
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("replay: %+v %v, want %+v", got, err, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, host, "opt/emqx/emqx.service"))
	if err != nil || strings.Contains(string(b), "hunter2") {
		t.Errorf("recorded unit %q %v: want it without the Environment= line", b, err)
	}
}

// An instance of a template unit (iotdb-datanode@a.service) is judged on
// the template's file and every drop-in systemd reads for the instance,
// a dash-prefix one included; it is not "not installed".
func TestTemplateInstanceUnit(t *testing.T) {
	host := testenv.TempTree(t, map[string]string{
		"/usr/lib/systemd/system/iotdb-datanode@.service":        "[Service]\nExecStart=/bin/true\nUser=iotdb\nLimitNOFILE=65536\n",
		"/etc/systemd/system/iotdb-.service.d/60-hostprep.conf":  "[Service]\nLimitNOFILE=1048576:1048576\n",
		"/etc/systemd/system/iotdb-datanode@b.service.d/zz.conf": "[Service]\nLimitNOFILE=1024\n",
	})
	g := &facts.Gatherer{Root: host, F: &facts.Facts{}}
	u, err := g.UnitFromFiles("iotdb-datanode@a.service")
	if err != nil {
		t.Fatal(err)
	}
	if u.Missing != "" || u.Lim != (profiles.Limit{Soft: 1048576, Hard: 1048576}) || !strings.HasSuffix(u.From, "iotdb-.service.d/60-hostprep.conf:2") || u.User != "iotdb" {
		t.Errorf("instance a: %+v", u)
	}
	if u, err := g.UnitFromFiles("iotdb-datanode@b.service"); err != nil || u.Lim.Hard != 1024 {
		t.Errorf("instance b (its own drop-in sorts last): %+v %v", u, err)
	}
	if u, err := g.UnitFromFiles("iotdb-confignode@a.service"); err != nil || u.Missing == "" {
		t.Errorf("an instance of a template that is not installed: %+v %v, want missing", u, err)
	}
}

// With systemd not running, no unit applies: --service names a unit that
// starts nothing. When a running process owns the target's listener, its
// limits are the truth (a broker started by hand at 1024:4096 fails
// 3000 sockets), not a login shell's; it used to pass on the shell's.
func TestServiceWithoutSystemdJudgesTheListenerOwner(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd runs here: the unit applies")
	}
	if _, err := os.Stat("/lib/systemd/system/mosquitto.service"); err != nil {
		t.Skip("no mosquitto.service unit file (the README's test command installs mosquitto)")
	}
	cmd := exec.Command("prlimit", "--nofile=1024:4096", "python3", "-c",
		"import socket,sys,time\ns=socket.socket()\ns.bind(('127.0.0.1',0))\ns.listen(5)\nprint(s.getsockname()[1],flush=True)\ntime.sleep(120)")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("prlimit/python3: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var port int
	if _, err := fmt.Fscan(out, &port); err != nil {
		t.Fatalf("listener port: %v", err)
	}
	f, err := Gather(t.Context(), GatherOptions{Service: "mosquitto", Role: facts.Broker, Ports: []int{port}})
	if err != nil {
		t.Fatal(err)
	}
	if tp := f.Target; tp.PID != cmd.Process.Pid || tp.NofileSoft != 1024 || tp.NofileHard != 4096 || !strings.Contains(tp.Source, "systemd is not running") {
		t.Fatalf("target %d %d:%d (%s), want the listener owner pid %d at 1024:4096", tp.PID, tp.NofileSoft, tp.NofileHard, tp.Source, cmd.Process.Pid)
	}
	r := checks.Evaluate(f, facts.Target{Sockets: 3000, Role: facts.Broker, Service: "mosquitto.service", Ports: []int{port}})
	if c := testenv.CheckByID(t, r, "fd.soft"); c.Status != verdict.Fail {
		t.Errorf("fd.soft %s %q, want FAIL at soft 1024 for 3000 sockets", c.Status, c.Summary)
	}
}

// A login-shell target when hostprep was exec'd from a shell that lowered
// its hard nofile (`ulimit -Hn 4096; exec hostprep ...`): the parent
// process is further up, with more; hostprep's own hard limit is the one
// a program started the same way gets, so fd.hard fails (it passed on
// the grandparent's 20000).
func TestExecdHostprepJudgesItsOwnHardLimit(t *testing.T) {
	bin := testenv.Binary(t)
	out, _, code := testenv.Exec(t, exec.Command("bash", "-c", "ulimit -Sn 1024; ulimit -Hn 4096; exec "+bin+" preflight --sockets 10000 --role loadgen -o json"))
	var r struct {
		Target struct {
			NofileHard uint64 `json:"nofile_hard"`
		} `json:"target_process"`
		Checks []verdict.Check `json:"checks"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("exit %d, output %q: %v", code, out, err)
	}
	if r.Target.NofileHard != 4096 || testenv.CheckByID(t, r.Checks, "fd.hard").Status != verdict.Fail {
		t.Errorf("exec'd with hard 4096: target hard %d, fd.hard %s; want 4096 and FAIL", r.Target.NofileHard, testenv.CheckByID(t, r.Checks, "fd.hard").Status)
	}
}

// A profile whose MQTT probe aims at a broker on this host names the port
// that broker listens on: preflight (and ready, which uses this target)
// judges that listener and its owner, not 1883/8883 only; a remote
// broker's port is not this host's listener.
func TestProfileProbePortIsTheListener(t *testing.T) {
	for _, c := range []struct {
		broker string
		ports  []int
	}{{"tcp://127.0.0.1:18834", []int{18834}}, {"tcp://broker.example:18834", nil}} {
		p, err := profiles.Parse("p.yaml", []byte("name: p\npreflight: {sockets: 1000, role: broker}\nprobe:\n  mqtt: {broker: \""+c.broker+"\"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		tg, err := facts.TargetFromProfile(p)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(tg.Ports) != fmt.Sprint(c.ports) {
			t.Errorf("probe broker %s: target ports %v, want %v", c.broker, tg.Ports, c.ports)
		}
	}
}

// TestUnitLimitAbovePid1WhenPid1CannotRaise: systemd sets a unit's
// LimitNOFILE in the forked child with PID 1's credentials; a hard limit
// above PID 1's own needs CAP_SYS_RESOURCE in the initial user namespace,
// so where PID 1 lacks it (CapEff without bit 24) or runs in a user
// namespace of its own (an unprivileged container), setrlimit() refuses
// it and setrlimit_closest caps it at PID 1's hard limit. Field case: a
// unit at 65536 passed fd.soft for 40000 sockets in a container whose
// PID 1 had 32768. Measured here: as root without CAP_SYS_RESOURCE in the
// bounding set, `prlimit --nofile=65536:65536 true` fails with EPERM.
func TestUnitLimitAbovePid1WhenPid1CannotRaise(t *testing.T) {
	pid1Limits := "Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 32768                files     \n"
	full := "Name:\tsystemd\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n"
	noRes := "Name:\tsystemd\nCapEff:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\n"
	for _, c := range []struct {
		name, status, uidMap string
		want                 uint64
	}{
		{"PID 1 with CAP_SYS_RESOURCE in the initial namespace", full, "         0          0 4294967295\n", 65536},
		{"PID 1 without CAP_SYS_RESOURCE", noRes, "         0          0 4294967295\n", 32768},
		{"PID 1 in a user namespace of its own", full, "         0     100000      65536\n", 32768},
	} {
		root := factstest.FixtureRoot(t, map[string]string{
			"proc/1/limits": pid1Limits, "proc/1/status": c.status, "proc/1/uid_map": c.uidMap,
			"etc/systemd/system/iotdb-datanode.service": "[Service]\nExecStart=/bin/true\nLimitNOFILE=65536\n",
		})
		f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "iotdb-datanode"})
		if err != nil {
			t.Fatal(err)
		}
		if tp := f.Target; tp.NofileHard != c.want || tp.NofileSoft != c.want {
			t.Errorf("%s: unit nofile %d:%d (%s), want %d", c.name, tp.NofileSoft, tp.NofileHard, tp.Source, c.want)
		}
		tg := facts.Target{Sockets: 40000, Role: facts.IoTDB, ConnRate: 10}
		_ = tg.Validate()
		if got, want := testenv.CheckByID(t, checks.Evaluate(f, tg), "fd.soft").Status, map[bool]verdict.Status{true: verdict.Pass, false: verdict.Fail}[c.want == 65536]; got != want {
			t.Errorf("%s: fd.soft %s, want %s", c.name, got, want)
		}
	}
}
