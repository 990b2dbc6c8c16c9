package facts

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts/factstest"

	"github.com/hostprep/hostprep/internal/exitcode"
)

func TestGatherFromRecordedTree(t *testing.T) {
	root := factstest.FixtureRoot(t, nil)
	f, err := Gather(t.Context(), GatherOptions{Root: root, PID: 4242, SourceIPs: []string{"192.0.2.20"}})
	if err != nil {
		t.Fatal(err)
	}
	if f.Kernel != "6.1.0-13-amd64" || f.Sysctl["net.ipv4.tcp_mem"] != "94500\t126000\t189000" {
		t.Errorf("sysctls: kernel %q tcp_mem %q", f.Kernel, f.Sysctl["net.ipv4.tcp_mem"])
	}
	if n, ok := f.SysInt("fs.file-max"); !ok || n != 9223372036854775807 {
		t.Errorf("file-max %d %v", n, ok)
	}
	if c := f.Conntrack; !c.Loaded || c.Max != 65536 || c.Count != 60000 || c.Buckets != 16384 || len(c.Unreadable) > 0 {
		t.Errorf("conntrack %+v", f.Conntrack)
	}
	if f.Netstat["ListenOverflows"] != 7 || f.Netstat["ListenDrops"] != 9 {
		t.Errorf("netstat %v", f.Netstat)
	}
	if f.Sockstat != (Sockstat{InUse: 12, Orphan: 1, TW: 30, Alloc: 14, MemPages: 5}) {
		t.Errorf("sockstat %+v", f.Sockstat)
	}
	if fmt.Sprint(f.ListeningPorts) != "[1883 9090]" {
		t.Errorf("listening ports %v, want [1883 9090] (LISTEN only, tcp and tcp6)", f.ListeningPorts)
	}
	tp := f.Target
	if tp.NofileSoft != 1024 || tp.NofileHard != 524288 || tp.CapSysResource || tp.ManagedBy != "systemd" || tp.Unit != "mosquitto.service" {
		t.Errorf("target from --pid: %+v", tp)
	}
	if d := f.Systemd.DefaultLimitNOFILE; !f.Systemd.Running || d == nil || d.Soft != 4096 || d.Hard != 65536 {
		t.Errorf("systemd %+v %+v", f.Systemd, d)
	}
	if l := f.Login; l == nil || l.Soft == nil || l.Hard == nil || l.Soft.From != "/etc/security/limits.conf:2" && l.Soft.From != "/etc/security/limits.conf:4" {
		t.Errorf("login limits from limits.conf: %+v", l)
	}
	if f.MemTotal != 16384000*1024 || f.MemAvailable != 12000000*1024 {
		t.Errorf("memory via gopsutil: %d %d", f.MemTotal, f.MemAvailable)
	}
}

// Without CAP_SYS_RESOURCE in the bounding set (this sandbox), a limits.d
// entry above the inherited hard limit cannot be granted at login: the
// login limit is capped at the parent's hard limit, and the source says so.
func TestGatherLoginCappedWithoutCapSysResource(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the fixture's limits.conf line for root applies to root only")
	}
	parent := fmt.Sprintf("proc/%d/limits", os.Getppid())
	parentLimits := strings.Replace(factstest.LimitsFile, "1024                 524288", "20000                20000 ", 1)
	for _, c := range []struct {
		capBnd     string
		soft, hard uint64
		capped     bool
	}{
		{"000001fffeffffff", 20000, 20000, true}, // bit 24 clear, as on the build machine
		{"000001ffffffffff", 65536, 65536, false},
	} {
		root := factstest.FixtureRoot(t, map[string]string{parent: parentLimits, fmt.Sprintf("proc/%d/status", os.Getpid()): "Name:\thostprep\nCapEff:\t0000000000000000\nCapBnd:\t" + c.capBnd + "\n"})
		if err := os.RemoveAll(filepath.Join(root, "run/systemd")); err != nil {
			t.Fatal(err)
		}
		f, err := Gather(t.Context(), GatherOptions{Root: root})
		if err != nil {
			t.Fatal(err)
		}
		tp := f.Target
		// the fixture's limits.conf gives root 65536 (run as root) or * 1048576
		if tp.NofileHard != c.hard || tp.NofileSoft != c.soft {
			t.Errorf("CapBnd %s: target %+v, want %d:%d", c.capBnd, tp, c.soft, c.hard)
		}
		if strings.Contains(tp.Source, "CapBnd") != c.capped {
			t.Errorf("CapBnd %s: source %q", c.capBnd, tp.Source)
		}
		// Every fd check's observed line repeats the source: short, and
		// naming no parent process that may be gone when it is read.
		if src := strings.ReplaceAll(tp.Source, root, ""); len(src) > 200 || strings.Contains(src, parent) {
			t.Errorf("CapBnd %s: source is %d characters: %q", c.capBnd, len(src), src)
		}
	}
}

