package profiles

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// loadWithin runs Load and panics if it does not return in d: without the
// size limit, Load("/dev/zero") reads until memory runs out, and a FIFO
// blocks the open forever.
func loadWithin(t *testing.T, d time.Duration, ref string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := Load(ref, nil)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		panic(fmt.Sprintf("Load(%q) did not return within %s", ref, d))
	}
}

// TestInputLimits: what is not a regular file is refused naming the path,
// files above 1 MiB and profiles above 10000 sysctl keys are refused
// saying the limit; each in bounded time (the tester's /dev/zero read
// 2.5 GB in 5 s).
func TestInputLimits(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := writeFile(t, dir, "big.yaml", "description: x\n"+strings.Repeat("# padding\n", MaxFileBytes/10+1))
	incZero := writeFile(t, dir, "inczero.yaml", "include: [/dev/zero]\n")
	incBig := writeFile(t, dir, "incbig.yaml", "include: [big.yaml]\n")
	var keys strings.Builder
	keys.WriteString("sysctl:\n")
	for i := 0; i <= MaxSysctlKeys; i++ {
		fmt.Fprintf(&keys, "  net.core.k%d: \"1\"\n", i)
	}
	many := writeFile(t, dir, "many.yaml", keys.String())
	// Five files just under 1 MiB each: every one is allowed, together
	// they pass the 4 MiB a Load may read.
	var parts []string
	for i := range 5 {
		name := fmt.Sprintf("part%d.yaml", i)
		writeFile(t, dir, name, "description: x\n"+strings.Repeat("# padding\n", (MaxFileBytes-100)/10))
		parts = append(parts, name)
	}
	total := writeFile(t, dir, "total.yaml", "include: ["+strings.Join(parts, ", ")+"]\n")

	cases := []struct {
		ref  string
		want []string
	}{
		{"/dev/zero", []string{"profile /dev/zero:", "not a regular file (a character device)"}},
		{fifo, []string{fifo, "not a regular file (a named pipe)"}},
		{dir, []string{dir, "not a regular file (a folder)"}},
		{incZero, []string{"inczero.yaml:1:11:", `include "/dev/zero"`, "not a regular file"}},
		{big, []string{big, "larger than the 1 MiB limit"}},
		{incBig, []string{"incbig.yaml:1:11:", "larger than the 1 MiB limit"}},
		{many, []string{"many.yaml:2:3:", "10001 keys", "limit of 10000"}},
		{total, []string{"total.yaml:1:", "exceed 4 MiB together"}},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.ref), func(t *testing.T) {
			checkErr(t, loadWithin(t, 10*time.Second, tc.ref), tc.want)
		})
	}
	if _, err := Source("/dev/zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("Source(/dev/zero) = %v, want not a regular file", err)
	}
	if _, err := Parse("p.yaml", make([]byte, MaxFileBytes+1)); err == nil || !strings.Contains(err.Error(), "1 MiB limit") {
		t.Errorf("Parse of %d bytes = %v, want the 1 MiB limit", MaxFileBytes+1, err)
	}
}
