// Package sysval compares and combines sysctl values the way the kernel
// prints them: one or more white-space separated fields ("4096	131072
// 6291456"), compared field by field, numerically when both are integers
// (read as the kernel reads a written value: 0x hex, a leading 0 octal).
package sysval

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/kernelnum"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/sysctlval"
)

// Mode names, as in profiles.Mode.
const (
	Exact   = "exact"
	AtLeast = "at-least"
	AtMost  = "at-most"
)

// Fields splits a value on white space (the kernel separates multi-value
// keys with tabs, profiles with spaces).
func Fields(v string) []string { return strings.Fields(v) }

// Normalize is v trimmed, with a numeric vector's fields joined by single
// spaces; text keeps its inner white space (sysctlval.Normal).
func Normalize(v string) string { return sysctlval.Normal(v) }

// numeric reports whether every field of f is a number as the kernel
// reads one.
func numeric(f []string) bool {
	for _, x := range f {
		if _, ok := num(x); !ok {
			return false
		}
	}
	return true
}

// num parses one field as the kernel reads a number written to /proc/sys
// (kernelnum.Parse: 0x hexadecimal, a leading 0 octal, else decimal).
func num(s string) (*big.Int, bool) { return kernelnum.Parse(s) }

// Uint is a one-field value read as the kernel reads it (see num), as a
// uint64; ok is false for anything else.
func Uint(v string) (uint64, bool) {
	f := Fields(v)
	if len(f) != 1 {
		return 0, false
	}
	n, ok := num(f[0])
	if !ok || n.Sign() < 0 || !n.IsUint64() {
		return 0, false
	}
	return n.Uint64(), true
}

// cmpField compares two fields: numerically if both are integers, else as
// strings (only equality is meaningful then).
func cmpField(a, b string) (int, bool) {
	x, ok1 := num(a)
	y, ok2 := num(b)
	if ok1 && ok2 {
		return x.Cmp(y), true
	}
	if a == b {
		return 0, false
	}
	return strings.Compare(a, b), false
}

// Equal reports whether a and b are the same value: numeric vectors
// with the same fields (numerically equal integers count as equal:
// "0x20" == "32", "040" == "32"; tabs or spaces between them), or the
// same text once trimmed, inner white space included.
func Equal(a, b string) bool {
	fa, fb := Fields(a), Fields(b)
	if !numeric(fa) || !numeric(fb) {
		return Normalize(a) == Normalize(b)
	}
	if len(fa) != len(fb) {
		return false
	}
	for i := range fa {
		if c, _ := cmpField(fa[i], fb[i]); c != 0 {
			return false
		}
	}
	return true
}

// Target returns the value a key must have so that it satisfies want under
// mode, starting from cur: exact gives want; at-least raises each field of
// cur below want's field and keeps the others; at-most lowers each field
// above. The result is normalized (single spaces). Modes at-least and
// at-most need integer fields and the same number of fields in cur and want.
func Target(cur, want, mode string) (string, error) {
	switch mode {
	case "", Exact:
		return Normalize(want), nil
	case AtLeast, AtMost:
	default:
		return "", fmt.Errorf("mode %q: want exact, at-least or at-most", mode)
	}
	fc, fw := Fields(cur), Fields(want)
	if len(fc) != len(fw) {
		return "", fmt.Errorf("mode %s: the host's value %q has %s, the profile's %q has %d", mode, cur, plural.N(len(fc), "field"), want, len(fw))
	}
	out := make([]string, len(fw))
	for i := range fw {
		c, numeric := cmpField(fc[i], fw[i])
		if !numeric {
			return "", fmt.Errorf("mode %s needs integers, field %d is %q (host) / %q (profile)", mode, i+1, fc[i], fw[i])
		}
		if (mode == AtLeast && c < 0) || (mode == AtMost && c > 0) {
			out[i] = fw[i]
		} else {
			out[i] = fc[i]
		}
	}
	return strings.Join(out, " "), nil
}

