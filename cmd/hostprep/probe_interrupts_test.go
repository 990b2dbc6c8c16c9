package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"
)

// The first Ctrl-C ends the run's context, the second the clean-up's
// (again), so a probe waiting in its clean-up on a hung server stops at
// the second one.
func TestSecondInterruptEndsAgain(t *testing.T) {
	ctx, again, stop := interrupts(context.Background())
	defer stop()
	wait := func(c context.Context) bool {
		select {
		case <-c.Done():
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if !wait(ctx) || again.Err() != nil {
		t.Fatalf("after one interrupt: run %v, clean-up %v; want only the run ended", ctx.Err(), again.Err())
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if !wait(again) {
		t.Fatal("a second interrupt did not end the clean-up's context")
	}
}
