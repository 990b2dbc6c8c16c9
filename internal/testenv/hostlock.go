package testenv

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// GlobalSysctlsLockFile is the lock every test that may change a sysctl a
// network namespace does not isolate (fs.nr_open, fs.file-max, vm.*)
// holds while it runs. It is one path for the whole host, not under
// TMPDIR, so test binaries of different packages — run side by side by
// `go test -p N`, or by two checkouts on one machine — take turns on
// those keys while everything else runs in parallel.
var GlobalSysctlsLockFile = "/run/lock/hostprep-test-global-sysctls.lock"

// IoTDBLockFile is the lock every test that loads the one shared IoTDB
// DataNode holds while it runs (IoTDB takes it): one path for the whole
// host, like GlobalSysctlsLockFile, and a different one, so that an
// IoTDB test and a global-sysctl test of another package run at once.
var IoTDBLockFile = "/run/lock/hostprep-test-iotdb.lock"

// hostLock is this process's hold on one host-wide lock file: flock(2)
// is per open file, so a second open in one process would wait for
// itself. Tests of one package that nest (a helper's guard inside a
// test's) share the one hold, counted.
type hostLock struct {
	sync.Mutex
	path *string // the file, read when the first hold opens it
	n    int
	f    *os.File
}

var (
	globalLock = &hostLock{path: &GlobalSysctlsLockFile}
	iotdbLock  = &hostLock{path: &IoTDBLockFile}
)

// held reports whether this process holds l now.
func (l *hostLock) held() bool {
	l.Lock()
	defer l.Unlock()
	return l.n > 0
}

// take waits for l's file and holds it until t ends; what names the
// lock in a failure. A wait of a second or more is logged, so that a
// test's time in -v output can be told from its wait for another
// package's test.
func (l *hostLock) take(t testing.TB, what string) {
	t.Helper()
	l.Lock()
	defer l.Unlock()
	if l.n == 0 {
		path := *l.path
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("%s lock: %v", what, err)
		}
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatalf("%s lock: %v", what, err)
		}
		t0 := time.Now()
		for {
			err = unix.Flock(int(f.Fd()), unix.LOCK_EX)
			if err != unix.EINTR {
				break
			}
		}
		if w := time.Since(t0); w >= time.Second {
			t.Logf("waited %.1f s for the %s lock %s (a test of another package held it)", w.Seconds(), what, path)
		}
		if err != nil {
			f.Close()
			t.Fatalf("%s lock %s: %v", what, path, err)
		}
		l.f = f
	}
	l.n++
	t.Cleanup(func() {
		l.Lock()
		defer l.Unlock()
		if l.n--; l.n == 0 {
			l.f.Close() // closing the last descriptor releases the flock
			l.f = nil
		}
	})
}

// LockGlobalSysctls waits for GlobalSysctlsLockFile and holds it until
// the test ends. Call it first in a test that changes, or judges, a
// global sysctl: a tune apply of a profile with fs.* or vm.* keys, a
// ready run in the Sandbox. GuardSysctls calls it.
//
// A test that needs both host-wide locks takes this one first, then
// IoTDB: with every holder taking them in that order no two test
// binaries can each wait for the other's. Taking it while this process
// holds the IoTDB lock but not this one fails the test.
func LockGlobalSysctls(t testing.TB) {
	t.Helper()
	if iotdbLock.held() && !globalLock.held() {
		t.Fatalf("LockGlobalSysctls after testenv.IoTDB: take the global sysctl lock first (the host-wide locks are taken in one order, so two test binaries cannot wait for each other)")
		return
	}
	globalLock.take(t, "global sysctl")
}

// lockIoTDB waits for IoTDBLockFile and holds it until the test ends.
func lockIoTDB(t testing.TB) {
	t.Helper()
	iotdbLock.take(t, "IoTDB")
}
