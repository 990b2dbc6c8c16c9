package preflight

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

const limitsFile = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max open files            1024                 524288               files     
Max locked memory         8388608              8388608              bytes     
`

// A recorded /proc, /sys and /etc tree, node_exporter style.
func fixtureRoot(t *testing.T, extra map[string]string) string {
	files := map[string]string{
		"proc/sys/fs/file-max":                        "9223372036854775807\n",
		"proc/sys/fs/file-nr":                         "2016\t0\t9223372036854775807\n",
		"proc/sys/fs/nr_open":                         "1048576\n",
		"proc/sys/net/core/somaxconn":                 "4096\n",
		"proc/sys/net/ipv4/ip_local_port_range":       "32768\t60999\n",
		"proc/sys/net/ipv4/ip_local_reserved_ports":   "\n",
		"proc/sys/net/ipv4/tcp_mem":                   "94500\t126000\t189000\n",
		"proc/sys/net/netfilter/nf_conntrack_max":     "65536\n",
		"proc/sys/net/netfilter/nf_conntrack_count":   "60000\n",
		"proc/sys/net/netfilter/nf_conntrack_buckets": "16384\n",
		"proc/sys/kernel/osrelease":                   "6.1.0-13-amd64\n",
		"proc/net/netstat": "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPMemoryPressures\n" +
			"TcpExt: 0 7 9 0\nIpExt: InNoRoutes\nIpExt: 0\n",
		"proc/net/sockstat": "sockets: used 200\nTCP: inuse 12 orphan 1 tw 30 alloc 14 mem 5\nUDP: inuse 1 mem 0\n",
		"proc/net/tcp": "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
			"   0: 00000000:075B 00000000:0000 0A 00000000:00000000 00:00000000 00000000   107        0 1 1 0000000000000000 100 0 0 10 0\n" +
			"   1: 0100007F:9C40 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1\n",
		"proc/net/tcp6": "  sl  local_address rem_address   st\n" +
			"   0: 00000000000000000000000000000000:2382 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   0 0 3 1\n",
		"proc/4242/limits":                                   limitsFile,
		"proc/4242/status":                                   "Name:\tmosquitto\nCapEff:\t0000000000000000\n",
		"proc/4242/cgroup":                                   "0::/system.slice/mosquitto.service\n",
		"proc/meminfo":                                       "MemTotal:       16384000 kB\nMemFree:         8000000 kB\nMemAvailable:   12000000 kB\nBuffers: 0 kB\nCached: 0 kB\n",
		"run/systemd/system/.keep":                           "",
		"etc/systemd/system.conf":                            "[Manager]\n#DefaultLimitNOFILE=1024:524288\n",
		"etc/systemd/system.conf.d/10-nofile.conf":           "[Manager]\nDefaultLimitNOFILE=4096:65536\n",
		"lib/systemd/system/emqx.service":                    "[Service]\nExecStart=/usr/bin/emqx\nLimitNOFILE=65536\nUser=emqx\n",
		"etc/systemd/system/emqx.service.d/60-hostprep.conf": "[Service]\nLimitNOFILE=1048576:2097152\n",
		"etc/security/limits.conf":                           "# comment\n*  soft  nofile  1048576\n*  hard  nofile  1048576\nroot - nofile 65536\n@adm hard nofile 4096\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return testenv.TempTree(t, files)
}

func TestGatherFromRecordedTree(t *testing.T) {
	root := fixtureRoot(t, nil)
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
	if f.Sockstat != (facts.Sockstat{InUse: 12, Orphan: 1, TW: 30, Alloc: 14, MemPages: 5}) {
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

func TestGatherServiceFromFiles(t *testing.T) {
	// systemd running in the recorded tree (run/systemd/system exists):
	// the unit file and its drop-ins decide
	root := fixtureRoot(t, nil)
	f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "emqx"})
	if err != nil {
		t.Fatal(err)
	}
	tp := f.Target
	// the drop-in asks for hard 2097152 above fs.nr_open 1048576: systemd's
	// setrlimit() gets EPERM and it sets the closest it can (PID 1's hard
	// limit; not in this tree, so at most fs.nr_open)
	if tp.Unit != "emqx.service" || tp.ManagedBy != "systemd" || tp.NofileSoft != 1048576 || tp.NofileHard != 1048576 || tp.Requested != "1048576:2097152" || !strings.Contains(tp.Source, "60-hostprep.conf") || tp.CapSysResource {
		t.Errorf("service from files: %+v", tp)
	}
	// a unit with no LimitNOFILE gets systemd's DefaultLimitNOFILE
	root = fixtureRoot(t, map[string]string{"lib/systemd/system/mosquitto.service": "[Service]\nExecStart=/usr/sbin/mosquitto\n"})
	f, err = Gather(t.Context(), GatherOptions{Root: root, Service: "mosquitto.service"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Target.NofileSoft != 4096 || f.Target.NofileHard != 65536 || !strings.Contains(f.Target.Source, "DefaultLimitNOFILE 4096:65536 (/etc/systemd/system.conf.d/10-nofile.conf:2)") {
		t.Errorf("default limit: %+v", f.Target)
	}
	// the classic trap, with the lines that set the login's limits
	tg := facts.Target{Sockets: 100000, Role: facts.Broker}
	_ = tg.Validate()
	login := `soft 65536 ("root", /etc/security/limits.conf:4)`
	if os.Geteuid() != 0 {
		login = `soft 1048576 ("*", /etc/security/limits.conf:2)`
	}
	if c := testenv.CheckByID(t, checks.Evaluate(f, tg), "fd.soft"); c.Status != verdict.Fail || !strings.Contains(c.Summary, login) ||
		!strings.Contains(c.Summary, "limits.conf does not apply to systemd services") {
		t.Errorf("fd.soft for a unit at the manager default: %s", message(c))
	}
}

// systemd not running (no /run/systemd/system, as on the build machine):
// no unit's LimitNOFILE applies; the limits are a login shell's, and the
// facts say so.
func TestGatherServiceWithoutSystemd(t *testing.T) {
	root := fixtureRoot(t, nil)
	if err := os.RemoveAll(filepath.Join(root, "run/systemd")); err != nil {
		t.Fatal(err)
	}
	f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "emqx"})
	if err != nil {
		t.Fatal(err)
	}
	tp := f.Target
	// root's limits.d line (65536) is what a login shell gets, not the drop-in's 1048576:2097152
	if f.Systemd.Running || tp.ManagedBy != "shell" || tp.Unit != "emqx.service" || tp.NofileSoft != 65536 || tp.NofileHard != 65536 {
		t.Errorf("without systemd: running %v, target %+v", f.Systemd.Running, tp)
	}
	if !strings.Contains(tp.UnitLimitNOFILE, "1048576:2097152") || !strings.Contains(tp.Source, "systemd is not running here") || !strings.HasSuffix(tp.UnitFile, "lib/systemd/system/emqx.service") {
		t.Errorf("the unit's setting and why it does not apply: %+v", tp)
	}
	tg := facts.Target{Sockets: 1000000, Role: facts.Broker}
	_ = tg.Validate()
	cs := checks.Evaluate(f, tg)
	if c := testenv.CheckByID(t, cs, "fd.soft"); c.Status != verdict.Fail || !strings.Contains(c.Summary, "systemd is not running here") || strings.Contains(c.Remedy, "systemctl") {
		t.Errorf("fd.soft without systemd: %s", message(c))
	}
	if c := testenv.CheckByID(t, cs, "fd.raise"); strings.Contains(c.Summary, "PID 1") {
		t.Errorf("fd.raise claims systemd PID 1 sets the limit: %s", message(c))
	}
	// enough for a login shell is no promise: whatever starts emqx here
	// may pass on less (field case: a mosquitto at nofile 1024 passed on
	// the shell's 20000)
	small := facts.Target{Sockets: 5000, Role: facts.Broker}
	_ = small.Validate()
	for _, id := range []string{"fd.soft", "fd.hard", "fd.raise"} {
		if c := testenv.CheckByID(t, checks.Evaluate(f, small), id); c.Status != verdict.Warn || !strings.Contains(c.Summary, "whatever starts emqx") || !strings.Contains(c.Remedy, "--pid") {
			t.Errorf("%s without systemd, enough for a shell: %s", id, message(c))
		}
	}
	if cp := checks.CapacityOf(f, small); cp.Limits[0].Check != "fd.soft" || !cp.Limits[0].Assumed {
		t.Errorf("capacity without systemd: %+v, want the shell's soft nofile marked assumed", cp)
	}

	// --service of a unit with no unit file: exit 2 naming it
	_, err = Gather(t.Context(), GatherOptions{Root: root, Service: "nosuch.service"})
	if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "--service nosuch.service: no such unit") || !strings.Contains(err.Error(), "systemd is not running") {
		t.Errorf("--service of a missing unit: %v", err)
	}

	// after `tune apply` in a sandbox: a drop-in for a unit that is not
	// installed. From a profile that is a failing finding, not a pass.
	if err := os.Remove(filepath.Join(root, "lib/systemd/system/emqx.service")); err != nil {
		t.Fatal(err)
	}
	if _, err := Gather(t.Context(), GatherOptions{Root: root, Service: "emqx"}); exitcode.Code(err) != exitcode.BadInput {
		t.Errorf("--service of a unit with only a drop-in: %v, want bad input", err)
	}
	f, err = Gather(t.Context(), GatherOptions{Root: root, Service: "emqx", ServiceFromProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Target.UnitMissing || f.Target.NofileHard == 2097152 {
		t.Errorf("profile unit with only a drop-in: %+v", f.Target)
	}
	tg = facts.Target{Sockets: 1000, Role: facts.Broker}
	_ = tg.Validate()
	cs = checks.Evaluate(f, tg)
	if c := testenv.CheckByID(t, cs, "fd.soft"); c.Status != verdict.Fail || !strings.Contains(c.Summary, "emqx.service is not installed") {
		t.Errorf("fd.soft for a missing profile unit: %s", message(c))
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
	parentLimits := strings.Replace(limitsFile, "1024                 524288", "20000                20000 ", 1)
	for _, c := range []struct {
		capBnd     string
		soft, hard uint64
		capped     bool
	}{
		{"000001fffeffffff", 20000, 20000, true}, // bit 24 clear, as on the build machine
		{"000001ffffffffff", 65536, 65536, false},
	} {
		root := fixtureRoot(t, map[string]string{parent: parentLimits, fmt.Sprintf("proc/%d/status", os.Getpid()): "Name:\thostprep\nCapEff:\t0000000000000000\nCapBnd:\t" + c.capBnd + "\n"})
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
	}
}

func TestGatherErrors(t *testing.T) {
	root := fixtureRoot(t, nil)
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
	root := fixtureRoot(t, nil)
	for _, c := range []struct {
		user   string
		groups []string
		want   string
	}{
		{"alice", []string{"adm"}, `user alice: soft 1048576 ("*", /etc/security/limits.conf:2), hard 4096 ("@adm", /etc/security/limits.conf:5)`},
		{"bob", nil, `user bob: soft 1048576 ("*", /etc/security/limits.conf:2), hard 1048576 ("*", /etc/security/limits.conf:3)`},
		{"root", []string{"adm"}, `user root: soft 65536 ("root", /etc/security/limits.conf:4), hard 65536 ("root", /etc/security/limits.conf:4)`},
	} {
		g := &facts.Gatherer{Root: root, F: &facts.Facts{}, Rep: &facts.Recording{User: c.user, Groups: c.groups}}
		g.LoginNofile()
		if g.F.Login == nil || g.F.Login.Describe() != c.want {
			t.Errorf("%s: %+v, want %s", c.user, g.F.Login, c.want)
			continue
		}
		g.TargetLogin()
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
	p := facts.ParseSystemctlShow("MainPID=0\nLimitNOFILE=524288\nLimitNOFILESoft=1024\nUser=\nLoadState=loaded\n")
	if p["MainPID"] != "0" || p["LimitNOFILE"] != "524288" || p["LimitNOFILESoft"] != "1024" || p["LoadState"] != "loaded" {
		t.Errorf("%v", p)
	}
	for in, want := range map[string]string{"1024:524288": "1024:524288", "65536": "65536:65536", "infinity": "infinity:infinity", "1024:infinity": "1024:infinity"} {
		l, err := facts.ParseSystemdLimit(in)
		if err != nil || facts.FmtLimit(l) != want {
			t.Errorf("parseSystemdLimit(%q) = %s, %v; want %s", in, facts.FmtLimit(l), err, want)
		}
	}
	if _, err := facts.ParseSystemdLimit("lots"); err == nil {
		t.Error("bad LimitNOFILE accepted")
	}
}

// The kind behind the infinity and keeps-1024 cases: a unit's limits come
// from wherever systemd finds its files — /usr/local/lib units, service.d
// drop-ins for every service, a /run drop-in shadowing an /etc one of the
// same name — and a masked unit is no unit (hostconf's reading).
func TestGatherUnitEveryLocation(t *testing.T) {
	root := fixtureRoot(t, map[string]string{
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
		root := fixtureRoot(t, map[string]string{"etc/systemd/system/emqx.service.d/60-hostprep.conf": c.dropin, facts.RecordManifest: manifest})
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
	root := fixtureRoot(t, map[string]string{"etc/security/limits.conf": who.Username + " soft nofile 900000\n" + who.Username + " hard nofile 65536\n"})
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
	root := fixtureRoot(t, nil) // has emqx.service, no nosuch.service
	f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "nosuch", ServiceFromProfile: true, AltServices: []string{"emqx"}, Role: facts.Broker})
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
	root := fixtureRoot(t, map[string]string{"lib/systemd/system/mosquitto.service": "[Service]\nExecStart=/bin/true\n"})
	if err := os.Symlink("/dev/null", filepath.Join(root, "etc/systemd/system/mosquitto.service")); err != nil {
		t.Fatal(err)
	}
	f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "nosuch", ServiceFromProfile: true, AltServices: []string{"mosquitto"}, Role: facts.Broker})
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
	root := fixtureRoot(t, map[string]string{
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
