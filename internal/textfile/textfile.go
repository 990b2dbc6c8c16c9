// Package textfile reads line-oriented text files (procfs tables such as
// /proc/net/netstat, Java properties files) whose lines may be longer
// than bufio.Scanner's default 64 KiB.
package textfile

import (
	"bufio"
	"io"
	"os"
)

// MaxLine is the longest line, in bytes, a Scanner reads.
const MaxLine = 1 << 20

// Scanner returns a line scanner over r that reads lines of up to MaxLine
// bytes; a longer one stops it with bufio.ErrTooLong (its Err).
func Scanner(r io.Reader) *bufio.Scanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	return sc
}

// Parse opens path and returns what parse reads from it. Errors are
// opening path's (missing, not readable) or parse's.
func Parse[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	return parse(f)
}
