package testenv

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hostprep/hostprep/internal/sysctlkey"
)

// LeftSysctlsFile is where GuardSysctls keeps, while a guarded test runs,
// the values it will put back. A test binary killed before its cleanups
// run (a -timeout panic, SIGKILL) leaves the file behind, and the next
// GuardSysctls, in any later test run, restores those values first.
var LeftSysctlsFile = filepath.Join(os.TempDir(), "hostprep-test-sysctls.json")

// guards counts the GuardSysctls of this process still running: only the
// first restores what a killed run left, only the last removes the file.
var guards struct {
	sync.Mutex
	n int
}

func sysctlPath(k string) string { return sysctlkey.File("/proc/sys", k) }

func readSysctl(t testing.TB, k string) string {
	t.Helper()
	b, err := os.ReadFile(sysctlPath(k))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// GuardSysctls records the global sysctl keys (fs.nr_open, fs.file-max:
// keys a network namespace does not isolate) and returns their values by
// key; should the test end with one changed (a failure before rollback
// restored it), it puts the value back and reports the test failed.
// Before it records them it restores what a killed earlier run left in
// LeftSysctlsFile, and it keeps its own record there until the test
// ends. It holds LockGlobalSysctls for the whole test, so no other test
// binary changes those keys meanwhile.
func GuardSysctls(t testing.TB, keys ...string) map[string]string {
	t.Helper()
	LockGlobalSysctls(t) // registered first: released after the restore below
	guards.Lock()
	defer guards.Unlock()
	if guards.n == 0 {
		restoreLeftSysctls(t)
	}
	orig := map[string]string{}
	for _, k := range keys {
		orig[k] = readSysctl(t, k)
	}
	if guards.n == 0 {
		if err := writeLeftSysctls(orig); err != nil {
			t.Fatalf("recording the sysctls to restore: %v", err)
		}
	}
	guards.n++
	t.Cleanup(func() {
		for k, v := range orig {
			if now := readSysctl(t, k); now != v {
				t.Errorf("safety net: %s was %s after the test, restoring %s", k, now, v)
				if err := os.WriteFile(sysctlPath(k), []byte(v), 0o644); err != nil {
					t.Errorf("safety net: restoring %s: %v", k, err)
				}
			}
		}
		guards.Lock()
		defer guards.Unlock()
		if guards.n--; guards.n == 0 {
			os.Remove(LeftSysctlsFile)
		}
	})
	return orig
}

// writeLeftSysctls records orig in LeftSysctlsFile by rename, so a reader
// (a later run restoring what a killed one left) sees the whole record
// or none of it, never a file cut short mid-write.
func writeLeftSysctls(orig map[string]string) error {
	b, err := json.Marshal(orig)
	if err != nil {
		return err
	}
	tmp := LeftSysctlsFile + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, LeftSysctlsFile)
}

// restoreLeftSysctls writes back the values a killed test run recorded in
// LeftSysctlsFile, logging each, and removes the file.
func restoreLeftSysctls(t testing.TB) {
	t.Helper()
	b, err := os.ReadFile(LeftSysctlsFile)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var left map[string]string
	if err == nil {
		err = json.Unmarshal(b, &left)
	}
	if err != nil {
		t.Fatalf("%s (left by a killed test run): %v; restore its sysctls by hand and remove it", LeftSysctlsFile, err)
	}
	for k, v := range left {
		if now := readSysctl(t, k); now != v {
			t.Logf("%s: a killed test run left %s at %s; restoring %s", LeftSysctlsFile, k, now, v)
			if err := os.WriteFile(sysctlPath(k), []byte(v), 0o644); err != nil {
				t.Fatalf("restoring %s: %v", k, err)
			}
		}
	}
	os.Remove(LeftSysctlsFile)
}
