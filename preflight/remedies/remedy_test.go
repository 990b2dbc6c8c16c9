package remedies

import (
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// TestRemedyChangingNothingIsWithheld guards that a remedy whose changes
// leave the facts as they are is not printed.
func TestRemedyChangingNothingIsWithheld(t *testing.T) {
	f := host(t, `sysctl: {net.ipv4.tcp_max_tw_buckets: "4096"}`)
	tg := facts.Target{Sockets: 1000, Role: facts.Broker, ConnRate: 1000}
	before := checks.Evaluate(f, tg)
	p := prove(f, tg, before, "tcp.tw_buckets", []Change{SetSysctl{Key: "net.ipv4.tcp_max_tw_buckets", Value: "4096"}})
	if !strings.Contains(p.Withheld, "changes nothing") {
		t.Fatalf("proof %+v, want withheld: changes nothing", p)
	}
}

// TestRemedyBreakingNrOpenIsWithheld guards that a remedy lowering
// fs.nr_open below a hard nofile limits.conf gives root (the tune case
// nr-open-below-configured-hard-nofile, seen from preflight) is not
// printed, and names the line it would break.
func TestRemedyBreakingNrOpenIsWithheld(t *testing.T) {
	f := host(t, `
sysctl: {fs.nr_open: "1048576"}
files:
  /etc/security/limits.conf: "root        hard nofile 1048576\nroot       soft nofile 1048576\n"
`)
	tg := facts.Target{Sockets: 1000, Role: facts.Broker}
	before := checks.Evaluate(f, tg)
	if c := testenv.CheckByID(t, before, "fd.nr_open_hard"); c.Status != verdict.Pass {
		t.Fatalf("fd.nr_open_hard %s before, want pass: %s", c.Status, message(c))
	}
	p := prove(f, tg, before, "fd.nr_open", []Change{SetSysctl{Key: "fs.nr_open", Value: "1000000"}})
	if !strings.Contains(p.Withheld, "fd.nr_open_hard") || !strings.Contains(p.Withheld, "/etc/security/limits.conf:1") {
		t.Fatalf("proof %+v, want withheld naming fd.nr_open_hard and /etc/security/limits.conf:1", p)
	}
}

// TestNrOpenCoversConfiguredHardNofile guards the fd.nr_open_hard
// invariant: fs.nr_open, live and at boot, against limits.conf (root's
// lines included), a unit's LimitNOFILE and PID 1's limit.
func TestNrOpenCoversConfiguredHardNofile(t *testing.T) {
	cases := []struct {
		name, host string
		status     verdict.Status
		mentions   []string
	}{
		{"stock host", ``, verdict.Pass, nil},
		{"root line above nr_open", `
sysctl: {fs.nr_open: "1000000"}
files: {/etc/security/limits.conf: "root        hard nofile 1048576\n"}`, verdict.Fail,
			[]string{"root hard nofile 1048576 (/etc/security/limits.conf:1)", "fs.nr_open=1048576"}},
		{"unit LimitNOFILE above nr_open at boot", `
sysctl: {fs.nr_open: "2097152"}
files: {/etc/systemd/system/emqx.service.d/60-hostprep.conf: "[Service]\nLimitNOFILE=2000000\n"}`, verdict.Fail,
			[]string{"at boot", "emqx.service hard nofile 2000000 (/etc/systemd/system/emqx.service.d/60-hostprep.conf:2)"}},
		{"boot file keeps it", `
sysctl: {fs.nr_open: "2097152"}
files:
  /etc/systemd/system/emqx.service.d/60-hostprep.conf: "[Service]\nLimitNOFILE=2000000\n"
  /etc/sysctl.d/60-hostprep.conf: "fs.nr_open = 2097152\n"`, verdict.Pass, nil},
		{"PID 1 above nr_open", `
sysctl: {fs.nr_open: "524288"}
pid1_nofile: {soft: 1024, hard: 1048576}`, verdict.Fail, []string{"PID 1 hard nofile 1048576 (/proc/1/limits)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := checks.CheckNrOpenHard(host(t, c.host), facts.Target{Sockets: 10, Role: facts.Broker})
			if r.Status != c.status {
				t.Fatalf("status %s, want %s: %s", r.Status, c.status, message(r))
			}
			for _, m := range c.mentions {
				if !strings.Contains(message(r), m) {
					t.Errorf("lacks %q: %s", m, message(r))
				}
			}
		})
	}
}

// TestSourceAddressRemedyCountsOneFamily guards that the "N source
// addresses" remedy of ports.ephemeral, on a host with an IPv4 and an
// IPv6 global address, binds N addresses of the destinations' family:
// its proof passes the check, as the remedy promises.
func TestSourceAddressRemedyCountsOneFamily(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dests []string
	}{
		{"IPv4", nil},
		{"IPv6", []string{"[2001:db8::1]:1883"}},
	} {
		f := host(t, `sysctl: {net.ipv4.ip_local_port_range: "32768 60999"}`)
		f.SourceAddresses = []string{"192.0.2.2", "fd00::2"}
		tg := facts.Target{Sockets: 100000, Role: facts.Loadgen, ConnRate: 100, Destinations: tc.dests}
		cs := checks.Evaluate(f, tg)
		var proof *Proof
		for _, p := range ProveRemedies(f, tg, cs) {
			if p.Check == "ports.ephemeral" {
				proof = &p
			}
		}
		if proof == nil || proof.Withheld != "" || proof.StillNeeded != "" || !slices.Contains(proof.Passes, "ports.ephemeral") {
			t.Errorf("%s: ports.ephemeral proof %+v, want one that passes the check", tc.name, proof)
		}
	}
}
