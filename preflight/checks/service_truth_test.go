package checks

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"
	"github.com/hostprep/hostprep/profiles"
)

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
		cs := Evaluate(f, tg)
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
	cs := OwnProcessChecks(2000, nil, 1024)
	if cs[0].ID != "fd.soft" || cs[0].Status != verdict.Fail || cs[1].ID != "ports.ephemeral" {
		t.Fatalf("2000 fds under nofile 1024: %+v", cs)
	}
	if cs := OwnProcessChecks(10, nil, 1024); cs[0].Status != verdict.Pass || cs[1].Status != verdict.Pass {
		t.Errorf("10 fds: %+v", cs)
	}
	// one source address can never hold more connections to one
	// destination than there are ports
	if cs := OwnProcessChecks(70000, []string{"127.0.0.1"}, 100000); cs[1].Status != verdict.Fail {
		t.Errorf("70000 connections from one address: %+v", cs[1])
	}
	if cs := OwnProcessChecks(70000, []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"}, 100000); cs[1].Status != verdict.Pass {
		t.Errorf("70000 connections from three addresses: %+v", cs[1])
	}
}

// OwnProcessFD is fd.soft, fd.hard and fd.raise on this process's facts,
// those of a process started from the same shell: with the limit given
// (1024) and a load above it, fd.raise judges whether the hard limit can
// be raised here, as preflight --role loadgen does for that shell.
func TestOwnProcessFD(t *testing.T) {
	cs := OwnProcessFD(2000, 1024)
	if len(cs) != 3 || cs[0].ID != "fd.soft" || cs[1].ID != "fd.hard" || cs[2].ID != "fd.raise" {
		t.Fatalf("want fd.soft, fd.hard, fd.raise: %+v", cs)
	}
	if cs[0].Status != verdict.Fail || cs[1].Status != verdict.Fail || cs[2].Status == verdict.Skip || cs[2].Remedy == "" && cs[2].Status == verdict.Fail {
		t.Errorf("2000 fds under nofile 1024: %+v", cs)
	}
	if cs := OwnProcessFD(10, 1024); cs[0].Status != verdict.Pass || cs[2].Status != verdict.Pass {
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
	if c := testenv.CheckByID(t, Evaluate(f, tg), "iotdb.memory"); c.Status != verdict.Fail {
		t.Errorf("18 GiB of JVM on 16 GiB RAM: %s %s", c.Status, message(c))
	}
	f.TargetJVM = &facts.JVMFlags{Heap: 4 << 30, Direct: 2 << 30}
	if c := testenv.CheckByID(t, Evaluate(f, tg), "iotdb.memory"); c.Status != verdict.Pass {
		t.Errorf("6 GiB of JVM on 16 GiB RAM: %s %s", c.Status, message(c))
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
	c := testenv.CheckByID(t, Evaluate(f, tg), "mem.tcp_mem")
	if c.Status != verdict.Warn || !strings.Contains(c.Summary, "above physical memory") {
		t.Errorf("%s: %s", c.Status, c.Summary)
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
	f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Service: "mosquitto", Role: facts.Broker, Ports: []int{port}})
	if err != nil {
		t.Fatal(err)
	}
	if tp := f.Target; tp.PID != cmd.Process.Pid || tp.NofileSoft != 1024 || tp.NofileHard != 4096 || !strings.Contains(tp.Source, "systemd is not running") {
		t.Fatalf("target %d %d:%d (%s), want the listener owner pid %d at 1024:4096", tp.PID, tp.NofileSoft, tp.NofileHard, tp.Source, cmd.Process.Pid)
	}
	r := Evaluate(f, facts.Target{Sockets: 3000, Role: facts.Broker, Service: "mosquitto.service", Ports: []int{port}})
	if c := testenv.CheckByID(t, r, "fd.soft"); c.Status != verdict.Fail {
		t.Errorf("fd.soft %s %q, want FAIL at soft 1024 for 3000 sockets", c.Status, c.Summary)
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
		f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "iotdb-datanode"})
		if err != nil {
			t.Fatal(err)
		}
		if tp := f.Target; tp.NofileHard != c.want || tp.NofileSoft != c.want {
			t.Errorf("%s: unit nofile %d:%d (%s), want %d", c.name, tp.NofileSoft, tp.NofileHard, tp.Source, c.want)
		}
		tg := facts.Target{Sockets: 40000, Role: facts.IoTDB, ConnRate: 10}
		_ = tg.Validate()
		if got, want := testenv.CheckByID(t, Evaluate(f, tg), "fd.soft").Status, map[bool]verdict.Status{true: verdict.Pass, false: verdict.Fail}[c.want == 65536]; got != want {
			t.Errorf("%s: fd.soft %s, want %s", c.name, got, want)
		}
	}
}
