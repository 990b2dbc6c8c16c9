// Package atomicfile writes the report files the CLI produces (--html,
// --csv, --json, --junit, --prom) all or nothing: a reader never sees a
// half-written file, a run that renders nothing leaves no file, and the
// path is never created or truncated before the content is ready.
package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// ErrEmpty is returned by Write when render wrote no byte: no file is
// made (an empty report file says nothing and hides the failure).
var ErrEmpty = errors.New("nothing to write: the report is empty")

// Write renders the whole file into memory with render and, only when
// render returned nil and wrote at least one byte, puts the bytes at path:
// a temporary file in path's folder (so the rename stays on one file
// system), fsync, chmod 0644, rename over path, fsync of the folder. On
// any error nothing is left at path that was not there before and the
// temporary file is removed. The folder must exist (see Check); it is
// never created. Errors: render's error, ErrEmpty, or the *os.PathError
// of the failed file operation.
func Write(path string, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	if buf.Len() == 0 {
		return ErrEmpty
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	_, err = f.Write(buf.Bytes())
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	// The rename is durable once the folder's entry is on disk; a
	// folder that cannot be synced (some network file systems) still
	// has the complete file.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Check tells, before a run starts, whether Write can later put a file at
// path given with flag (e.g. "--html"): the folder must exist, be a
// folder and accept a new file (tried with a temporary file that is
// removed at once), and path must not be a folder. It never creates,
// opens or truncates path itself, so a run that fails later leaves
// nothing behind. An empty path is not checked. The error is
// exitcode.BadInput (exit 2) naming the flag, the path and the fix.
func Check(flag, path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case os.IsNotExist(err):
		return exitcode.BadInputf("%s %s: folder %s does not exist; create it first (hostprep does not create folders) or write the file elsewhere", flag, path, dir)
	case err != nil:
		return exitcode.BadInputf("%s %s: folder %s: %v", flag, path, dir, err)
	case !st.IsDir():
		return exitcode.BadInputf("%s %s: %s is not a folder", flag, path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return exitcode.BadInputf("%s %s: is a folder; want a file path, e.g. %s", flag, path, filepath.Join(path, "report."+strings.TrimLeft(flag, "-")))
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-*")
	if err != nil {
		return exitcode.BadInputf("%s %s: cannot create a file in %s (%v); write the file to a folder you can write to", flag, path, dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}
