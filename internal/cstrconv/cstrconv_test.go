package cstrconv

import (
	"math"
	"testing"
)

// TestStrtoull guards C strtoull's reading: white space, sign, leading
// digits, the rest, and ERANGE.
func TestStrtoull(t *testing.T) {
	for _, c := range []struct {
		in       string
		n        uint64
		end      string
		ok, over bool
	}{
		{"65536", 65536, "", true, false},
		{" \t012000x", 12000, "x", true, false},
		{"+7M", 7, "M", true, false},
		{"-5", math.MaxUint64 - 4, "", true, false},
		{"x1", 0, "x1", false, false},
		{"-", 0, "-", false, false},
		{"99999999999999999999K", math.MaxUint64, "K", true, true},
	} {
		n, end, ok, over := Strtoull(c.in)
		if n != c.n || end != c.end || ok != c.ok || over != c.over {
			t.Errorf("Strtoull(%q) = %d, %q, %v, %v; want %d, %q, %v, %v", c.in, n, end, ok, over, c.n, c.end, c.ok, c.over)
		}
	}
}
