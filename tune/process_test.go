package tune

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// TestRaiseRunningProcess raises a real child's RLIMIT_NOFILE with
// prlimit. Without CAP_SYS_RESOURCE (as on the project's CI machine, hard
// limit 20000) raising the hard limit fails with EPERM: the result must say
// so, name the real ceiling, and still raise the soft limit up to it.
func TestRaiseRunningProcess(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	var cur unix.Rlimit
	must(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &cur))
	if cur.Cur > 1024 {
		// Start from a low soft limit so there is something to raise.
		must(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 1024, Max: cur.Max}, nil))
		cur.Cur = 1024
	}
	h := newHost(t, nil)
	want := cur.Max + 1000
	p := &profiles.Profile{Name: "proc", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: want, Hard: want}}}
	pl, err := PlanFor(p, Options{Env: h.env, PIDs: []int{pid}})
	if err != nil {
		t.Fatal(err)
	}
	var pc *Change
	for i := range pl.Changes {
		if pl.Changes[i].PID == pid {
			pc = &pl.Changes[i]
		}
	}
	if pc == nil || pc.Layer != Process || pc.From != fmtLimit(1024, cur.Max) || pc.To != fmtLimit(want, want) {
		t.Fatalf("process change %+v in %+v", pc, pl.Changes)
	}

	res, err := Apply(context.Background(), p, Options{Env: h.env, PIDs: []int{pid}})
	var now unix.Rlimit
	must(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &now))
	caps, _ := effectiveCaps()
	if hasCap(caps, capSysResource) {
		if err != nil || now.Max != want || now.Cur != want {
			t.Fatalf("with CAP_SYS_RESOURCE: err %v, limit %d:%d, want %d:%d", err, now.Cur, now.Max, want, want)
		}
		return
	}
	wantCode(t, err, exitcode.Environment, "EPERM", "CAP_SYS_RESOURCE", fmtLimit(want, want))
	if res == nil || len(res.Processes) != 1 {
		t.Fatalf("result %+v", res)
	}
	r := res.Processes[0]
	if !strings.Contains(r.Error, fmt.Sprintf("ceiling for this process is %d", cur.Max)) {
		t.Errorf("error does not name the ceiling %d: %s", cur.Max, r.Error)
	}
	if now.Max != cur.Max || now.Cur != cur.Max {
		t.Fatalf("limit now %d:%d, want soft raised to the ceiling %d:%d", now.Cur, now.Max, cur.Max, cur.Max)
	}
	if r.Now != fmtLimit(cur.Max, cur.Max) {
		t.Errorf("reported now %q", r.Now)
	}
	// The files were still applied; rollback removes them.
	if !res.Changed {
		t.Error("limits file not applied")
	}
	h.rollback()
}
