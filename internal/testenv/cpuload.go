package testenv

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"
)

// LoadCPUs keeps every CPU of this host busy with 2 x NumCPU busy shell
// loops, in processes of their own (the host's other work, as a probe
// sees it), for at most d; they are ended when the test ends. A kernel
// without PSI (/proc/pressure/cpu) skips the test: the load could not be
// told from the probe's own.
func LoadCPUs(t testing.TB, d time.Duration) {
	t.Helper()
	if _, err := os.Stat("/proc/pressure/cpu"); err != nil {
		t.Skipf("no PSI on this kernel: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		cancel()
		for _, c := range cmds {
			_ = c.Wait()
		}
	})
	for range 2 * runtime.NumCPU() {
		c := exec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
}
