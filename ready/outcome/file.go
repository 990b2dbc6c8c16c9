package outcome

import (
	"bytes"
	"io"
	"os"
	"path/filepath"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// CheckOutputPath checks, before anything runs, that a result file given
// with flag (e.g. "--junit") can be written where asked: its folder must
// exist and be a folder, and path must not be a folder. hostprep never
// creates folders for its result files. The error is exitcode.BadInput
// (exit 2) naming the flag, the path and the folder.
func CheckOutputPath(flag, path string) error {
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
		return exitcode.BadInputf("%s %s: is a folder; want a file path, e.g. %s", flag, path, filepath.Join(path, "hostprep-ready.out"))
	}
	return nil
}

// WriteFileAtomic renders with write and puts the bytes at path through a
// temporary file in the same directory, fsync and rename, so a reader
// (node_exporter's textfile collector, a CI artifact upload) never sees a
// half-written file. The parent directory must exist (see
// CheckOutputPath); it is never created.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