func TestGatherErrors(t *testing.T) {
	root := factstest.FixtureRoot(t, nil)
	if _, err := Gather(t.Context(), GatherOptions{Root: root, PID: 999999}); exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "--pid 999999") {
		t.Errorf("missing pid: %v", err)
	}
	if _, err := Gather(t.Context(), GatherOptions{Root: t.TempDir()}); exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "--root") {
		t.Errorf("a --root with no proc/sys is bad input naming --root: %v", err)
	}
}

// pam_limits' precedence as preflight sees it through hostconf, for a
// recorded user: the user's own line beats @group beats "*", and "*" never
// applies to root.
func TestLoginLimitPrecedence(t *testing.T) {
	root := factstest.FixtureRoot(t, nil)
	for _, c := range []struct {
		user   string
		groups []string
		want   string
	}{
		{"alice", []string{"adm"}, `user alice: soft 1048576 ("*", /etc/security/limits.conf:2), hard 4096 ("@adm", /etc/security/limits.conf:5)`},
		{"bob", nil, `user bob: soft 1048576 ("*", /etc/security/limits.conf:2), hard 1048576 ("*", /etc/security/limits.conf:3)`},
		{"root", []string{"adm"}, `user root: nofile 65536 ("root", /etc/security/limits.conf:4)`}, // one "-" line: said once
	} {
		g := &Gatherer{Root: root, F: &Facts{}, rep: &Recording{User: c.user, Groups: c.groups}}
		g.loginNofile()
		if g.F.Login == nil || g.F.Login.Describe() != c.want {
			t.Errorf("%s: %+v, want %s", c.user, g.F.Login, c.want)
			continue
		}
		g.targetLogin()
		if !strings.Contains(g.F.Target.Source, c.want) {
			t.Errorf("%s: target source %q does not name the lines", c.user, g.F.Target.Source)
		}
	}
}

