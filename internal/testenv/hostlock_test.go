package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// fatalTB records a Fatalf instead of ending the test, so a test can see
// that a helper refuses.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Fatalf(format string, args ...any) { f.fatal = fmt.Sprintf(format, args...) }

// The IoTDB lock is its own: an IoTDB test holds it while another
// process takes the global sysctl lock, and the other way round; a test
// that needs both takes the global one first, and LockGlobalSysctls
// refuses to be taken second.
func TestIoTDBLockApartFromGlobalSysctls(t *testing.T) {
	savedLock, savedIoTDB, savedLeft := GlobalSysctlsLockFile, IoTDBLockFile, LeftSysctlsFile
	dir := t.TempDir()
	GlobalSysctlsLockFile = filepath.Join(dir, "global.lock")
	IoTDBLockFile = filepath.Join(dir, "iotdb.lock")
	LeftSysctlsFile = filepath.Join(dir, "left-sysctls.json")
	t.Cleanup(func() { GlobalSysctlsLockFile, IoTDBLockFile, LeftSysctlsFile = savedLock, savedIoTDB, savedLeft })
	t.Setenv("HOSTPREP_TEST_IOTDB", "127.0.0.1:6667")

	t.Run("iotdb only", func(t *testing.T) {
		IoTDB(t)
		if tryLock(t, IoTDBLockFile) {
			t.Fatal("another process could take the IoTDB lock while an IoTDB test holds it")
		}
		if !tryLock(t, GlobalSysctlsLockFile) {
			t.Error("an IoTDB test holds the global sysctl lock: a tune test of another package would wait for it")
		}
		rec := &fatalTB{TB: t}
		LockGlobalSysctls(rec)
		if !strings.Contains(rec.fatal, "take the global sysctl lock first") {
			t.Errorf("LockGlobalSysctls after IoTDB: %q, want it refused", rec.fatal)
		}
		if !tryLock(t, GlobalSysctlsLockFile) {
			t.Error("a refused LockGlobalSysctls took the lock")
		}
	})
	t.Run("both in order", func(t *testing.T) {
		LockGlobalSysctls(t)
		IoTDB(t)
		if tryLock(t, GlobalSysctlsLockFile) || tryLock(t, IoTDBLockFile) {
			t.Error("a test holding both locks left one free")
		}
	})
	if !tryLock(t, GlobalSysctlsLockFile) || !tryLock(t, IoTDBLockFile) {
		t.Error("a lock is still held after the tests that took it ended")
	}
}
