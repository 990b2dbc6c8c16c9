// Package atomicfile replaces files all or nothing: a reader never sees a
// half-written file, and the path is never created or truncated before
// the content is ready. Replace is the one atomic write of hostprep (the
// files tune owns and its journal go through it, via tune/files); Write,
// Check and CheckAll are the report files the CLI produces (--html,
// --csv, --json, --junit, --prom), where a run that renders nothing
// leaves no file and a path that is not a regular file is refused.
package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
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
// never created. A symbolic link at path is followed: the file it leads
// to is replaced, the link stays. Errors: render's error, ErrEmpty,
// ErrNotRegular, or the *os.PathError of the failed file operation.
func Write(path string, render func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := render(&buf); err != nil {
		return err
	}
	if buf.Len() == 0 {
		return ErrEmpty
	}
	path, err := target(path)
	if err != nil {
		return err
	}
	// The rename is durable once the folder's entry is on disk; a folder
	// that cannot be synced (some network file systems) still has the
	// complete file.
	if err := Replace(path, buf.Bytes(), 0o644, -1, -1); err != nil && !errors.Is(err, ErrDirSync) {
		return err
	}
	return nil
}

// ErrDirSync wraps a failed fsync of the folder after Replace's rename:
// the new bytes are in place and complete, only whether the rename
// survives a crash is unknown.
var ErrDirSync = errors.New("fsync of the folder failed")

// TempPattern is the os.CreateTemp pattern of the temporary file Replace
// makes next to path: "." + its name + ".tmp-*" (the "*" is digits).
func TempPattern(path string) string { return "." + filepath.Base(path) + ".tmp-*" }

// Replace puts data at path all or nothing: a temporary file in path's
// folder (TempPattern; the rename stays on one file system) gets data,
// owner uid and group gid (-1 keeps the writer's) and mode perm, is
// fsynced, renamed over path, and the folder is fsynced, so a crash
// leaves the old bytes or the new ones, never a mix, and the file never
// appears with another owner or mode. On an error before the rename the
// temporary file is removed and path is as it was. The folder must exist.
// A symbolic link at path is replaced, not followed (Write follows it).
// Errors: the *os.PathError of the failed operation, or ErrDirSync
// (wrapped) when only the final folder fsync failed.
func Replace(path string, data []byte, perm os.FileMode, uid, gid int) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, TempPattern(path))
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // a no-op once renamed
	_, err = f.Write(data)
	if err == nil && (uid >= 0 || gid >= 0) {
		err = f.Chown(uid, gid)
	}
	if err == nil {
		err = f.Chmod(perm)
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
	return SyncDir(dir)
}

// SyncDir fsyncs folder dir so a rename or removal in it is durable.
// Errors: opening dir, or ErrDirSync wrapped with the fsync error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrDirSync, dir, err)
	}
	return nil
}

// ErrNotRegular is returned for a path that holds something other than a
// regular file (a device such as /dev/null, a FIFO, a socket, a folder),
// or a symbolic link to one or to nothing: Write replaces a file whole
// (rename), which would put a regular file where that thing was.
var ErrNotRegular = errors.New("not a regular file")

// target is the file Write replaces for path: path itself, or where a
// symbolic link at path leads. Errors: ErrNotRegular (wrapped with what
// is there) when that is not a regular file, or a link to nothing; a
// missing path is fine (a new file).
func target(path string) (string, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return path, nil // nothing there (or its folder is not one): Check and the write say so
	}
	if st.Mode()&os.ModeSymlink != 0 {
		to, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", fmt.Errorf("%w: a symbolic link that leads nowhere (%v)", ErrNotRegular, err)
		}
		path = to
		if st, err = os.Stat(path); err != nil {
			return "", err
		}
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w: %s is %s", ErrNotRegular, path, Kind(st.Mode()))
	}
	return path, nil
}

// Kind names what a file that is not a regular one is, with its article
// ("a folder", "a character device", "a named pipe"), for messages that
// refuse it (report files here, profile files in profiles).
func Kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file (" + m.Type().String() + ")"
}

// Check tells, before a run starts, whether Write can later put a file at
// path given with flag (e.g. "--html"): the folder must exist, be a
// folder and accept a new file (tried with a temporary file that is
// removed at once), and path must be new or a regular file (or a link to
// one): never a folder, a device such as /dev/null, a FIFO or a socket. It never creates,
// opens or truncates path itself, so a run that fails later leaves
// nothing behind. An empty path is not checked. The error is
// exitcode.BadInput (exit 2) naming the flag, the path and the fix.
func Check(flag, path string) error {
	if path == "" {
		return nil
	}
	given := path
	path, err := target(path)
	switch {
	case errors.Is(err, ErrNotRegular) && strings.Contains(err.Error(), "is a folder"):
		return exitcode.BadInputf("%s %s: is a folder; want a file path, e.g. %s", flag, given, filepath.Join(given, "report."+strings.TrimLeft(flag, "-")))
	case errors.Is(err, ErrNotRegular):
		return exitcode.BadInputf("%s %s: %v; hostprep replaces a report file whole, so name a regular file (new or existing)", flag, given, err)
	case err != nil:
		return exitcode.BadInputf("%s %s: %v", flag, given, err)
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
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".check-*")
	if err != nil {
		return exitcode.BadInputf("%s %s: cannot create a file in %s (%v); write the file to a folder you can write to", flag, path, dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// Out is one report file a command was asked for: the flag (--csv) and
// the path ("" for none). Input marks a file the command reads instead
// (Flag then says which, e.g. "input"): it is not checked for writing,
// and no report may name it.
type Out struct {
	Flag, Path string
	Input      bool
}

// CheckAll checks every report file of outs (Check) and that no two of
// outs name the same file (the same path, or links to one file): the
// second write would silently replace the first, or a report its own
// input. The error is exitcode.BadInput naming the flags.
func CheckAll(outs ...Out) error {
	seen := map[string]Out{}
	for _, o := range outs {
		if o.Path == "" {
			continue
		}
		if !o.Input {
			if err := Check(o.Flag, o.Path); err != nil {
				return err
			}
		}
		key := filepath.Clean(o.Path)
		if to, err := target(o.Path); err == nil {
			key = filepath.Clean(to)
		}
		if abs, err := filepath.Abs(key); err == nil {
			key = abs
		}
		if prev, ok := seen[key]; ok {
			if prev.Input && o.Input {
				return exitcode.BadInputf("%s is given twice as an input: its results would count twice; give each file once", o.Path)
			}
			if prev.Input || o.Input {
				out := o
				if o.Input {
					out = prev
				}
				return exitcode.BadInputf("%s %s is also an input of this command: the report would replace it; write the report to another path", out.Flag, o.Path)
			}
			return exitcode.BadInputf("%s and %s both name %s: the second file would replace the first; give each its own path", prev.Flag, o.Flag, o.Path)
		}
		seen[key] = o
	}
	return nil
}
