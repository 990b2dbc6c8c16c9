package facts

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/profiles"
)

func TestResolveNofile(t *testing.T) {
	inf := uint64(Unlimited)
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
		got, how := ResolveNofile(c.req, c.nrOpen, c.pid1, "")
		if got != c.want || (how != "") != c.resolved {
			t.Errorf("%s: %+v (%q), want %+v resolved=%v", c.name, got, how, c.want, c.resolved)
		}
	}
}

func TestJVMMemoryFollowsEnvScript(t *testing.T) {
	const gib = 1 << 30
	cases := []struct {
		m             JVMMemory
		ram           uint64
		confignode    bool
		heapMB, dirMB int64
	}{
		{JVMMemory{}, 24 * gib, false, 12288 / 5 * 4, 12288 - 12288/5*4}, // half of RAM, 4..16 GiB: 4/5 heap
		{JVMMemory{}, 4 * gib, false, 2048 / 4 * 3, 2048 - 2048/4*3},     // below 4 GiB: 3/4 heap
		{JVMMemory{}, 64 * gib, true, 8192 / 5 * 4, 8192 - 8192/5*4},     // ConfigNode: 3/10 of RAM, at most 8 GiB
		{JVMMemory{MemorySize: "2G"}, 64 * gib, false, 1536, 512},
		{JVMMemory{HeapOverride: "1G", DirectOverride: "512M"}, 64 * gib, false, 1024, 512},
	}
	for i, c := range cases {
		h, d, how := c.m.HeapAndDirect(c.ram, c.confignode)
		if h != c.heapMB<<20 || d != c.dirMB<<20 {
			t.Errorf("case %d: heap %d MiB direct %d MiB (%s), want %d and %d", i, h>>20, d>>20, how, c.heapMB, c.dirMB)
		}
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
	if _, err := LoadHostYAML("t", strings.NewReader(`files: {/root/.ssh/id_rsa: "x"}`)); exitcode.Code(err) != exitcode.BadInput {
		t.Errorf("a file outside the configuration preflight reads: %v", err)
	}
}

// A recording keeps only the configuration lines preflight reads.
func TestRecordKeepsOnlyReadLines(t *testing.T) {
	unit := "[Unit]\nDescription=x\n[Service]\nEnvironment=DB_PASSWORD=hunter2\nExecStart=/usr/bin/emqx --token s3cret\nUser=emqx\nLimitNOFILE=infinity\n"
	got := string(KeepReadLines("/etc/systemd/system/emqx.service", []byte(unit)))
	if strings.Contains(got, "hunter2") || strings.Contains(got, "s3cret") || !strings.Contains(got, "LimitNOFILE=infinity") || !strings.Contains(got, "User=emqx") || !strings.Contains(got, "[Service]") {
		t.Errorf("unit kept as %q", got)
	}
	lim := "# comment\n* soft nofile 1048576\n@adm hard nproc 10\nroot - nofile 65536\n"
	if got := string(KeepReadLines("/etc/security/limits.conf", []byte(lim))); got != "\n* soft nofile 1048576\n\nroot - nofile 65536\n" {
		t.Errorf("limits.conf kept as %q", got)
	}
	// a file with no line read stays non-empty: an empty one is masked
	if got := string(KeepReadLines("/etc/systemd/system/x.service.d/a.conf", []byte("Environment=A=b"))); got != "\n" {
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
	g := &Gatherer{Root: host, F: &Facts{}, rec: newRecorder()}
	live, err := g.unitFromFiles("emqx.service")
	if err != nil {
		t.Fatal(err)
	}
	want := unitNofile{file: "/opt/emqx/emqx.service (as /etc/systemd/system/emqx.service)", lim: profiles.Limit{Soft: 65536, Hard: 65536},
		from: "/opt/emqx/emqx.service (as /etc/systemd/system/emqx.service):3", found: true, user: "emqx"}
	if len(live.files) == 0 || live.files[0].Path != "/etc/systemd/system/emqx.service" {
		t.Errorf("live host: files %+v, want the unit file first", live.files)
	}
	live.files = nil
	if !reflect.DeepEqual(live, want) {
		t.Fatalf("live host: %+v, want %+v", live, want)
	}
	dir := filepath.Join(t.TempDir(), "rec")
	if err := g.rec.write(dir); err != nil {
		t.Fatal(err)
	}
	replay := &Gatherer{Root: filepath.Join(dir, host), F: &Facts{}}
	got, err := replay.unitFromFiles("emqx.service")
	got.files = nil
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
	g := &Gatherer{Root: host, F: &Facts{}}
	u, err := g.unitFromFiles("iotdb-datanode@a.service")
	if err != nil {
		t.Fatal(err)
	}
	if u.missing != "" || u.lim != (profiles.Limit{Soft: 1048576, Hard: 1048576}) || !strings.HasSuffix(u.from, "iotdb-.service.d/60-hostprep.conf:2") || u.user != "iotdb" {
		t.Errorf("instance a: %+v", u)
	}
	if u, err := g.unitFromFiles("iotdb-datanode@b.service"); err != nil || u.lim.Hard != 1024 {
		t.Errorf("instance b (its own drop-in sorts last): %+v %v", u, err)
	}
	if u, err := g.unitFromFiles("iotdb-confignode@a.service"); err != nil || u.missing == "" {
		t.Errorf("an instance of a template that is not installed: %+v %v, want missing", u, err)
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
		tg, err := TargetFromProfile(p)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(tg.Ports) != fmt.Sprint(c.ports) {
			t.Errorf("probe broker %s: target ports %v, want %v", c.broker, tg.Ports, c.ports)
		}
	}
}
