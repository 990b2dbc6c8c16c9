package main

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// Usage mistakes exit 2 with one line naming what was wrong; a bare command
// group prints its help and exits 0.
func TestUsageErrorsExit2(t *testing.T) {
	for _, args := range [][]string{
		{"nosuch"},
		{"tune", "nosuch"},
		{"probe", "nosuch"},
		{"tune", "plan", "--profile", "sys-tune", "extra"},
		{"profiles", "show"},
		{"profiles", "validate"},
		{"preflight", "--no-such-flag"},
		{"--log-format", "xml", "profiles", "list"},
	} {
		stdout, stderr, code := testenv.Run(t, nil, args...)
		if code != 2 {
			t.Errorf("hostprep %v: exit %d, want 2\nstdout: %s\nstderr: %s", args, code, stdout, stderr)
			continue
		}
		if lines := strings.Count(strings.TrimSpace(stderr), "\n") + 1; lines != 1 || !strings.HasPrefix(stderr, "hostprep: ") {
			t.Errorf("hostprep %v: stderr is not one 'hostprep: ' line: %q", args, stderr)
		}
	}
	for _, args := range [][]string{{"tune"}, {"probe"}, {"profiles"}} {
		stdout, _, code := testenv.Run(t, nil, args...)
		if code != 0 || !strings.Contains(stdout, "Available Commands") {
			t.Errorf("hostprep %v: exit %d, want 0 with help; stdout %q", args, code, stdout)
		}
	}
}

// A flag value its type cannot parse is one line naming the flag, the
// value and what it takes, not Go's parser error.
func TestFlagValueErrorsSayWhatTheyWant(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"preflight", "--sockets", "abc"}, `--sockets "abc": want a whole number`},
		{[]string{"probe", "iotdb", "--steps", "a,b"}, `--steps "a,b": want whole numbers separated by commas, such as 10,20,30`},
		{[]string{"probe", "mqtt", "--duration", "3x"}, `--duration "3x": want a duration such as 500ms, 30s or 2m`},
		{[]string{"probe", "iotdb", "--keep=maybe"}, `--keep "maybe": want true or false`},
		{[]string{"probe", "mqtt", "--conn-rate", "x"}, `--conn-rate: "x" is not a rate`},
	} {
		_, stderr, code := testenv.Run(t, nil, c.args...)
		if code != 2 || !strings.Contains(stderr, c.want) || strings.Contains(stderr, "strconv") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("hostprep %v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, code, stderr, c.want)
		}
	}
}

// A usage error names the command once ("hostprep: unknown command "x"
// for "hostprep tune apply"", not "hostprep: hostprep tune apply: ...").
func TestUsageErrorsNameTheCommandOnce(t *testing.T) {
	for _, args := range [][]string{{"tune", "apply", "extra"}, {"profiles", "show"}} {
		_, stderr, _ := testenv.Run(t, nil, args...)
		if strings.HasPrefix(stderr, "hostprep: hostprep ") {
			t.Errorf("hostprep %v: %q names the command twice", args, stderr)
		}
	}
}