func TestGatherLiveHost(t *testing.T) {
	f, err := Gather(t.Context(), GatherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if f.MemTotal == 0 || f.CPUs == 0 || f.PageSize == 0 || f.Target.NofileHard == 0 {
		t.Fatalf("live facts incomplete: mem %d cpus %d page %d nofile %d", f.MemTotal, f.CPUs, f.PageSize, f.Target.NofileHard)
	}
	if _, ok := f.SysFields("net.ipv4.ip_local_port_range"); !ok {
		t.Error("ip_local_port_range not read")
	}
	// our own pid: the limits read are the test process's
	f, err = Gather(t.Context(), GatherOptions{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if f.Target.PID != os.Getpid() || f.Target.NofileSoft == 0 {
		t.Errorf("--pid self: %+v", f.Target)
	}
}

func TestParseSystemctlShow(t *testing.T) {
	p := parseSystemctlShow("MainPID=0\nLimitNOFILE=524288\nLimitNOFILESoft=1024\nUser=\nLoadState=loaded\n")
	if p["MainPID"] != "0" || p["LimitNOFILE"] != "524288" || p["LimitNOFILESoft"] != "1024" || p["LoadState"] != "loaded" {
		t.Errorf("%v", p)
	}
	for in, want := range map[string]string{"1024:524288": "1024:524288", "65536": "65536:65536", "infinity": "infinity:infinity", "1024:infinity": "1024:infinity"} {
		l, err := parseSystemdLimit(in)
		if err != nil || FmtLimit(l) != want {
			t.Errorf("parseSystemdLimit(%q) = %s, %v; want %s", in, FmtLimit(l), err, want)
		}
	}
	if _, err := parseSystemdLimit("lots"); err == nil {
		t.Error("bad LimitNOFILE accepted")
	}
}

// The kind behind the infinity and keeps-1024 cases: a unit's limits come
// from wherever systemd finds its files — /usr/local/lib units, service.d
// drop-ins for every service, a /run drop-in shadowing an /etc one of the
// same name — and a masked unit is no unit (hostconf's reading).
func TestGatherUnitEveryLocation(t *testing.T) {
	root := factstest.FixtureRoot(t, map[string]string{
		"usr/local/lib/systemd/system/broker.service":      "[Service]\nExecStart=/opt/broker\nLimitNOFILE=4096\n",
		"usr/lib/systemd/system/service.d/50-all.conf":     "[Service]\nLimitNOFILE=8192\n",
		"etc/systemd/system/broker.service.d/70-site.conf": "[Service]\nLimitNOFILE=100000\n",
		"run/systemd/system/broker.service.d/70-site.conf": "[Service]\nLimitNOFILE=200000\nUser=broker\n",
		"lib/systemd/system/gone.service":                  "[Service]\nExecStart=/bin/true\nLimitNOFILE=65536\n",
	})
	if err := os.Symlink("/dev/null", filepath.Join(root, "etc/systemd/system/gone.service")); err != nil {
		t.Fatal(err)
	}
	f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "broker"})
	if err != nil {
		t.Fatal(err)
	}
	tp := f.Target
	// /etc's 70-site.conf shadows /run's of the same name; it sorts after 50-all.conf
	if tp.NofileSoft != 100000 || tp.NofileHard != 100000 || tp.UnitFile != "/usr/local/lib/systemd/system/broker.service" ||
		!strings.Contains(tp.Source, "/etc/systemd/system/broker.service.d/70-site.conf:2") || !tp.CapSysResource {
		t.Errorf("broker from every location: %+v", tp)
	}
	_, err = Gather(t.Context(), GatherOptions{Root: root, Service: "gone"})
	if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "masked") || strings.Contains(err.Error(), "no such unit") || strings.Contains(err.Error(), "drop-ins alone") {
		t.Errorf("a masked unit: %v, want bad input saying it is masked (not that there is no such unit)", err)
	}
	f, err = Gather(t.Context(), GatherOptions{Root: root, Service: "gone", ServiceFromProfile: true})
	if err != nil || !f.Target.UnitMissing || !strings.Contains(f.Target.Source, "masked") {
		t.Errorf("a masked unit named by a profile: %v %+v", err, f.Target)
	}
}

// A unit systemd has loaded but does not run yet: `systemctl show` gives
// what the next start uses until `systemctl daemon-reload`, the files
// what it gets after it and at the next boot. When they differ preflight
// judges the lower and names both (a recorded systemctl show answer).
func TestGatherLoadedUnitDiffersFromFiles(t *testing.T) {
	for _, c := range []struct {
		name, dropin, show string
		soft               uint64
		source             []string
	}{
		{"loaded lower", "[Service]\nLimitNOFILE=1048576\n", "LimitNOFILE=65536\nLimitNOFILESoft=65536\n", 65536,
			[]string{"systemctl show emqx.service (not running)", "the files say LimitNOFILE=1048576:1048576 (/etc/systemd/system/emqx.service.d/60-hostprep.conf:2)", "daemon-reload"}},
		{"files lower", "[Service]\nLimitNOFILE=4096\n", "LimitNOFILE=1048576\nLimitNOFILESoft=1048576\n", 4096,
			[]string{"LimitNOFILE in /etc/systemd/system/emqx.service.d/60-hostprep.conf:2", "systemd has LimitNOFILE=1048576:1048576 loaded"}},
		{"same", "[Service]\nLimitNOFILE=4096\n", "LimitNOFILE=4096\nLimitNOFILESoft=4096\n", 4096, []string{"systemctl show emqx.service (not running)"}},
	} {
		manifest := fmt.Sprintf(`{"format": 1, "page_size_bytes": 4096, "systemctl_show": {"emqx.service": %q}}`,
			"MainPID=0\n"+c.show+"User=\nLoadState=loaded\n")
		root := factstest.FixtureRoot(t, map[string]string{"etc/systemd/system/emqx.service.d/60-hostprep.conf": c.dropin, RecordManifest: manifest})
		f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "emqx"})
		if err != nil {
			t.Fatal(err)
		}
		tp := f.Target
		if tp.NofileSoft != c.soft {
			t.Errorf("%s: soft %d, want %d (%s)", c.name, tp.NofileSoft, c.soft, tp.Source)
		}
		for _, s := range c.source {
			if !strings.Contains(tp.Source, s) {
				t.Errorf("%s: source %q does not say %q", c.name, tp.Source, s)
			}
		}
		if c.name == "same" && strings.Contains(tp.Source, "daemon-reload") {
			t.Errorf("same: source %q speaks of a difference", tp.Source)
		}
	}
}

