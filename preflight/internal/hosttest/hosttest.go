// Package hosttest holds what the tests of preflight's checks, remedies
// and runner share: a recorded host from YAML and a check as one line.
// (The facts package's own tests cannot import it: it imports facts.)
package hosttest

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Host is the Facts of a recorded host given as YAML (the `host:` block
// of a field case, stock Debian 12 defaults for the rest); the test fails
// on YAML facts.LoadHostYAML refuses.
func Host(t testing.TB, y string) *facts.Facts {
	t.Helper()
	f, err := facts.LoadHostYAML("test", strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Message is a check's text as one line, for matching.
func Message(c verdict.Check) string {
	return strings.Join([]string{c.Summary, c.Observed, c.Expected, c.Remedy}, " | ")
}
