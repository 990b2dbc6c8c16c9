package testenv

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// GoSources returns the paths of the module's non-test Go files (below
// RepoRoot, skipping hidden folders, testdata and vendor), for tests that
// check the code itself. It fails t when the walk fails or finds fewer
// than 100 files (the walk missed the module).
func GoSources(t testing.TB) []string {
	t.Helper()
	return goFiles(t, false)
}

// GoFiles is GoSources with the _test.go files too.
func GoFiles(t testing.TB) []string {
	t.Helper()
	return goFiles(t, true)
}

func goFiles(t testing.TB, tests bool) []string {
	t.Helper()
	root := RepoRoot()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && (tests || !strings.HasSuffix(path, "_test.go")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("only %d Go files below %s: the walk missed the module", len(files), root)
	}
	return files
}
