// Package kernelnum reads a number the way the kernel reads one written
// to /proc/sys: proc_get_long's optional minus sign, then strtoul with
// base 0 (0x or 0X hexadecimal, a leading 0 octal, else decimal), so
// that a sysctl.d line's "0x10000" is 65536 and "0100000" is 32768.
// Anything else (Go's 0o, 0b and 1_000 forms, a "+" sign) is not a
// number. It is the one place hostprep parses such a field: the boot
// model (hostconf, the kernel command line's sysctl.fs.nr_open=) and the
// value comparisons (tune/sysval) both call it.
package kernelnum

import (
	"math/big"
	"strings"
)

// Parse reads one field s as the kernel does (see the package comment).
// ok is false when it is not a number.
func Parse(s string) (n *big.Int, ok bool) {
	d, neg := strings.CutPrefix(s, "-")
	base := 10
	switch {
	case len(d) > 2 && (d[:2] == "0x" || d[:2] == "0X"):
		base, d = 16, d[2:]
	case len(d) > 1 && d[0] == '0':
		base, d = 8, d[1:]
	}
	if d == "" || strings.ContainsAny(d, "_+-") {
		return nil, false
	}
	n, ok = new(big.Int).SetString(d, base)
	if ok && neg {
		n.Neg(n)
	}
	return n, ok
}

// Uint is Parse for a value that must be a non-negative uint64 (a
// count, a limit); ok is false for anything else, a negative number
// included.
func Uint(s string) (uint64, bool) {
	n, ok := Parse(s)
	if !ok || n.Sign() < 0 || !n.IsUint64() {
		return 0, false
	}
	return n.Uint64(), true
}
