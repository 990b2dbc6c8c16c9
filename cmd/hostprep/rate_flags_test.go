package main

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// --conn-rate is bounded (1e308 overflowed to -9223372036854775808) and
// never rounded (1/m was judged as 1 connection/s): both are exit 2 naming
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
