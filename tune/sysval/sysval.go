// Package sysval compares and combines sysctl values the way the kernel
// prints them: one or more white-space separated fields ("4096	131072
// 6291456"), compared field by field, numerically when both are integers.
package sysval

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
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

// Normalize joins the fields of v with single spaces.
func Normalize(v string) string { return strings.Join(Fields(v), " ") }

func num(s string) (*big.Int, bool) {
	n, ok := new(big.Int).SetString(s, 10)
	return n, ok
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

// Equal reports whether a and b have the same fields (numerically equal
// integers count as equal: "0032" == "32").
func Equal(a, b string) bool {
	fa, fb := Fields(a), Fields(b)
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

// Satisfies reports whether have meets want under mode (verify's test).
func Satisfies(have, want, mode string) bool {
	t, err := Target(have, want, mode)
	if err != nil {
		return false
	}
	return Equal(t, have)
}
