package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// copyCheckout copies the module (without .git) to a temporary directory,
// so the test builds a tree nobody edits while it runs.
func copyCheckout(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "src")
	root := testenv.RepoRoot()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		// Only what a build needs: no VCS data, test fixtures, hidden or
		// generated directories, or large files.
		if d.IsDir() && rel != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "$")) {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() && !d.IsDir() {
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil || info.Size() > 8<<20 {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func runInstall(t *testing.T, src string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(src, "install.sh"), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir() // works from any directory
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func TestInstallScript(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("go not on PATH")
	}
	src := copyCheckout(t)
	prefix := filepath.Join(t.TempDir(), "prefix")
	bin := filepath.Join(prefix, "bin", "hostprep")

	out, code := runInstall(t, src, nil, "--prefix", prefix)
	if code != 0 || !strings.Contains(out, "installed "+bin) {
		t.Fatalf("first install: exit %d\n%s", code, out)
	}
	// It says that it is building, what a first build costs, and how long
	// this one took.
	for _, re := range []string{`install.sh: building hostprep with go version `, `about a minute on 2 idle cores`, `install.sh: built hostprep \S+ in \d+ s\n`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("install output lacks %q:\n%s", re, out)
		}
	}
	st1, err := os.Stat(bin)
	if err != nil || st1.Mode().Perm() != 0o755 {
		t.Fatalf("installed binary: %v %v", st1, err)
	}
	if out, err := exec.Command(bin, "profiles", "list").CombinedOutput(); err != nil || !strings.Contains(string(out), "sys-tune") {
		t.Fatalf("installed binary does not run: %v\n%s", err, out)
	}

	out, code = runInstall(t, src, nil, "--prefix="+prefix)
	if code != 0 || !strings.Contains(out, bin+" unchanged") {
		t.Fatalf("second install: exit %d\n%s", code, out)
	}
	st2, _ := os.Stat(bin)
	if !st2.ModTime().Equal(st1.ModTime()) {
		t.Errorf("second install touched the binary: mtime %v -> %v", st1.ModTime(), st2.ModTime())
	}
	entries, _ := os.ReadDir(filepath.Dir(bin))
	if len(entries) != 1 {
		t.Errorf("leftover files in %s: %v", filepath.Dir(bin), entries)
	}

	// A different binary is replaced, not appended to.
	if err := os.WriteFile(bin, []byte("old"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code = runInstall(t, src, nil, "--prefix", prefix)
	if code != 0 || !strings.Contains(out, "updated "+bin) {
		t.Fatalf("update: exit %d\n%s", code, out)
	}

	out, code = runInstall(t, src, nil, "--help")
	if code != 0 || !strings.Contains(out, "--prefix DIR") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
	out, code = runInstall(t, src, nil, "--frobnicate")
	if code != 2 || !strings.Contains(out, "unknown argument '--frobnicate'") {
		t.Errorf("bad flag: exit %d\n%s", code, out)
	}
	out, code = runInstall(t, src, nil, "--prefix")
	if code != 2 || !strings.Contains(out, "--prefix needs a directory") {
		t.Errorf("--prefix without DIR: exit %d\n%s", code, out)
	}
	out, code = runInstall(t, src, []string{"GO=/nonexistent/go"}, "--prefix", prefix)
	if code != 3 || !strings.Contains(out, "GO=/nonexistent/go is not an executable Go toolchain") {
		t.Errorf("missing go: exit %d\n%s", code, out)
	}
	// With no go on PATH and no GO, it says what to install (unless the
	// official tarball location exists, which it then uses).
	if _, err := os.Stat("/usr/local/go/bin/go"); err != nil {
		out, code = runInstall(t, src, []string{"PATH=/usr/bin:/bin"}, "--prefix", prefix)
		if code != 3 || !strings.Contains(out, "install Go 1.26") {
			t.Errorf("no go on PATH: exit %d\n%s", code, out)
		}
	}
}
