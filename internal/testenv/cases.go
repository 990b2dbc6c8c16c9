package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// CasesInSync fails t for every shared field case (the *.yaml of
// shared/cases/NAME, next to the repository on the build host) that has
// no identical copy in the package's testdata/cases, the copies that let
// the tests run where the shared tree is absent. NAME is also the
// package's directory, named in the cp command the message gives. Without
// the shared tree t skips, or fails under CI when requiredInCI.
func CasesInSync(t testing.TB, name string, requiredInCI bool) {
	t.Helper()
	shared := filepath.Join(RepoRoot(), "..", "shared", "cases", name)
	files, _ := filepath.Glob(filepath.Join(shared, "*.yaml"))
	if len(files) == 0 {
		if requiredInCI && InCI() {
			t.Fatalf("no shared cases at %s under CI=true: the field cases must be checked out next to the repository", shared)
		}
		t.Skipf("no shared cases at %s", shared)
	}
	for _, p := range files {
		a, _ := os.ReadFile(p)
		b, err := os.ReadFile(filepath.Join("testdata", "cases", filepath.Base(p)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("shared case %s is missing or differs in testdata/cases: copy it (cp %s %s/testdata/cases/)", filepath.Base(p), p, name)
		}
	}
}
