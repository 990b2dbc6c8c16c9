// Package exitcode carries hostprep's process exit codes inside Go errors.
//
// The whole CLI uses four codes:
//
//	0 success
//	1 a check, verify or probe threshold failed (Failed)
//	2 bad input: usage, invalid profile or flag; nothing was touched (BadInput)
//	3 the environment refused: not root, read-only /proc/sys, lock held,
//	  kernel EINVAL, a server that cannot be reached (Environment)
//
// Packages return errors made with BadInput/Environment/Failed (or wrap
// them with %w); main turns any error into its code with Code.
package exitcode

import (
	"errors"
	"fmt"
)

// Exit codes of the hostprep CLI.
const (
	OK          = 0
	Failed      = 1
	BadInput    = 2
	Environment = 3
)

// Error is an error that knows the exit code it should end the process with.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// New wraps err with code. A nil err gives nil.
func New(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// BadInputf formats a one-line bad-input error (exit 2). The message should
// name the file or flag, the value, the rule it broke and the fix.
func BadInputf(format string, a ...any) error {
	return &Error{Code: BadInput, Err: fmt.Errorf(format, a...)}
}

// Environmentf formats a one-line environment error (exit 3).
func Environmentf(format string, a ...any) error {
	return &Error{Code: Environment, Err: fmt.Errorf(format, a...)}
}

// Failedf formats a one-line "check failed" error (exit 1).
func Failedf(format string, a ...any) error {
	return &Error{Code: Failed, Err: fmt.Errorf(format, a...)}
}

// Code returns the exit code for err: 0 for nil, the code of the first
// *Error in its chain, and Failed for any other error.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Failed
}
