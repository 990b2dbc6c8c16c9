// Package cstrconv reads numbers the way C's strtoull does, for the
// configuration files of C programs (pam_limits, systemd) that parse
// their values with it: leading white space, an optional sign, then the
// leading decimal digits, whatever follows them.
package cstrconv

import (
	"math"
	"strconv"
	"strings"
)

// Strtoull is strtoull(s, &end, 10): it skips leading white space
// (isspace), takes an optional sign (a minus negates modulo 2^64, as C
// does) and the decimal digits after it; end is the rest of s. ok is
// false when no digit is read (end is then s). A number above 2^64-1 is
// math.MaxUint64 with overflow true (C's ERANGE).
func Strtoull(s string) (n uint64, end string, ok, overflow bool) {
	p := strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if p != "" && (p[0] == '+' || p[0] == '-') {
		neg, p = p[0] == '-', p[1:]
	}
	i := 0
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, s, false, false
	}
	n, err := strconv.ParseUint(p[:i], 10, 64)
	if err != nil {
		return math.MaxUint64, p[i:], true, true
	}
	if neg {
		n = -n
	}
	return n, p[i:], true, false
}
