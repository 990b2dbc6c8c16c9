package tune

import (
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/lock"
)

// TestLockHeldSaysTheFix: apply that finds the lock held says what to do:
// wait for the other run, or give it longer with --lock-wait.
func TestLockHeldSaysTheFix(t *testing.T) {
	img, env := newImage(t, nil)
	env.LockWait = NoWait
	lk, err := lock.Acquire(img, 0)
	must(t, err)
	defer lk.Release()
	p, err := profiles.Parse("t.yaml", []byte("sysctl: {net.core.somaxconn: \"4096\"}\n"))
	must(t, err)
	_, err = Apply(t.Context(), p, Options{Env: env})
	wantCode(t, err, exitcode.Environment, "lock held", "--lock-wait 30s", "wait for the other apply or rollback")
}
