package preflight

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/verdict"
)

// portOwnerHost is a recorded host whose emqx.service is named while
// another process holds port 1883.
func portOwnerHost(t *testing.T, target string) *facts.Facts {
	t.Helper()
	return host(t, `
systemd: {running: true}
target_process: `+target+`
listeners: [{port: 1883, backlog: 1024, process: beam.smp, pid: 4242, nofile_soft: 1024, nofile_hard: 1024, started_by: login shell}]
`)
}

// TestPortOwnerOutsideRunningUnit guards that a unit which runs, while
// another process owns the target's port, is not judged on its own
// limits: the verdict is on the port's owner, and the output says the unit
// runs as another pid.
func TestPortOwnerOutsideRunningUnit(t *testing.T) {
	f := portOwnerHost(t, `{unit: emqx.service, managed_by: systemd, active: true, main_pid: 17, nofile_soft: 1048576, nofile_hard: 1048576}`)
	rep, err := Run(t.Context(), Options{Target: facts.Target{Sockets: 1000, Role: facts.Broker}, Facts: f})
	if err != nil {
		t.Fatal(err)
	}
	c := resultByID(t, rep.Checks, "fd.soft")
	if c.Status != verdict.Fail {
		t.Fatalf("fd.soft %s, want fail: %s", c.Status, message(c))
	}
	for _, w := range []string{"pid 4242, not emqx.service's: the unit runs as pid 17", "port 1883 is held by pid 4242 (beam.smp)", "systemctl restart emqx"} {
		if !strings.Contains(message(c), w) {
			t.Errorf("fd.soft lacks %q: %s", w, message(c))
		}
	}
	if rep.TargetProcess.PID != 4242 {
		t.Errorf("target pid %d, want the port's owner 4242", rep.TargetProcess.PID)
	}
}

// TestPortOwnerInsideUnit guards that a port held by the unit's own
// process (its cgroup) is judged on the unit as before.
func TestPortOwnerInsideUnit(t *testing.T) {
	f := host(t, `
systemd: {running: true}
target_process: {unit: emqx.service, managed_by: systemd, active: true, main_pid: 17, nofile_soft: 1048576, nofile_hard: 1048576}
listeners: [{port: 1883, backlog: 1024, process: beam.smp, pid: 4242, nofile_soft: 1024, nofile_hard: 1024, started_by: emqx.service}]
`)
	rep, err := Run(t.Context(), Options{Target: facts.Target{Sockets: 1000, Role: facts.Broker}, Facts: f})
	if err != nil {
		t.Fatal(err)
	}
	if c := resultByID(t, rep.Checks, "fd.soft"); c.Status != verdict.Pass || rep.TargetProcess.Apart != nil {
		t.Fatalf("fd.soft %s (apart %v), want pass on the unit's own process: %s", c.Status, rep.TargetProcess.Apart, message(c))
	}
}

// resultByID returns the check with id from cs.
func resultByID(t *testing.T, cs []verdict.Check, id string) verdict.Check {
	t.Helper()
	for _, c := range cs {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s", id)
	return verdict.Check{}
}
