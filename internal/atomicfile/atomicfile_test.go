package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.html")
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "<html>ok</html>"); return err }); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "<html>ok</html>" {
		t.Fatalf("%v %q", err, b)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	// A second write replaces the file whole.
	if err := Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "v2"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "v2" {
		t.Errorf("after rewrite: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temp files left: %v", ents)
	}
}

// TestWriteNothingOnFailure: a render error, an empty render and a missing
// folder leave no file (and an existing file untouched).
func TestWriteNothingOnFailure(t *testing.T) {
	dir := t.TempDir()
	boom := errors.New("boom")
	for name, tc := range map[string]struct {
		path   string
		render func(io.Writer) error
		want   error
	}{
		"render fails half-way": {filepath.Join(dir, "a.html"), func(w io.Writer) error { fmt.Fprint(w, "<html>"); return boom }, boom},
		"empty":                 {filepath.Join(dir, "b.html"), func(io.Writer) error { return nil }, ErrEmpty},
		"missing folder":        {filepath.Join(dir, "sub", "c.html"), func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err }, nil},
	} {
		t.Run(name, func(t *testing.T) {
			err := Write(tc.path, tc.render)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if _, err := os.Stat(tc.path); !os.IsNotExist(err) {
				t.Errorf("%s exists after a failed write", tc.path)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Error("the missing folder was created")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left: %v", ents)
	}
	// An existing report survives a failed rewrite byte for byte.
	old := filepath.Join(dir, "old.html")
	if err := os.WriteFile(old, []byte("previous run"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(old, func(w io.Writer) error { fmt.Fprint(w, "half"); return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(old); string(b) != "previous run" {
		t.Errorf("existing file changed to %q", b)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{"", ""},
		{filepath.Join(dir, "ok.xml"), ""},
		{file, ""}, // an existing file is replaced later, not now
		{filepath.Join(dir, "no", "f.xml"), "--junit " + filepath.Join(dir, "no", "f.xml") + ": folder " + filepath.Join(dir, "no") + " does not exist"},
		{filepath.Join(file, "f.xml"), "is not a folder"},
		{dir, "is a folder; want a file path, e.g. " + filepath.Join(dir, "report.junit")},
	} {
		err := Check("--junit", tc.path)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.path, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Code(err) != exitcode.BadInput):
			t.Errorf("%s: err %v (code %d), want exit 2 with %q", tc.path, err, exitcode.Code(err), tc.want)
		}
	}
	if os.Geteuid() != 0 { // root writes into a 0555 folder
		if err := Check("--html", filepath.Join(ro, "r.html")); err == nil || exitcode.Code(err) != exitcode.BadInput {
			t.Errorf("read-only folder: %v", err)
		}
	}
	// Check created nothing and kept the existing file.
	if b, _ := os.ReadFile(file); string(b) != "keep" {
		t.Errorf("existing file changed to %q", b)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("Check left files: %v", ents)
	}
}

// A report path that holds a device, a FIFO or a link to nothing (or to a
// device) is
// refused by Check (exit 2) and by Write, and left as it was: no rename
// puts a regular file where /dev/full was. A link to a regular file is
// followed: the file is replaced, the link stays.
func TestNonRegularTargetsAreRefusedAndLinksFollowed(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Fatal(err)
	}
	paths := []string{fifo, dangling}
	// A device node of its own (never the machine's /dev/null: a
	// regression would replace it): the null device's numbers, made in
	// the test's folder; root only.
	null := filepath.Join(dir, "null")
	if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
		toNull := filepath.Join(dir, "to-null")
		if err := os.Symlink(null, toNull); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, null, toNull)
	} else {
		t.Logf("no device node (%v): devices not checked", err)
	}
	render := func(w io.Writer) error { _, err := io.WriteString(w, "report"); return err }
	for _, p := range paths {
		before, _ := os.Lstat(p)
		err := Check("--csv", p)
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "regular file") {
			t.Errorf("Check(%s) = %v, want exit 2 saying it is not a regular file", p, err)
		}
		if err := Write(p, render); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Write(%s) = %v, want ErrNotRegular", p, err)
		}
		if after, _ := os.Lstat(p); after.Mode() != before.Mode() {
			t.Errorf("%s changed from %v to %v", p, before.Mode(), after.Mode())
		}
	}
	file := filepath.Join(dir, "real.csv")
	link := filepath.Join(dir, "link.csv")
	if err := os.WriteFile(file, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if err := Check("--csv", link); err != nil {
		t.Fatal(err)
	}
	if err := Write(link, render); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(link); st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if b, _ := os.ReadFile(file); string(b) != "report" {
		t.Errorf("the linked file holds %q, want the report", b)
	}
}

// Two report flags naming one file (the same path, or a link to it) are
// refused, so the second write cannot replace the first silently.
func TestCheckAllRefusesOneFileTwice(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.out")
	link := filepath.Join(dir, "link.out")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	for _, second := range []string{p, link, dir + "/./r.out"} {
		err := CheckAll(Out{Flag: "--csv", Path: p}, Out{Flag: "--html", Path: second})
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "--csv and --html both name") {
			t.Errorf("--csv %s --html %s: %v, want exit 2 naming both flags", p, second, err)
		}
	}
	if err := CheckAll(Out{Flag: "--csv", Path: p}, Out{Flag: "--html", Path: filepath.Join(dir, "other.html")}, Out{Flag: "--json"}); err != nil {
		t.Errorf("distinct files: %v", err)
	}
}

// A report may not name one of the command's inputs (report merge a.json
// --html a.json replaced its input with the page).
func TestCheckAllRefusesAnInputAsReport(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "a.json")
	if err := os.WriteFile(in, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := CheckAll(Out{Flag: "--html", Path: in}, Out{Flag: "input", Path: in, Input: true})
	if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "--html "+in+" is also an input") {
		t.Errorf("report over its input: %v, want exit 2 naming --html", err)
	}
	if b, _ := os.ReadFile(in); string(b) != "{}" {
		t.Errorf("the input changed: %q", b)
	}
	// One input named twice is that, not a report over an input.
	err = CheckAll(Out{Flag: "input", Path: in, Input: true}, Out{Flag: "input", Path: in, Input: true})
	if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "given twice as an input") || strings.Contains(err.Error(), "report") {
		t.Errorf("one input twice: %v", err)
	}
}
