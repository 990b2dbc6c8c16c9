package lock

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSecondAcquireWaitsThenNamesTheHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hostprep.lock")
	l, err := Acquire(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = Acquire(path, 200*time.Millisecond)
	if !errors.Is(err, ErrHeld) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("want ErrHeld naming pid %d, got %v", os.Getpid(), err)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Error("did not wait")
	}
	// Released while waiting: the waiter gets it.
	go func() { time.Sleep(100 * time.Millisecond); l.Release() }()
	l2, err := Acquire(path, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l2.Release()
}
