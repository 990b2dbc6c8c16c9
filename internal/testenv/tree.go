package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteTree writes files (path under root -> content) under root, making
// the directories they need; the content "symlink to TARGET" makes a
// symbolic link to TARGET instead. A file or link already at a path is
// replaced. Any error fails t.
func WriteTree(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, body := range files {
		host := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(host), 0o755); err != nil {
			t.Fatal(err)
		}
		os.Remove(host)
		var err error
		if target, ok := strings.CutPrefix(body, "symlink to "); ok {
			err = os.Symlink(target, host)
		} else {
			err = os.WriteFile(host, []byte(body), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TempTree writes files (as WriteTree does) under a new temporary
// directory, removed when t ends, and returns that directory.
func TempTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	WriteTree(t, root, files)
	return root
}
