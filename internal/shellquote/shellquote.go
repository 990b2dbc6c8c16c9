// Package shellquote writes commands that a message suggests so that they
// run as printed when pasted into a POSIX shell (sh, bash, dash).
package shellquote

import "strings"

// safe are the bytes a word may hold and still need no quotes in a POSIX
// shell: no white space, glob, quote, $, `, \, ;, &, |, <, >, (, ), ~ or #.
const safe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._+-=:,@%"

// Quote returns s as one shell word: unchanged when every byte is safe
// (see above) and s is not empty, else in single quotes, a quote inside
// closing them, escaped with a backslash, and opening them again. The
// shell reads the result back as exactly s.
func Quote(s string) string {
	if s != "" && strings.Trim(s, safe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Join returns args as one command line, each quoted with Quote and
// separated by one space.
func Join(args ...string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = Quote(a)
	}
	return strings.Join(q, " ")
}
