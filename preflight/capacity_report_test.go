package preflight

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"
)

// A conntrack file that exists but cannot be read is "not known", never
// 0 (a false PASS) nor "not loaded". Running as root here, a directory in
// its place stands for the EACCES a non-root user gets: any error but
// ENOENT.
func TestConntrackUnreadable(t *testing.T) {
	for _, c := range []struct {
		name, file string
	}{
		{"count unreadable", "nf_conntrack_count"},
		{"max unreadable", "nf_conntrack_max"},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := factstest.FixtureRoot(t, nil)
			p := filepath.Join(root, "proc/sys/net/netfilter", c.file)
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := Gather(t.Context(), GatherOptions{Root: root, PID: 4242})
			if err != nil {
				t.Fatal(err)
			}
			if !f.Conntrack.Loaded || !f.Conntrack.Unknown(c.file) {
				t.Fatalf("conntrack %+v: want loaded with %s unknown", f.Conntrack, c.file)
			}
			tg := facts.Target{Sockets: 1000, Role: facts.Broker}
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			got := testenv.CheckByID(t, checks.Evaluate(f, tg), "conntrack")
			if got.Status != verdict.Warn || !strings.Contains(got.Summary, c.file) || !strings.Contains(got.Remedy, "root") {
				t.Errorf("conntrack %s: %s", got.Status, message(got))
			}
			if _, ok := checks.CapacityOf(f, tg).Limit("conntrack"); ok {
				t.Errorf("an unknown conntrack table gave a capacity limit")
			}
		})
	}
	// the same, recorded
	got := evalOn(t, `conntrack: {loaded: true, max: 65536, unreadable: ["nf_conntrack_count: permission denied"]}`, facts.Target{Sockets: 10, Role: facts.Broker}, "conntrack")
	if got.Status != verdict.Warn {
		t.Errorf("recorded unreadable count: %s: %s", got.Status, message(got))
	}
}

// Capacity is the smallest of every ceiling checked — fs.nr_open
// included — and a ceiling that could not be read is named, not dropped.
func TestCapacityEveryCeiling(t *testing.T) {
	f := host(t, `sysctl: {fs.nr_open: "100000"}
mem_available_bytes: 17179869184
target_process: {managed_by: shell, pid: 77, nofile_soft: 1048576, nofile_hard: 1048576}`)
	tg := facts.Target{Sockets: 500000, Role: facts.Broker}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := testenv.CheckByID(t, checks.Evaluate(f, tg), "fd.nr_open"); c.Status != verdict.Fail {
		t.Fatalf("fd.nr_open %s", c.Status)
	}
	capa := checks.CapacityOf(f, tg)
	if capa.LimitedBy != "fd.nr_open" || capa.Sockets != checks.UsableFDs(100000) {
		t.Errorf("capacity %d limited by %s, want %d by fd.nr_open", capa.Sockets, capa.LimitedBy, checks.UsableFDs(100000))
	}

	// meminfo, fs.file-max and the port range unreadable (absent from a
	// recorded root): named as unknown, and the header says RAM is not known
	root := factstest.FixtureRoot(t, nil)
	for _, p := range []string{"proc/meminfo", "proc/sys/fs/file-max", "proc/sys/fs/file-nr", "proc/sys/net/ipv4/ip_local_port_range"} {
		if err := os.Remove(filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := Gather(t.Context(), GatherOptions{Root: root, PID: 4242})
	if err != nil {
		t.Fatal(err)
	}
	tg = facts.Target{Sockets: 1000, Role: facts.Loadgen}
	rep, err := Run(t.Context(), Options{Target: tg, Facts: g})
	if err != nil {
		t.Fatal(err)
	}
	var unknown []string
	for _, u := range rep.Capacity.Unknown {
		unknown = append(unknown, u.Check)
	}
	sort.Strings(unknown)
	if got := strings.Join(unknown, ","); got != "fd.file_max,mem.available,ports.ephemeral" {
		t.Errorf("unknown ceilings %q, want fd.file_max,mem.available,ports.ephemeral", got)
	}
	var b strings.Builder
	if err := WriteText(&b, rep, false); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "0.0 GiB") || !strings.Contains(b.String(), "mem.available") {
		t.Errorf("text report:\n%s", b.String())
	}
}

// Run as non-root, a listener on the broker's port shows with its owner
// unknown: fd.soft, fd.hard and fd.raise say a listener exists whose owner
// is not visible and name the fix (root, --pid), not "none listens"; the
// capacity's fd.soft ceiling is marked assumed (a login shell's limit).
func TestListenerOwnerNotVisible(t *testing.T) {
	f := host(t, `listeners: [{port: 1883, backlog: 4096}]
mem_available_bytes: 17179869184`)
	tg := facts.Target{Sockets: 500, Role: facts.Broker}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	cs := checks.Evaluate(f, tg)
	for _, id := range []string{"fd.soft", "fd.hard", "fd.raise"} {
		got := testenv.CheckByID(t, cs, id)
		if got.Status != verdict.Warn || strings.Contains(got.Summary, "none listens") || !strings.Contains(got.Remedy, "root") || !strings.Contains(got.Remedy, "--pid") {
			t.Errorf("%s %s: %s", id, got.Status, message(got))
		}
	}
	capa := checks.CapacityOf(f, tg)
	l, ok := capa.Limit("fd.soft")
	if !ok || !l.Assumed {
		t.Errorf("fd.soft ceiling %+v: want assumed", l)
	}
	if capa.LimitedBy == "fd.soft" && !strings.Contains(capacityLine(capa), "not known") {
		t.Errorf("capacity line takes a login shell's limit as the service's: %s", capacityLine(capa))
	}
	// with nothing on the port it still says none listens
	f = host(t, ``)
	if got := testenv.CheckByID(t, checks.Evaluate(f, tg), "fd.soft"); !strings.Contains(got.Summary, "none listens") {
		t.Errorf("no listener: %s", message(got))
	}
}

// evalOn loads a recorded host, validates the target and returns the
// check id's result.
func evalOn(t *testing.T, hostYAML string, tg facts.Target, id string) verdict.Check {
	t.Helper()
	f := host(t, hostYAML)
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	return testenv.CheckByID(t, checks.Evaluate(f, tg), id)
}
