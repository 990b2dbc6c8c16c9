package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestHelpUnderJSON: an unknown help topic is a usage error (exit 2; under
// -o json a JSON error object); a bare command group prints its help and
// exits 0 as text, and is a usage error under -o json (help is no result).
func TestHelpUnderJSON(t *testing.T) {
	for _, args := range [][]string{{"-o", "json", "help", "nosuch"}, {"-o", "json", "tune"}, {"probe", "-o", "json"}, {"help", "tune", "nosuch"}} {
		out, stderr, code := testenv.Run(t, nil, args...)
		var je struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
		}
		if code != 2 || !strings.HasPrefix(stderr, "hostprep: ") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one error line", args, code, stderr)
		}
		if args[0] == "help" {
			continue
		}
		if err := json.Unmarshal([]byte(out), &je); err != nil || je.ExitCode != 2 || je.Error == "" {
			t.Errorf("%v: stdout %q is not a JSON error with exit_code 2 (%v)", args, out, err)
		}
	}
	if out, _, code := testenv.Run(t, nil, "help", "tune"); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("help tune: exit %d, stdout %.200q; want its help", code, out)
	}
}
