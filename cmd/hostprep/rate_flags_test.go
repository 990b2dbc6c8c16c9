package main

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// --conn-rate is bounded (1e308 would overflow to -9223372036854775808)
// and never rounded (1/m is not 1 connection/s): both are exit 2 naming
// the flag, the value and the rule.
func TestPreflightConnRateBoundedAndWhole(t *testing.T) {
	for in, want := range map[string]string{
		"1e308": "above the limit of 10000000/s",
		"1/m":   "--conn-rate: 1/m (0.017/s) is not a whole number",
		"0.5/s": "--conn-rate: 30/m (0.500/s) is not a whole number",
	} {
		_, errOut, code := testenv.Run(t, nil, "preflight", "--sockets", "10", "--role", "broker", "--conn-rate", in)
		if code != 2 || !strings.Contains(errOut, want) || strings.Contains(errOut, "-9223372036854775808") {
			t.Errorf("--conn-rate %s: exit %d, want 2 and %q; stderr %q", in, code, want, errOut)
		}
	}
}

// TestRateFlags: --conn-rate and --rate take 1000, 1000/s and 60000/m;
// anything else is exit 2 with one line naming the flag and the form.
func TestRateFlags(t *testing.T) {
	for _, v := range []string{"1200", "1200/s", "72000/m"} {
		stdout, stderr, code := testenv.Run(t, nil, "preflight", "--sockets", "100", "--conn-rate", v, "-o", "json")
		if code != 0 && code != 1 {
			t.Fatalf("preflight --conn-rate %s: exit %d\n%s", v, code, stderr)
		}
		if !strings.Contains(stdout, `"conn_rate": 1200`) {
			t.Errorf("preflight --conn-rate %s: target is not 1200 connections/s:\n%.600s", v, stdout)
		}
	}
	for _, args := range [][]string{
		{"probe", "mqtt", "--conn-rate", "10/h"},
		{"probe", "iotdb", "--rate", "fast"},
		{"preflight", "--sockets", "100", "--conn-rate", "-1/s"},
	} {
		_, stderr, code := testenv.Run(t, nil, args...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, args[len(args)-2]) || !strings.Contains(stderr, "1000/s") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with one line naming the flag and the form", args, code, stderr)
		}
	}
}
