package checks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"
)

func TestGatherServiceFromFiles(t *testing.T) {
	// systemd running in the recorded tree (run/systemd/system exists):
	// the unit file and its drop-ins decide
	root := factstest.FixtureRoot(t, nil)
	f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "emqx"})
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
	root = factstest.FixtureRoot(t, map[string]string{"lib/systemd/system/mosquitto.service": "[Service]\nExecStart=/usr/sbin/mosquitto\n"})
	f, err = facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "mosquitto.service"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Target.NofileSoft != 4096 || f.Target.NofileHard != 65536 || !strings.Contains(f.Target.Source, "DefaultLimitNOFILE 4096:65536 (/etc/systemd/system.conf.d/10-nofile.conf:2)") {
		t.Errorf("default limit: %+v", f.Target)
	}
	// the classic trap, with the lines that set the login's limits
	tg := facts.Target{Sockets: 100000, Role: facts.Broker}
	_ = tg.Validate()
	login := `nofile 65536 ("root", /etc/security/limits.conf:4)`
	if os.Geteuid() != 0 {
		login = `soft 1048576 ("*", /etc/security/limits.conf:2)`
	}
	if c := testenv.CheckByID(t, Evaluate(f, tg), "fd.soft"); c.Status != verdict.Fail || !strings.Contains(c.Summary, login) ||
		!strings.Contains(c.Summary, "limits.conf does not apply to systemd services") {
		t.Errorf("fd.soft for a unit at the manager default: %s", message(c))
	}
}

// systemd not running (no /run/systemd/system, as on the build machine):
// no unit's LimitNOFILE applies; the limits are a login shell's, and the
// facts say so.
func TestGatherServiceWithoutSystemd(t *testing.T) {
	root := factstest.FixtureRoot(t, nil)
	if err := os.RemoveAll(filepath.Join(root, "run/systemd")); err != nil {
		t.Fatal(err)
	}
	f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "emqx"})
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
	cs := Evaluate(f, tg)
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
		if c := testenv.CheckByID(t, Evaluate(f, small), id); c.Status != verdict.Warn || !strings.Contains(c.Summary, "whatever starts emqx") || !strings.Contains(c.Remedy, "--pid") {
			t.Errorf("%s without systemd, enough for a shell: %s", id, message(c))
		}
	}
	if cp := CapacityOf(f, small); cp.Limits[0].Check != "fd.soft" || !cp.Limits[0].Assumed {
		t.Errorf("capacity without systemd: %+v, want the shell's soft nofile marked assumed", cp)
	}

	// --service of a unit with no unit file: exit 2 naming it
	_, err = facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "nosuch.service"})
	if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "--service nosuch.service: no such unit") || !strings.Contains(err.Error(), "systemd is not running") {
		t.Errorf("--service of a missing unit: %v", err)
	}

	// after `tune apply` in a sandbox: a drop-in for a unit that is not
	// installed. From a profile that is a failing finding, not a pass.
	if err := os.Remove(filepath.Join(root, "lib/systemd/system/emqx.service")); err != nil {
		t.Fatal(err)
	}
	if _, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "emqx"}); exitcode.Code(err) != exitcode.BadInput {
		t.Errorf("--service of a unit with only a drop-in: %v, want bad input", err)
	}
	f, err = facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "emqx", ServiceFromProfile: true})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Target.UnitMissing || f.Target.NofileHard == 2097152 {
		t.Errorf("profile unit with only a drop-in: %+v", f.Target)
	}
	tg = facts.Target{Sockets: 1000, Role: facts.Broker}
	_ = tg.Validate()
	cs = Evaluate(f, tg)
	if c := testenv.CheckByID(t, cs, "fd.soft"); c.Status != verdict.Fail || !strings.Contains(c.Summary, "emqx.service is not installed") {
		t.Errorf("fd.soft for a missing profile unit: %s", message(c))
	}
}
