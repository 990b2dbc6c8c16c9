package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// GlobalSysctlsLockFile is the lock every test that may change a sysctl a
// network namespace does not isolate (fs.nr_open, fs.file-max, vm.*)
// holds while it runs. It is one path for the whole host, not under
// TMPDIR, so test binaries of different packages — run side by side by
// `go test -p N`, or by two checkouts on one machine — take turns on
// those keys while everything else runs in parallel.
var GlobalSysctlsLockFile = "/run/lock/hostprep-test-global-sysctls.lock"

// hostLock is this process's hold on GlobalSysctlsLockFile: flock(2) is
// per open file, so a second open in one process would wait for itself.
// Tests of one package that nest (a helper's guard inside a test's)
// share the one hold, counted.
var hostLock struct {
	sync.Mutex
	n int
	f *os.File
}

// LockGlobalSysctls waits for GlobalSysctlsLockFile and holds it until
// the test ends. Call it first in a test that changes, or judges, a
// global sysctl: a tune apply of a profile with fs.* or vm.* keys, a
// ready run in the Sandbox. GuardSysctls calls it.
func LockGlobalSysctls(t testing.TB) {
	t.Helper()
	hostLock.Lock()
	defer hostLock.Unlock()
	if hostLock.n == 0 {
		if err := os.MkdirAll(filepath.Dir(GlobalSysctlsLockFile), 0o755); err != nil {
			t.Fatalf("global sysctl lock: %v", err)
		}
		f, err := os.OpenFile(GlobalSysctlsLockFile, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatalf("global sysctl lock: %v", err)
		}
		for {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
			if err != unix.EINTR {
				break
			}
		}
		if err != nil {
			f.Close()
			t.Fatalf("global sysctl lock %s: %v", GlobalSysctlsLockFile, err)
		}
		hostLock.f = f
	}
	hostLock.n++
	t.Cleanup(func() {
		hostLock.Lock()
		defer hostLock.Unlock()
		if hostLock.n--; hostLock.n == 0 {
			hostLock.f.Close() // closing the last descriptor releases the flock
			hostLock.f = nil
		}
	})
}
