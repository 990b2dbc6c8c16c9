package shellquote

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The shell reads a joined command back as the same arguments, whatever
// bytes they hold (a profile path with a space, a quote, a $ or a glob).
func TestJoinRoundTripsThroughSh(t *testing.T) {
	args := []string{"plain", "with space", "it's", `"dq"`, "$HOME", "*.yaml", "a;b", "", "back\\slash", "tab\there", "new\nline", "~user", "#hash"}
	out, err := exec.Command("sh", "-c", "set -- "+Join(args...)+`; for a in "$@"; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatalf("sh: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if !slices.Equal(got, args) {
		t.Fatalf("sh read %q, want %q", got, args)
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/srv/image": "/srv/image", "a b": "'a b'", "it's": `'it'\''s'`, "": "''", "$x": "'$x'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %q, want %q", in, got, want)
		}
	}
}
