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
	// Released while a waiter waits: the waiter gets it, well before its
	// deadline.
	got := make(chan error, 1)
	go func() {
		l2, err := Acquire(path, 5*time.Second)
		if err == nil {
			l2.Release()
		}
		got <- err
	}()
	l.Release()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not get the released lock")
	}
}