// A login whose pam_limits soft nofile is above its hard gets the hard as
// its soft (pam_limits lowers it before setrlimit): the target shows and
// fd.soft judges 65536, not the soft line's 900000.
func TestLoginSoftAboveHardIsClamped(t *testing.T) {
	who, err := user.Current()
	if err != nil {
		t.Skip("no current user name")
	}
	root := factstest.FixtureRoot(t, map[string]string{"etc/security/limits.conf": who.Username + " soft nofile 900000\n" + who.Username + " hard nofile 65536\n"})
	f, err := Gather(t.Context(), GatherOptions{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if tp := f.Target; tp.ManagedBy != "shell" || tp.NofileSoft != 65536 || tp.NofileHard != 65536 {
		t.Errorf("login target nofile %d:%d (%s), want 65536:65536", tp.NofileSoft, tp.NofileHard, tp.Source)
	}
}

// A profile naming several services (mqtt-broker-1m: emqx, mosquitto) is
// judged on the first one the host has installed, not failed on the first
// it names.
func TestProfileServicesFirstInstalled(t *testing.T) {
	root := factstest.FixtureRoot(t, nil) // has emqx.service, no nosuch.service
	f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "nosuch", ServiceFromProfile: true, AltServices: []string{"emqx"}, Role: Broker})
	if err != nil {
		t.Fatal(err)
	}
	if tp := f.Target; tp.Unit != "emqx.service" || tp.UnitMissing {
		t.Errorf("target unit %q (missing %v), want emqx.service, the installed one of [nosuch, emqx]", tp.Unit, tp.UnitMissing)
	}
}

// When no alternative is installed but one is masked (mqtt-broker-1m's
// [emqx, mosquitto] on a host with mosquitto masked), that one is judged,
// so the report says it is masked; it said emqx is no such unit, which
// hid the cause.
func TestProfileServicesMaskedBeatsAbsent(t *testing.T) {
	root := factstest.FixtureRoot(t, map[string]string{"lib/systemd/system/mosquitto.service": "[Service]\nExecStart=/bin/true\n"})
	if err := os.Symlink("/dev/null", filepath.Join(root, "etc/systemd/system/mosquitto.service")); err != nil {
		t.Fatal(err)
	}
	f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "nosuch", ServiceFromProfile: true, AltServices: []string{"mosquitto"}, Role: Broker})
	if err != nil {
		t.Fatal(err)
	}
	tp := f.Target
	if tp.Unit != "mosquitto.service" || !strings.Contains(tp.Source+" "+strings.Join(f.Notes, " "), "masked") {
		t.Errorf("target unit %q (%s; notes %q), want mosquitto.service, said to be masked", tp.Unit, tp.Source, f.Notes)
	}
}

// A unit file systemd cannot parse (a line that is not UTF-8, a bad
// section header) makes systemd fail to load the unit: it is never
// started, so preflight reports no unit rather than its LimitNOFILE; and
// an alias link (Alias=, sshd.service -> ssh.service) reads the drop-ins
// of every name (hostconf's reading).
func TestGatherUnitThatDoesNotParseAndAliases(t *testing.T) {
	root := factstest.FixtureRoot(t, map[string]string{
		"lib/systemd/system/broken.service":            "[Service\nExecStart=/bin/true\nLimitNOFILE=65536\n",
		"lib/systemd/system/ssh.service":               "[Service]\nExecStart=/usr/sbin/sshd -D\n",
		"etc/systemd/system/sshd.service.d/limit.conf": "[Service]\nLimitNOFILE=30000\n",
	})
	if err := os.Symlink("/lib/systemd/system/ssh.service", filepath.Join(root, "etc/systemd/system/sshd.service")); err != nil {
		t.Fatal(err)
	}
	_, err := Gather(t.Context(), GatherOptions{Root: root, Service: "broken"})
	if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "systemd cannot parse its unit file (/lib/systemd/system/broken.service:1: invalid section header \"[Service\")") {
		t.Errorf("a unit file that does not parse: %v, want bad input saying so", err)
	}
	f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "ssh"})
	if err != nil || f.Target.NofileHard != 30000 || !strings.Contains(f.Target.Source, "/etc/systemd/system/sshd.service.d/limit.conf:2") {
		t.Errorf("ssh.service with a drop-in under its alias sshd.service: %v %+v", err, f.Target)
	}
}
