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

// sleeper starts a child at RLIMIT_NOFILE 1024:its hard limit and returns
// its pid and that hard limit.
func sleeper(t *testing.T) (int, uint64) {
	pid, hard, _ := sleeperCmd(t)
	return pid, hard
}

func sleeperCmd(t *testing.T) (int, uint64, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	var cur unix.Rlimit
	must(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &cur))
	must(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 1024, Max: cur.Max}, nil))
	return pid, cur.Max, cmd
}

func nofileOf(t *testing.T, pid int) string {
	t.Helper()
	var now unix.Rlimit
	must(t, unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &now))
	return fmtLimit(now.Cur, now.Max)
}

// TestRaiseRunningProcess raises a real child's RLIMIT_NOFILE with
// prlimit. Without CAP_SYS_RESOURCE (as on the project's CI machine, hard
// limit 20000) raising the hard limit is refused before anything changes
// (exit 3, nothing changed, the process untouched) naming the real
// ceiling; the plan warns about it.
func TestRaiseRunningProcess(t *testing.T) {
	pid, hard := sleeper(t)
	h := newHost(t, nil)
	want := hard + 1000
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
	if pc == nil || pc.Layer != Process || pc.From != fmtLimit(1024, hard) || pc.To != fmtLimit(want, want) {
		t.Fatalf("process change %+v in %+v", pc, pl.Changes)
	}

	before := h.snapshot()
	res, err := Apply(context.Background(), p, Options{Env: h.env, PIDs: []int{pid}})
	caps, _ := effectiveCaps()
	if hasCap(caps, capSysResource) {
		if err != nil || nofileOf(t, pid) != fmtLimit(want, want) {
			t.Fatalf("with CAP_SYS_RESOURCE: err %v, limit %s, want %d:%d", err, nofileOf(t, pid), want, want)
		}
		h.rollback()
		return
	}
	wantCode(t, err, exitcode.Environment, "CAP_SYS_RESOURCE", fmt.Sprintf("ceiling for this process is %d", hard), "nothing was changed")
	if res != nil {
		t.Errorf("refused apply returned a result %+v", res)
	}
	if got := nofileOf(t, pid); got != fmtLimit(1024, hard) {
		t.Errorf("refused apply changed the process's limit to %s", got)
	}
	h.assertUnchanged(before)
	if !strings.Contains(strings.Join(pl.Warnings, "\n"), "apply will refuse") {
		t.Errorf("plan does not warn: %v", pl.Warnings)
	}
}

// TestRaisedProcessIsJournaledAndRolledBack: a raise the kernel allows
// (soft up to the hard limit) is journaled with the pid's start time,
// status shows it, rollback lowers it back; a process that exited before
// rollback is only noted.
func TestRaisedProcessIsJournaledAndRolledBack(t *testing.T) {
	pid, hard := sleeper(t)
	h := newHost(t, nil)
	before := h.snapshot()
	p := &profiles.Profile{Name: "proc", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: hard, Hard: hard}}}
	res, err := Apply(context.Background(), p, Options{Env: h.env, PIDs: []int{pid}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Processes) != 1 || res.Processes[0].Now != fmtLimit(hard, hard) || nofileOf(t, pid) != fmtLimit(hard, hard) {
		t.Fatalf("processes %+v, live %s", res.Processes, nofileOf(t, pid))
	}
	s, err := StatusOf(h.env)
	must(t, err)
	var item *ItemStatus
	for i := range s.Items {
		if s.Items[i].PID == pid {
			item = &s.Items[i]
		}
	}
	if item == nil || !item.OK || item.Original != fmtLimit(1024, hard) || item.Live != fmtLimit(hard, hard) {
		t.Fatalf("status item for pid %d: %+v", pid, item)
	}
	r := h.rollback()
	if got := nofileOf(t, pid); got != fmtLimit(1024, hard) {
		t.Errorf("rollback left pid %d at %s, want 1024:%d", pid, got, hard)
	}
	var restored bool
	for _, c := range r.Changes {
		restored = restored || (c.PID == pid && c.To == fmtLimit(1024, hard))
	}
	if !restored {
		t.Errorf("rollback changes %+v", r.Changes)
	}
	h.assertUnchanged(before)

	// Exited before rollback: nothing to restore, a note, exit 0.
	pid2, _, cmd2 := sleeperCmd(t)
	if _, err := Apply(context.Background(), p, Options{Env: h.env, PIDs: []int{pid2}}); err != nil {
		t.Fatal(err)
	}
	must(t, cmd2.Process.Kill())
	cmd2.Wait()
	r = h.rollback()
	if !strings.Contains(strings.Join(r.Notes, "\n"), fmt.Sprintf("pid %d has exited", pid2)) {
		t.Errorf("rollback of an exited process: %+v", r)
	}
	h.assertUnchanged(before)
}

// TestPrlimitFailureMidRunUndoesEverything: the second of two processes
// refuses its prlimit after the up-front check passed (injected: ESRCH,
// as when it exits in between): the first process is lowered back, the
// files and journal are undone, exit 3.
func TestPrlimitFailureMidRunUndoesEverything(t *testing.T) {
	pid1, hard := sleeper(t)
	pid2, _ := sleeper(t)
	h := newHost(t, nil)
	before := h.snapshot()
	orig := setNofile
	t.Cleanup(func() { setNofile = orig })
	setNofile = func(pid int, l unix.Rlimit) error {
		if pid == pid2 {
			return unix.ESRCH
		}
		return orig(pid, l)
	}
	p := sysTune()
	p.Limits.Nofile = &profiles.Limit{Soft: hard, Hard: hard}
	res, err := Apply(context.Background(), p, Options{Env: h.env, PIDs: []int{pid1, pid2}})
	wantCode(t, err, exitcode.Environment, fmt.Sprintf("pid %d", pid2), "ESRCH", "every change made in this run was undone")
	if res != nil {
		t.Errorf("failed apply returned %+v", res)
	}
	for _, pid := range []int{pid1, pid2} {
		if got := nofileOf(t, pid); got != fmtLimit(1024, hard) {
			t.Errorf("pid %d left at %s, want 1024:%d", pid, got, hard)
		}
	}
	h.assertUnchanged(before)
}
