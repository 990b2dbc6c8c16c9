package tune_test

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestE2EPidAboveTheHardLimitIsRefusedUpFront is the tester's case: a
// sleep at nofile 1024:4096 and `apply --profile ready-small --pid PID`
// (nofile 16384) without CAP_SYS_RESOURCE: exit 3 before any change,
// naming the ceiling 4096; nothing written, the process untouched.
func TestE2EPidAboveTheHardLimitIsRefusedUpFront(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	out, e, c := n.Run("sh", "-c", "prlimit --nofile=1024:4096 sleep 60 >/dev/null 2>&1 & echo $!")
	if c != 0 {
		t.Fatal(e)
	}
	pid := strings.TrimSpace(out)
	t.Cleanup(func() { n.Run("kill", pid) })
	testenv.WaitFor(t, 5*time.Second, "sleep to run under nofile 1024:4096", func() bool {
		out, _, _ := n.Run("cat", "/proc/"+pid+"/limits")
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 5 && f[1] == "open" && f[3] == "1024" && f[4] == "4096" {
				return true
			}
		}
		return false
	})
	if hasCapSysResource(t) {
		t.Skip("this process has CAP_SYS_RESOURCE; the refusal needs a host without it")
	}
	somax := n.Sysctl("net.core.somaxconn")
	_, errOut, code := n.Hostprep("tune", "apply", "--profile", "ready-small", "--pid", pid)
	if code != 3 || !strings.Contains(errOut, "ceiling for this process is 4096") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("apply --pid above the hard limit: exit %d, want 3 naming the ceiling 4096\n%s", code, errOut)
	}
	if got := n.Sysctl("net.core.somaxconn"); got != somax {
		t.Errorf("somaxconn changed %s -> %s by a refused apply", somax, got)
	}
	for _, p := range []string{"/var/lib/hostprep/state.json", "/etc/security/limits.d/60-hostprep.conf", "/etc/sysctl.d/60-hostprep.conf"} {
		if _, _, c := n.Run("test", "-e", p); c == 0 {
			t.Errorf("%s written by a refused apply", p)
		}
	}
	lim, _, _ := n.Run("prlimit", "--nofile", "--pid", pid, "--noheadings", "--raw", "--output", "SOFT,HARD")
	if f := strings.Fields(lim); len(f) != 2 || f[0] != "1024" || f[1] != "4096" {
		t.Errorf("process limit now %q, want 1024 4096", lim)
	}
}

func hasCapSysResource(t *testing.T) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<24) != 0
		}
	}
	return false
}
