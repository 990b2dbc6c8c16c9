package testenv

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// tryLock reports whether another open file description could take the
// lock now (the view of another test binary).
func tryLock(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if err == unix.EWOULDBLOCK {
		return false
	}
	if err != nil {
		t.Fatal(err)
	}
	return true
}

// LockGlobalSysctls excludes every other process for as long as the test
// that took it runs, nested holds in one process share it (a second flock
// in one process would wait for itself), and it is free again once the
// outermost holder ends.
func TestLockGlobalSysctlsHeldForTheTest(t *testing.T) {
	// Both host-wide paths move into the test's own directory: with the
	// lock redirected, the real record in /tmp belongs to whichever other
	// test binary holds the real lock, and reading it mid-write failed.
	savedLock, savedLeft := GlobalSysctlsLockFile, LeftSysctlsFile
	dir := t.TempDir()
	GlobalSysctlsLockFile = filepath.Join(dir, "sub", "global.lock")
	LeftSysctlsFile = filepath.Join(dir, "left-sysctls.json")
	t.Cleanup(func() { GlobalSysctlsLockFile, LeftSysctlsFile = savedLock, savedLeft })

	t.Run("holder", func(t *testing.T) {
		LockGlobalSysctls(t)
		if tryLock(t, GlobalSysctlsLockFile) {
			t.Fatal("another process could take the lock while a test holds it")
		}
		t.Run("nested", func(t *testing.T) {
			LockGlobalSysctls(t) // returns at once: this process holds it
			GuardSysctls(t)      // takes it the same way
		})
		if tryLock(t, GlobalSysctlsLockFile) {
			t.Error("the lock was released when a nested holder ended")
		}
	})
	if !tryLock(t, GlobalSysctlsLockFile) {
		t.Error("the lock is still held after the test that took it ended")
	}
}