// TargetOf is Target for a profile's value as it was parsed at load
// (sysctlval.Value), without reading its text again: exact gives its
// Normal text; at-least and at-most compare each field of cur, read as
// the kernel reads it, with the value's whole-number Fields. Errors as
// Target's.
func TargetOf(cur string, want sysctlval.Value, mode string) (string, error) {
	switch mode {
	case "", Exact:
		return want.Normal, nil
	case AtLeast, AtMost:
	default:
		return "", fmt.Errorf("mode %q: want exact, at-least or at-most", mode)
	}
	fc, fw := Fields(cur), want.Fields
	if fw == nil {
		return "", fmt.Errorf("mode %s needs integers, the profile's %q is not whole numbers", mode, want.Text)
	}
	if len(fc) != len(fw) {
		return "", fmt.Errorf("mode %s: the host's value %q has %s, the profile's %q has %d", mode, cur, plural.N(len(fc), "field"), want.Text, len(fw))
	}
	out := make([]string, len(fw))
	for i, w := range fw {
		c, ok := num(fc[i])
		if !ok {
			return "", fmt.Errorf("mode %s needs integers, field %d is %q (host) / %q (profile)", mode, i+1, fc[i], strconv.FormatInt(w, 10))
		}
		d := c.Cmp(big.NewInt(w))
		if (mode == AtLeast && d < 0) || (mode == AtMost && d > 0) {
			out[i] = strconv.FormatInt(w, 10)
		} else {
			out[i] = fc[i]
		}
	}
	return strings.Join(out, " "), nil
}

// Satisfies reports whether have meets want under mode (verify's test).
func Satisfies(have, want, mode string) bool {
	t, err := Target(have, want, mode)
	if err != nil {
		return false
	}
	return Equal(t, have)
}

// Written is what the kernel keeps of v written to a numeric key that
// takes n integer fields (proc_dointvec*, proc_doulongvec_minmax): it
// skips white space (isspace: blank, \t, \n, \v, \f, \r), reads up to n
// numbers as proc_get_long does (an optional minus sign, then at least
// one digit, strtoul with base 0) each followed by the end, a blank, a
// tab or a newline, and ignores whatever follows the n-th ("32768 #
// keep", a fourth field of tcp_rmem). fields are the numbers it takes,
// in decimal; ok is false when it refuses the write (EINVAL: no number
// at all, a number followed by anything else — "1000x", a non-ASCII
// space such as U+00A0 — or out of range), in which case fields are
// those it stored before failing.
func Written(v string, n int) (fields []string, ok bool) {
	b := []byte(v)
	i := 0
	for len(fields) < n {
		for i < len(b) && kernelSpace(b[i]) {
			i++
		}
		if i == len(b) {
			break
		}
		f, end, good := kernelNumber(b[i:])
		if !good {
			return fields, false
		}
		fields = append(fields, f)
		i += end
	}
	return fields, len(fields) > 0
}

// kernelSpace is the kernel's isspace (lib/ctype.c: the ASCII white
// space and Latin-1's 0xA0, which UTF-8 never writes alone).
func kernelSpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r') || c == 0xa0
}

// kernelNumber reads one number at the start of b as proc_get_long
// does: its decimal form and length; good is false for EINVAL.
func kernelNumber(b []byte) (string, int, bool) {
	i, neg := 0, false
	if b[0] == '-' && len(b) > 1 {
		i, neg = 1, true
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return "", 0, false
	}
	base := 10
	switch {
	case b[i] == '0' && i+2 < len(b) && (b[i+1]|0x20) == 'x' && isHex(b[i+2]):
		base, i = 16, i+2
	case b[i] == '0':
		base = 8
	}
	j := i
	for j < len(b) && digitIn(b[j], base) {
		j++
	}
	n, okNum := new(big.Int).SetString(string(b[i:j]), base)
	if j == i {
		n, okNum = new(big.Int), true // "0"
	}
	const tmpbuf = 22 // TMPBUFLEN: a number this long is refused
	if !okNum || n.BitLen() > 64 || j >= tmpbuf-1 || (j < len(b) && b[j] != ' ' && b[j] != '\t' && b[j] != '\n') {
		return "", 0, false
	}
	if neg {
		n.Neg(n)
	}
	return n.String(), j, true
}

func isHex(c byte) bool { return digitIn(c, 16) }

func digitIn(c byte, base int) bool {
	switch {
	case c >= '0' && c <= '9':
		return int(c-'0') < base
	case base == 16:
		c |= 0x20
		return c >= 'a' && c <= 'f'
	}
	return false
}
