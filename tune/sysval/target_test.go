package sysval

import (
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/internal/sysctlval"
)

// TestTargetOfAgreesWithTarget guards that planning from a profile's
// value parsed at load (TargetOf) gives what planning from its text
// gives (Target): the same target, or an error for both, for any host
// value (decimal, hexadecimal or not a number, with tabs), any whole
// numbers in the profile and every mode.
func TestTargetOfAgreesWithTarget(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 3).Draw(t, "fields")
		want := make([]string, n)
		for i := range want {
			want[i] = strconv.FormatInt(rapid.Int64Range(-5, 1<<40).Draw(t, "want"), 10)
		}
		cur := make([]string, rapid.IntRange(n-1, n+1).Draw(t, "curFields"))
		for i := range cur {
			x := rapid.Int64Range(-5, 1<<40).Draw(t, "cur")
			cur[i] = rapid.SampledFrom([]string{strconv.FormatInt(x, 10), "0x" + strconv.FormatInt(max(x, 0), 16), "bbr"}).Draw(t, "curForm")
		}
		mode := rapid.SampledFrom([]string{Exact, AtLeast, AtMost, ""}).Draw(t, "mode")
		c, w := strings.Join(cur, "\t"), strings.Join(want, " ")
		got, gotErr := TargetOf(c, sysctlval.Parse("net.ipv4.tcp_rmem", w), mode)
		exp, expErr := Target(c, w, mode)
		if (gotErr != nil) != (expErr != nil) || (gotErr == nil && got != exp) {
			t.Fatalf("TargetOf(%q, %q, %q) = %q, %v; Target = %q, %v", c, w, mode, got, gotErr, exp, expErr)
		}
	})
	if _, err := TargetOf("1", sysctlval.Parse("net.ipv4.tcp_congestion_control", "bbr"), AtLeast); err == nil {
		t.Error("TargetOf at-least of a value that is not whole numbers: want an error")
	}
}
