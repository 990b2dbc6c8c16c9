package remedies

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// host is the Facts of a recorded host given as YAML (the `host:` block
// of a field case); the test fails on YAML LoadHostYAML refuses.
func host(t *testing.T, y string) *facts.Facts {
	t.Helper()
	f, err := facts.LoadHostYAML("test", strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// message is a check's text as one line, for matching.
func message(c verdict.Check) string {
	return strings.Join([]string{c.Summary, c.Observed, c.Expected, c.Remedy}, " | ")
}
