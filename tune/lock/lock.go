// Package lock serializes hostprep runs that change the host (apply,
// rollback) with flock(2) on a lock file (/run/hostprep.lock).
package lock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultPath is the lock file on a host.
const DefaultPath = "/run/hostprep.lock"

// DefaultWait is how long a second run waits for the lock.
const DefaultWait = 5 * time.Second

// Lock is a held lock; Release frees it.
type Lock struct{ f *os.File }

// ErrHeld is returned (wrapped) when another process holds the lock after
// the wait.
var ErrHeld = errors.New("lock held")

// Acquire takes an exclusive flock on path, polling until wait has passed.
// It writes this process's pid into the file so a waiting run can name the
// holder. When the wait runs out the error wraps ErrHeld and names the
// holder's pid.
//
// When path is an existing directory (an image tree in --root mode) the
// directory itself is flocked: nothing is created or written in it, and
// the holder's pid is not known.
func Acquire(path string, wait time.Duration) (*Lock, error) {
	isDir := false
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		isDir = true
	}
	var f *os.File
	var err error
	if isDir {
		f, err = os.Open(path)
	} else {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	}
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			var b []byte
			if !isDir {
				b, _ = os.ReadFile(path)
			}
			f.Close()
			holder := strings.TrimSpace(string(b))
			if _, err := strconv.Atoi(holder); err != nil {
				holder = "unknown"
			}
			return nil, fmt.Errorf("%w: another hostprep apply/rollback holds %s (pid %s); waited %s", ErrHeld, path, holder, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if isDir {
		return &Lock{f: f}, nil
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lock{f: f}, nil
}

// Release unlocks and closes the lock file (the file itself stays).
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	err := l.f.Close()
	l.f = nil
	return err
}
