package testenv

import (
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
)

// CheckByID returns the check with that ID among checks. It fails the
// test (Fatalf, listing the IDs there are) when there is none, so an
// assertion on a check's status cannot pass because the check went
// missing.
func CheckByID(t testing.TB, checks []verdict.Check, id string) verdict.Check {
	t.Helper()
	ids := make([]string, 0, len(checks))
	for _, c := range checks {
		if c.ID == id {
			return c
		}
		ids = append(ids, c.ID)
	}
	t.Fatalf("no check %s among %v", id, ids)
	return verdict.Check{}
}
