package checks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/profiles"
)

func TestChecksOnRecordedHosts(t *testing.T) {
	cases := []struct {
		name     string
		host     string
		target   facts.Target
		id       string
		status   verdict.Status
		mentions []string
	}{
		{"stock host only warns for an unseen small broker", ``, facts.Target{Sockets: 500, Role: facts.Broker}, "fd.soft", verdict.Warn, []string{"service's own limits are not known", "--pid"}},
		{"nr_open below target", `sysctl: {fs.nr_open: "1048576"}
target_process: {managed_by: systemd, unit: emqx.service, nofile_soft: 1048576, nofile_hard: 1048576}`,
			facts.Target{Sockets: 2000000, Role: facts.Broker}, "fd.nr_open", verdict.Fail, []string{"fs.nr_open 1048576", "`hostprep tune apply --profile PROFILE --set fs.nr_open=2020000`"}},
		{"nr_open pass names the ceiling, not the need", ``, facts.Target{Sockets: 10, Role: facts.Broker}, "fd.nr_open", verdict.Pass,
			[]string{"hard nofile go up to 1048576 file descriptors", "enough for 10 sockets + 64 headroom (74)"}},
		{"file-max nearly used", `sysctl: {fs.file-max: "200000", fs.file-nr: "150000 0 200000"}`,
			facts.Target{Sockets: 100000, Role: facts.Broker}, "fd.file_max", verdict.Fail, []string{"50000 free", "ENFILE"}},
		{"somaxconn too small for the rate", `sysctl: {net.core.somaxconn: "128"}`,
			facts.Target{Sockets: 1000, Role: facts.Broker, ConnRate: 1000}, "accept.backlog", verdict.Fail, []string{"somaxconn 128 < 2000"}},
		{"somaxconn ignored for loadgen", `sysctl: {net.core.somaxconn: "128"}`,
			facts.Target{Sockets: 1000, Role: facts.Loadgen}, "accept.backlog", verdict.Skip, nil},
		{"syn backlog without syncookies", `sysctl: {net.ipv4.tcp_syncookies: "0", net.ipv4.tcp_max_syn_backlog: "256"}`,
			facts.Target{Sockets: 1000, Role: facts.IoTDB, ConnRate: 500}, "accept.syn_backlog", verdict.Fail, []string{"tcp_max_syn_backlog 256 < 1000"}},
		{"syn backlog with syncookies", `sysctl: {net.ipv4.tcp_max_syn_backlog: "256"}`,
			facts.Target{Sockets: 1000, Role: facts.Broker, ConnRate: 500}, "accept.syn_backlog", verdict.Pass, nil},
		{"accept queue overflowed before", `netstat: {ListenOverflows: 12, ListenDrops: 15}`,
			facts.Target{Sockets: 1000, Role: facts.Broker}, "accept.overflows", verdict.Skip, []string{"ListenOverflows 12", "since boot (information"}},
		{"conntrack hash too small", `conntrack: {loaded: true, max: 2000000, count: 0, buckets: 16384}`,
			facts.Target{Sockets: 1000000, Role: facts.Broker}, "conntrack", verdict.Warn, []string{"hashsize"}},
		{"conntrack not loaded", ``, facts.Target{Sockets: 1000000, Role: facts.Broker}, "conntrack", verdict.Skip, nil},
		{"tcp_mem written in bytes", `mem_total_bytes: 8589934592
sysctl: {net.ipv4.tcp_mem: "16777216 16777216 16777216"}`,
			facts.Target{Sockets: 1000000, Role: facts.Broker}, "mem.buffers", verdict.Warn, []string{"exceeds MemAvailable", "pages"}},
		{"memory too small", `mem_total_bytes: 2147483648
mem_available_bytes: 1073741824`, facts.Target{Sockets: 1000000, Role: facts.Broker}, "mem.available", verdict.Fail, []string{"MemAvailable 1024 MiB"}},
		{"under memory pressure now", `sockstat: {mem: 200000}`, facts.Target{Sockets: 1000, Role: facts.Broker}, "mem.pressure", verdict.Fail, []string{"pressure"}},
		{"pressure since boot", `netstat: {TCPMemoryPressures: 3}`, facts.Target{Sockets: 1000, Role: facts.Broker}, "mem.pressure", verdict.Warn, []string{"TCPMemoryPressures 3"}},
		{"four bound source addresses suffice", `source_addresses: [192.0.2.20, 192.0.2.21, 192.0.2.22, 192.0.2.23]`,
			facts.Target{Sockets: 100000, Role: facts.Loadgen, Destinations: []string{"192.0.2.10:1883"}, SourceIPs: []string{"192.0.2.20", "192.0.2.21", "192.0.2.22", "192.0.2.23"}}, "ports.ephemeral", verdict.Pass, nil},
		{"two destinations double the ports", ``,
			facts.Target{Sockets: 50000, Role: facts.Loadgen, Destinations: []string{"192.0.2.10:1883", "192.0.2.11:1883"}}, "ports.ephemeral", verdict.Pass, nil},
		{"IPv6 destination needs IPv6 sources", `source_addresses: [192.0.2.20, "2001:db8::20"]`,
			facts.Target{Sockets: 60000, Role: facts.Loadgen, Destinations: []string{"[2001:db8::10]:1883"}, SourceIPs: []string{"192.0.2.20", "2001:db8::20"}}, "ports.ephemeral", verdict.Fail, []string{"1 IPv6 source", "need 3 source addresses"}},
		{"reserved ports shrink the range", `sysctl: {net.ipv4.ip_local_reserved_ports: "40000-40999"}`,
			facts.Target{Sockets: 28000, Role: facts.Loadgen}, "ports.ephemeral", verdict.Fail, []string{"27232 per source address", "need 2 source addresses"}},
		{"tw_reuse=1 makes churn harmless", `sysctl: {net.ipv4.tcp_tw_reuse: "1"}`,
			facts.Target{Sockets: 20000, Role: facts.Loadgen, ConnRate: 5000}, "ports.time_wait", verdict.Pass, nil},
		{"TIME_WAIT churn eats the ports", ``,
			facts.Target{Sockets: 20000, Role: facts.Loadgen, ConnRate: 5000}, "ports.time_wait", verdict.Warn, []string{"300000 ports in TIME_WAIT", "tcp_tw_reuse"}},
		{"profile service port in range", ``,
			facts.Target{Sockets: 1000, Role: facts.Broker, ServicePorts: []int{40000}}, "ports.collision", verdict.Warn, []string{"service port 40000", "reserve_ports: [40000]"}},
		{"--port inside the range, nothing listening yet", ``,
			facts.Target{Sockets: 500, Role: facts.Broker, Ports: []int{40001}}, "ports.collision", verdict.Warn, []string{"service port 40001", "reserve_ports: [40001]"}},
		{"a listener in the range may hold a port the kernel picked", `listening_ports: [1883, 38672]`,
			facts.Target{Sockets: 1000, Role: facts.Broker}, "ports.collision", verdict.Warn, []string{"listening port 38672", "fixed in its service's configuration", "reserve_ports: [38672]", "picked at bind", "ss -ltnp 'sport = :38672'"}},
		{"reserved listening port is fine", `sysctl: {net.ipv4.ip_local_port_range: "1025 65000", net.ipv4.ip_local_reserved_ports: "1883,9090"}
listening_ports: [1883, 9090]`, facts.Target{Sockets: 1000, Role: facts.Broker}, "ports.collision", verdict.Pass, nil},
		{"orphans", ``, facts.Target{Sockets: 100000, Role: facts.Broker}, "tcp.orphans", verdict.Warn, []string{"tcp_max_orphans 32768"}},
		{"tw buckets", ``, facts.Target{Sockets: 1000, Role: facts.Broker, ConnRate: 1000}, "tcp.tw_buckets", verdict.Warn, []string{"60000"}},
		{"clock not synchronised on one host", `clock: {known: true, synced: false}`, facts.Target{Sockets: 10, Role: facts.Broker}, "clock.sync", verdict.Skip, []string{"STA_UNSYNC", "does not matter here: one host", "fleet run across hosts"}},
		{"clock not synchronised, load to another host", `clock: {known: true, synced: false}`, facts.Target{Sockets: 10, Role: facts.Loadgen, Destinations: []string{"192.0.2.10:1883"}}, "clock.sync", verdict.Warn, []string{"STA_UNSYNC", "192.0.2.10:1883", "timedatectl set-ntp true"}},
		{"container with its own netns", `container: {kind: docker, own_netns: true}`, facts.Target{Sockets: 10, Role: facts.Broker}, "container", verdict.Warn, []string{"net.core.somaxconn", "fs.nr_open"}},
		{"container sharing host netns", `container: {kind: docker, own_netns: false}`, facts.Target{Sockets: 10, Role: facts.Broker}, "container", verdict.Pass, nil},
		{"unlimited nofile", `target_process: {managed_by: shell, nofile_soft: 18446744073709551615, nofile_hard: 18446744073709551615}`,
			facts.Target{Sockets: 100000, Role: facts.Broker}, "fd.soft", verdict.Pass, []string{"soft nofile 1048576", "fs.nr_open 1048576", "no infinite fd limit"}},
		{"unlimited nofile is fs.nr_open at most", `target_process: {managed_by: shell, nofile_soft: unlimited, nofile_hard: unlimited}`,
			facts.Target{Sockets: 2000000, Role: facts.Loadgen}, "fd.soft", verdict.Fail, []string{"soft nofile 1048576"}},
		{"shell trap remedy names limits.d", `target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 524288}`,
			facts.Target{Sockets: 50000, Role: facts.Loadgen}, "fd.soft", verdict.Fail, []string{"limits.d", "ulimit -n"}},
		{"with CAP_SYS_RESOURCE the hard limit can be raised", `target_process: {managed_by: shell, nofile_soft: 20000, nofile_hard: 20000}`,
			facts.Target{Sockets: 100000, Role: facts.Broker}, "fd.raise", verdict.Pass, []string{"CAP_SYS_RESOURCE"}},
		{"active not run", ``, facts.Target{Sockets: 10, Role: facts.Broker}, "active", verdict.Skip, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := host(t, c.host)
			tg := c.target
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			got := testenv.CheckByID(t, Evaluate(f, tg), c.id)
			if got.Status != c.status {
				t.Fatalf("%s: %s, want %s: %s", c.id, got.Status, c.status, message(got))
			}
			for _, m := range c.mentions {
				if !strings.Contains(strings.ToLower(message(got)), strings.ToLower(m)) {
					t.Errorf("%s lacks %q: %s", c.id, m, message(got))
				}
			}
			if (got.Status == verdict.Fail || got.Status == verdict.Warn) && (got.Observed == "" || got.Expected == "" || got.Remedy == "") {
				t.Errorf("%s %s without observed/expected/remedy: %+v", c.id, got.Status, got)
			}
		})
	}
}

