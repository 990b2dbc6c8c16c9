package testenv

import (
	"testing"
	"time"
)

// pollEvery is how often Eventually asks its condition again.
const pollEvery = 10 * time.Millisecond

// Eventually asks cond every 10 ms until it is true (returns true) or
// timeout has passed (returns false after asking one last time).
func Eventually(timeout time.Duration, cond func() bool) bool {
	end := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(end) {
			return cond()
		}
		time.Sleep(pollEvery)
	}
	return true
}

// WaitFor is Eventually that fails t ("waited 5s for WHAT") when cond
// did not become true within timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Eventually(timeout, cond) {
		t.Fatalf("waited %s for %s", timeout, what)
	}
}
