package testenv

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// Run runs the built hostprep (Binary) with args, the test's environment
// plus env (KEY=VALUE entries, later ones win), and returns what it wrote
// to stdout and stderr and its exit code. A command that cannot be started
// at all fails the test.
func Run(t testing.TB, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(Binary(t), args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	return Exec(t, cmd)
}

// Exec runs cmd (with Stdout and Stderr unset) and returns its stdout,
// stderr and exit code. An exit code other than 0 is returned, not
// reported; any other error (the program not found, not executable)
// fails the test.
func Exec(t testing.TB, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", cmd.Args, err)
	}
	return o.String(), e.String(), code
}