func TestActiveResultChecks(t *testing.T) {
	f := host(t, ``)
	tg := facts.Target{Sockets: 1000000, Role: facts.Broker}
	_ = tg.Validate()
	f.Measured = &facts.ActiveResult{RequestedSockets: 19936, ReachedSockets: 19936, Connections: 9968, SourceAddresses: 1, BytesPerSocket: 4000, NofileSoft: 20000, NofileHard: 20000}
	got := testenv.CheckByID(t, Evaluate(f, tg), "active")
	if got.Status != verdict.Warn || !strings.Contains(got.Summary, "3815 MiB") {
		t.Errorf("partial measurement: %+v", got)
	}
	if m := testenv.CheckByID(t, Evaluate(f, tg), "mem.available"); !strings.Contains(m.Expected, "measured by --active") {
		t.Errorf("mem.available does not use the measured cost: %+v", m)
	}
	f.Measured = &facts.ActiveResult{RequestedSockets: 19936, ReachedSockets: 1020, FirstError: "EMFILE", FirstErrorOp: "accept", FirstErrorMessage: "too many open files"}
	if got := testenv.CheckByID(t, Evaluate(f, tg), "active"); got.Status != verdict.Fail || !strings.Contains(got.Summary, "EMFILE") || !strings.Contains(got.Remedy, "nofile") {
		t.Errorf("failed measurement: %+v", got)
	}
}

