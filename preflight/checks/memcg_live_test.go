package checks

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// liveMemCgroup makes a memory cgroup of limit bytes on this host (v1
// under /sys/fs/cgroup/memory, else v2 under /sys/fs/cgroup where the
// root gives its children the memory controller), starts a sleep in it
// and returns the sleep's PID and the cgroup's limit file as preflight
// names it; both go in t.Cleanup. It skips without root or without a
// memory controller, and when the cgroup cannot be made it fails under
// CI=true (root with a memory controller must be able to) and skips
// elsewhere.
func liveMemCgroup(t *testing.T, limit int64) (int, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a memory cgroup needs root; run the tests as root")
	}
	base, limitFile := "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
	if _, err := os.Stat(filepath.Join(base, limitFile)); err != nil {
		b, _ := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control")
		if !strings.Contains(" "+strings.TrimSpace(string(b))+" ", " memory ") {
			t.Skip("no memory controller here: neither cgroup v1's /sys/fs/cgroup/memory nor memory in cgroup v2's /sys/fs/cgroup/cgroup.subtree_control")
		}
		base, limitFile = "/sys/fs/cgroup", "memory.max"
	}
	broken := func(format string, a ...any) {
		t.Helper()
		if testenv.InCI() {
			t.Fatalf(format, a...)
		}
		t.Skipf(format, a...)
	}
	dir := filepath.Join(base, fmt.Sprintf("hostprep-test-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		broken("memory cgroup: %v", err)
	}
	t.Cleanup(func() {
		// the kernel lets the directory go once its last task has exited
		for i := 0; i < 50; i++ {
			if err := os.Remove(dir); err == nil || os.IsNotExist(err) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Errorf("could not remove the test's memory cgroup %s", dir)
	})
	if err := os.WriteFile(filepath.Join(dir, limitFile), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		broken("%s: %v", filepath.Join(dir, limitFile), err)
	}
	// the shell moves itself in, then becomes the sleep: the process is in
	// the cgroup before it runs
	cmd := exec.Command("sh", "-c", `echo $$ > "$1/cgroup.procs" && exec sleep 300`, "sh", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	want := strings.TrimPrefix(dir, base)
	for i := 0; ; i++ {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", cmd.Process.Pid))
		if strings.Contains(string(b), want+"\n") {
			break
		}
		if i == 100 {
			broken("pid %d did not enter %s: /proc/%d/cgroup is %q", cmd.Process.Pid, dir, cmd.Process.Pid, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cmd.Process.Pid, filepath.Join(dir, limitFile)
}

// TestLiveMemCgroup: a process in a memory cgroup of 10 MiB on this host
// is judged on that cgroup, not on the host's MemAvailable (field case:
// a broker in such a cgroup was OOM-killed after 4101 connections after
// passing mem.available for 8000), and a recording carries the cgroup's
// files, so its replay judges the same.
func TestLiveMemCgroup(t *testing.T) {
	const limit = 10 << 20
	pid, from := liveMemCgroup(t, limit)
	f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, PID: pid})
	if err != nil {
		t.Fatal(err)
	}
	m := f.Target.Memory
	if m.Limit != limit || m.From != from || m.Usage >= limit || len(m.Unseen) > 0 {
		t.Fatalf("memory cgroup of pid %d: %+v; want limit %d from %s", pid, m, limit, from)
	}
	tg := facts.Target{Sockets: 8000, Role: facts.Broker, ConnRate: 10}
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	if c := testenv.CheckByID(t, Evaluate(f, tg), "mem.available"); c.Status != verdict.Fail || !strings.Contains(c.Summary, from) {
		t.Errorf("mem.available %s: %s; want a failure naming %s", c.Status, c.Summary, from)
	}
	dir := filepath.Join(t.TempDir(), "host")
	r, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, PID: pid, Record: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, from)); err != nil {
		t.Errorf("the recording lacks the cgroup's limit file: %v", err)
	}
	if rm := r.Target.Memory; rm.Limit != limit || rm.From != from || len(rm.Unseen) > 0 {
		t.Errorf("replayed memory cgroup %+v; want limit %d from %s", rm, limit, from)
	}
}