// TestSocketsBound guards the documented bound on --sockets: MaxSockets
// is taken, one more is bad input naming the bound.
func TestSocketsBound(t *testing.T) {
	ok := facts.Target{Sockets: facts.MaxSockets, Role: facts.Broker}
	if err := ok.Validate(); err != nil {
		t.Errorf("--sockets %d: %v, want accepted", facts.MaxSockets, err)
	}
	over := facts.Target{Sockets: facts.MaxSockets + 1, Role: facts.Broker}
	if err := over.Validate(); exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "at most 1073741824") {
		t.Errorf("--sockets %d: %v, want bad input naming the bound", facts.MaxSockets+1, err)
	}
}

func TestStockDefaults(t *testing.T) {
	f := facts.StockDebian12(0)
	for k, want := range map[string]string{
		"net.ipv4.tcp_max_syn_backlog": "512",
		"net.ipv4.tcp_max_tw_buckets":  "32768",
		"net.ipv4.tcp_max_orphans":     "32768",
		"net.ipv4.tcp_mem":             "98304\t131072\t196608",
	} {
		if f.Sysctl[k] != want {
			t.Errorf("8 GiB stock %s = %q, want %q", k, f.Sysctl[k], want)
		}
	}
	// the build host: 24 GiB gives what its kernel shows (2048, 131072)
	f = facts.StockDebian12(24 << 30)
	if f.Sysctl["net.ipv4.tcp_max_syn_backlog"] != "2048" || f.Sysctl["net.ipv4.tcp_max_tw_buckets"] != "131072" {
		t.Errorf("24 GiB: %s %s", f.Sysctl["net.ipv4.tcp_max_syn_backlog"], f.Sysctl["net.ipv4.tcp_max_tw_buckets"])
	}
}

func TestTargetFromProfile(t *testing.T) {
	if _, err := facts.TargetFromProfile(nil); exitcode.Code(err) != exitcode.BadInput {
		t.Errorf("nil profile: %v", err)
	}
}

func TestTargetFromProfileFields(t *testing.T) {
	p := &profiles.Profile{
		Name:         "edge",
		ReservePorts: []int{1883, 8883},
		Systemd:      profiles.Systemd{Services: []string{"mosquitto"}},
		Preflight:    &profiles.PreflightTarget{Sockets: 200000, Role: "broker", ConnRate: 1000},
		Probe:        profiles.Probes{MQTT: &profiles.MQTTProbe{Broker: "tcp://127.0.0.1:18831"}},
	}
	tg, err := facts.TargetFromProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Sockets != 200000 || tg.Role != facts.Broker || tg.ConnRate != 1000 || tg.Service != "mosquitto" || fmt.Sprint(tg.ServicePorts) != "[1883 8883 18831]" {
		t.Errorf("target %+v", tg)
	}
	if _, err := facts.TargetFromProfile(&profiles.Profile{Name: "bare"}); exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), `"bare"`) {
		t.Errorf("profile without preflight: %v", err)
	}
}

// Every built-in profile with a preflight section gives a valid target.
func TestBuiltinProfilesHaveValidTargets(t *testing.T) {
	names := profiles.BuiltinNames()
	if len(names) == 0 {
		t.Skip("no built-in profiles yet")
	}
	n := 0
	for _, name := range names {
		p, err := profiles.Load(name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Preflight == nil {
			continue
		}
		tg, err := facts.TargetFromProfile(p)
		if err == nil {
			err = tg.Validate()
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		n++
	}
	if n == 0 {
		t.Error("no built-in profile carries a preflight target")
	}
}

// applyProfile is what `tune apply` of p leaves on a stock host: its
// sysctls (exact, or field-wise at-least/at-most), its nofile limits for
// the service (systemd) or login sessions, and conntrack as the profile
// sizes it when it sets nf_conntrack_max.
func applyProfile(t *testing.T, f *facts.Facts, p *profiles.Profile) {
	t.Helper()
	for k, s := range p.Sysctl {
		cur, ok := f.SysFields(k)
		want := strings.Fields(s.Value)
		if ok && len(cur) == len(want) && s.Mode != profiles.Exact && s.Mode != "" {
			out := make([]string, len(want))
			for i := range want {
				var w int64
				fmt.Sscan(want[i], &w)
				if (s.Mode == profiles.AtLeast && cur[i] > w) || (s.Mode == profiles.AtMost && cur[i] < w) {
					w = cur[i]
				}
				out[i] = fmt.Sprint(w)
			}
			want = out
		}
		f.Sysctl[k] = strings.Join(want, "\t")
		if k == "net.netfilter.nf_conntrack_max" {
			var m uint64
			fmt.Sscan(s.Value, &m)
			f.Conntrack = facts.Conntrack{Loaded: true, Max: m, Buckets: m / 4}
		}
	}
	if l := p.Systemd.LimitNOFILE; l != nil && len(p.Systemd.Services) > 0 {
		f.Target = facts.ProcessFacts{ManagedBy: "systemd", Unit: p.Systemd.Services[0], NofileSoft: l.Soft, NofileHard: l.Hard, CapSysResource: true, Source: "profile drop-in"}
	} else if l := p.Limits.Nofile; l != nil {
		f.Target = facts.ProcessFacts{ManagedBy: "shell", NofileSoft: l.Soft, NofileHard: l.Hard, CapSysResource: true, Source: "profile limits.d"}
	}
}

// After `tune apply` of a built-in profile, the fd, accept-path and port
// checks of the profile's own preflight target pass on a host that allows
// it (16 GiB RAM; for a loadgen four source addresses it binds to: bound
// sockets take no TIME_WAIT port over, so 100000 held and 2000/s of churn
// for 60 s need 220000 ports, more than two addresses' 129024).
func TestBuiltinProfilesSatisfyTheirOwnTarget(t *testing.T) {
	for _, name := range profiles.BuiltinNames() {
		p, err := profiles.Load(name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Preflight == nil {
			continue
		}
		t.Run(name, func(t *testing.T) {
			f := facts.StockDebian12(16 << 30)
			f.SourceAddresses = []string{"192.0.2.20", "192.0.2.21", "192.0.2.22", "192.0.2.23"}
			applyProfile(t, f, p)
			tg, err := facts.TargetFromProfile(p)
			if err != nil {
				t.Fatal(err)
			}
			if tg.Role == facts.Loadgen && len(tg.SourceIPs) == 0 {
				// the load generator binds to them (--source-ips)
				tg.SourceIPs = f.SourceAddresses
			}
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, c := range Evaluate(f, tg) {
				fam := strings.SplitN(c.ID, ".", 2)[0]
				if (fam == "fd" || fam == "accept" || fam == "ports" || fam == "conntrack") && (c.Status == verdict.Fail || c.Status == verdict.Warn) {
					t.Errorf("%s after applying %s: %s", c.ID, name, message(c))
				}
				if c.Status == verdict.Fail || c.Status == verdict.Warn {
					t.Logf("note: %s %s: %s", c.Status, c.ID, c.Summary)
				}
			}
		})
	}
}

// For a broker or iotdb whose process is not seen (nothing named, nothing
// listening), fd.soft, fd.hard and fd.raise agree: none passes or fails on
// a login shell's limits, each warns and says how to name the target;
// only a ceiling the host itself sets (CAP_SYS_RESOURCE outside the
// bounding set, below need even at PID 1's hard limit) fails fd.raise.
func TestUnseenServerFDChecksAgree(t *testing.T) {
	cases := []struct {
		sockets  int
		noRaise  bool
		want     map[string]verdict.Status
		mentions string
	}{
		{5000, true, map[string]verdict.Status{"fd.soft": verdict.Warn, "fd.hard": verdict.Warn, "fd.raise": verdict.Warn}, "--pid"},
		{30000, true, map[string]verdict.Status{"fd.soft": verdict.Warn, "fd.hard": verdict.Warn, "fd.raise": verdict.Warn}, "--pid"},
		{30000, false, map[string]verdict.Status{"fd.soft": verdict.Warn, "fd.hard": verdict.Warn, "fd.raise": verdict.Warn}, "--pid"},
		{1000000, false, map[string]verdict.Status{"fd.soft": verdict.Warn, "fd.hard": verdict.Warn, "fd.raise": verdict.Warn}, "--pid"},
		{1000000, true, map[string]verdict.Status{"fd.soft": verdict.Warn, "fd.hard": verdict.Warn, "fd.raise": verdict.Fail}, "CAP_SYS_RESOURCE"},
	}
	for _, role := range []facts.Role{facts.Broker, facts.IoTDB} {
		for _, c := range cases {
			f := host(t, ``)
			f.Target = facts.ProcessFacts{ManagedBy: "shell", NofileSoft: 20000, NofileHard: 20000, Assumed: true, NoRaiseBound: c.noRaise,
				Source: "inherited from the parent shell"}
			f.Pid1Nofile = &profiles.Limit{Soft: 32768, Hard: 32768}
			tg := facts.Target{Sockets: c.sockets, Role: role}
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			checks := Evaluate(f, tg)
			for id, want := range c.want {
				got := testenv.CheckByID(t, checks, id)
				mention := "--pid" // a warning says how to name the target
				if want == verdict.Fail {
					mention = c.mentions
				}
				if got.Status != want || !strings.Contains(message(got), mention) {
					t.Errorf("%s %d sockets (CapBnd without CAP_SYS_RESOURCE %v): %s %s, want %s mentioning %q: %s", role, c.sockets, c.noRaise, id, got.Status, want, mention, message(got))
				}
			}
		}
	}
}

// A running ConfigNode is judged by its own -Xmx and MaxDirectMemorySize,
// not by what confignode-env.sh would compute.
func TestIoTDBMemoryRunningConfigNode(t *testing.T) {
	f := host(t, ``)
	f.MemTotal = 24 << 30
	f.TargetJVM = &facts.JVMFlags{Heap: 1 << 30, Direct: 512 << 20, Source: "/proc/2/cmdline"}
	f.IoTDB = &facts.IoTDBConfig{ConfigNode: &facts.JVMMemory{Script: "conf/confignode-env.sh"}}
	f.ConfigNodeJVM = &facts.JVMFlags{Heap: 512 << 20, Direct: 256 << 20, Source: "/proc/1/cmdline"}
	tg := facts.Target{Sockets: 10, Role: facts.IoTDB}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	c := testenv.CheckByID(t, Evaluate(f, tg), "iotdb.memory")
	if !strings.Contains(c.Observed, "running ConfigNode heap 512 MiB (-Xmx) + direct 256 MiB (/proc/1/cmdline)") || strings.Contains(c.Observed, "confignode-env.sh") ||
		!strings.Contains(c.Summary, "2304 MiB") {
		t.Errorf("iotdb.memory: %+v", c)
	}
}

// --active measures in a child that takes the target's limits; when it
// cannot (hostprep's own hard nofile is lower and raising it needs
// CAP_SYS_RESOURCE), running out of fds there is hostprep's ceiling, not
// the target's: a WARN that says so, not a FAIL blaming the target.
func TestActiveCappedByHostprepIsNotTheTargets(t *testing.T) {
	m := &facts.ActiveResult{RequestedSockets: 32768, ReachedSockets: 19980, Connections: 9990, NofileSoft: 20000, NofileHard: 20000,
		FirstError: "EMFILE", FirstErrorOp: "accept", FirstErrorMessage: "too many open files"}
	target := facts.Target{Sockets: 25000, Role: facts.Broker}
	if c := checkActive(&facts.Facts{Measured: m}, target); c.Status != verdict.Fail {
		t.Errorf("at the target's own limits, EMFILE: %s %q, want FAIL", c.Status, c.Summary)
	}
	// 19980 sockets = 9990 connections: no half-open ends to explain.
	if c := checkActive(&facts.Facts{Measured: m}, target); strings.Contains(c.Observed, "not accepted yet") {
		t.Errorf("observed %q", c.Observed)
	}
	m.ReachedSockets = 20003 // 23 client ends whose accept the EMFILE stopped
	if c := checkActive(&facts.Facts{Measured: m}, target); !strings.Contains(c.Observed, "9990 loopback connections (client and accepted side both in the measuring process, 2 fds per connection) and 23 sockets whose other end was not accepted yet") {
		t.Errorf("observed %q does not account for every socket", c.Observed)
	}
	m.LimitNote = "could not take the target's nofile 32768:32768 (operation not permitted: raising the hard limit needs CAP_SYS_RESOURCE); measured at 20000:20000"
	c := checkActive(&facts.Facts{Measured: m}, target)
	if c.Status != verdict.Warn || !strings.Contains(c.Summary, "hostprep's ceiling, not the target's") {
		t.Errorf("capped by hostprep's own limit: %s %q, want WARN saying so", c.Status, c.Summary)
	}
}

// prlimit raising another process's hard limit needs the caller's
// CAP_SYS_RESOURCE (do_prlimit in kernel/sys.c): where the bounding set
// lacks it, the remedy never offers `prlimit --pid` above the hard limit
// (it fails with EPERM); within the hard limit it still does.
func TestNoPrlimitAboveTheHardLimitWithoutTheCapability(t *testing.T) {
	f := &facts.Facts{Target: facts.ProcessFacts{ManagedBy: "shell", PID: 1234, NofileSoft: 1024, NofileHard: 32768, CapSysResource: true, NoRaiseBound: true}}
	if r := softRemedy(f, facts.Target{}, 101000); strings.Contains(r, "prlimit --pid") {
		t.Errorf("remedy above the hard limit offers prlimit: %s", r)
	}
	if r := softRemedy(f, facts.Target{}, 20000); !strings.Contains(r, "prlimit --pid 1234 --nofile=20000:32768") {
		t.Errorf("remedy within the hard limit lacks the prlimit that works: %s", r)
	}
}

// Where no process can raise its own hard limit (CAP_SYS_RESOURCE not in
// the bounding set), a process started again from the shell hostprep ran
// in gets that shell's hard limit: when it covers the target, fd.hard and
// fd.raise say so (prlimit --nofile=N:N CMD from there works) instead of
// sending the user to PID 1.
func TestHardRemediesUseTheShellsLimit(t *testing.T) {
	f := &facts.Facts{Target: facts.ProcessFacts{ManagedBy: "shell", PID: 4242, NofileSoft: 1024, NofileHard: 4096, NoRaiseBound: true, Source: "/proc/4242/limits"},
		HereNofileHard: 20000, Pid1Nofile: &profiles.Limit{Soft: 32768, Hard: 32768}}
	target := facts.Target{Sockets: 10000, Role: facts.Loadgen}
	for _, c := range []verdict.Check{checkFDHard(f, target), checkFDRaise(f, target)} {
		if c.Status != verdict.Fail || !strings.Contains(c.Remedy, "prlimit --nofile=10100:10100 CMD") || strings.Contains(c.Remedy, "PID 1") {
			t.Errorf("%s: %s, remedy %q; want a restart from this shell", c.ID, c.Status, c.Remedy)
		}
	}
	f.HereNofileHard = 4096
	for _, c := range []verdict.Check{checkFDHard(f, target), checkFDRaise(f, target)} {
		if strings.Contains(c.Remedy, "service of PID 1") || !strings.Contains(c.Remedy, "32768") {
			t.Errorf("%s remedy %q: want PID 1's 32768 without calling it a service manager", c.ID, c.Remedy)
		}
	}
}

// With the embedded broker the process that holds the sockets is
// hostprep itself: where only PID 1 has the hard limit it needs, fd.hard
// and fd.raise say how to start hostprep from PID 1's side, not what "a
// process PID 1 starts" could get.
func TestHardRemediesForHostprepItself(t *testing.T) {
	f := &facts.Facts{Target: facts.ProcessFacts{Self: true, ManagedBy: "shell", PID: 4242, NofileSoft: 20000, NofileHard: 20000, NoRaiseBound: true, Source: "/proc/self/limits"},
		HereNofileHard: 20000, Pid1Nofile: &profiles.Limit{Soft: 1048576, Hard: 1048576}}
	target := facts.Target{Sockets: 100000, Role: facts.Broker}
	for _, running := range []bool{false, true} {
		f.Systemd.Running = running
		want := "--ulimit nofile=101000:101000"
		if running {
			want = "systemd-run --wait --pty -p LimitNOFILE=101000:101000 hostprep"
		}
		for _, c := range []verdict.Check{checkFDHard(f, target), checkFDRaise(f, target)} {
			if c.Status != verdict.Fail || !strings.Contains(c.Remedy, "hostprep itself holds the sockets") || !strings.Contains(c.Remedy, want) ||
				strings.Contains(c.Remedy, "a process PID 1 starts") {
				t.Errorf("systemd running %v: %s %s, remedy %q; want how to start hostprep (%q)", running, c.ID, c.Status, c.Remedy, want)
			}
		}
	}
}

// A target that holds CAP_SYS_RESOURCE itself (PID 1 here: CapEff has it
// though the bounding set no longer does) can raise its own hard limit,
// as fd.raise says: fd.hard does not call the limit out of reach, and
// fd.soft does not send the user to tune and a new login, which the
// bounding set keeps below the target.
func TestRemediesForATargetThatHoldsTheCapability(t *testing.T) {
	f := &facts.Facts{Target: facts.ProcessFacts{ManagedBy: "shell", PID: 1, NofileSoft: 32768, NofileHard: 32768, CapSysResource: true, NoRaiseBound: true, Source: "/proc/1/limits"},
		HereNofileHard: 20000, Pid1Nofile: &profiles.Limit{Soft: 32768, Hard: 32768}}
	target := facts.Target{Sockets: 50000, Role: facts.Broker}
	if c := checkFDRaise(f, target); c.Status != verdict.Pass {
		t.Fatalf("fd.raise %s: %s", c.Status, c.Summary)
	}
	hard := checkFDHard(f, target)
	if strings.Contains(hard.Remedy, "no process on this host can get it") || !strings.Contains(hard.Remedy, "have pid 1 set 50500:50500 itself") {
		t.Errorf("fd.hard remedy contradicts fd.raise: %s", hard.Remedy)
	}
	soft := checkFDSoft(f, target)
	if strings.Contains(soft.Remedy, "new login") || strings.Contains(soft.Remedy, "prlimit --pid") || !strings.Contains(soft.Remedy, "have pid 1 raise its own limit to 50500:50500") {
		t.Errorf("fd.soft remedy: %s", soft.Remedy)
	}
}
