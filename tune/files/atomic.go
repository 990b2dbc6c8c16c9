// Package files writes the persistent files hostprep owns
// (/etc/sysctl.d/60-hostprep.conf and friends): deterministic content,
// written atomically (temporary file, fsync, rename, fsync of the
// directory), and never rewritten when the bytes are already there.
package files

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hostprep/hostprep/internal/atomicfile"
)

// Read returns the bytes of path and whether it exists. Any error other
// than "does not exist" is returned.
func Read(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return b, true, nil
}

// Link is the target of the symbolic link at path, and true; "" and false
// when path is not a symbolic link (or is missing).
func Link(path string) (string, bool) {
	t, err := os.Readlink(path)
	return t, err == nil
}

// RestoreLink puts the symbolic link path -> target back in place of
// whatever is at path, atomically (a temporary link renamed over it), and
// fsyncs the directory.
func RestoreLink(path, target string) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-link")
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// Same reports whether path exists with exactly data.
func Same(path string, data []byte) bool {
	b, ok, err := Read(path)
	return err == nil && ok && bytes.Equal(b, data)
}

// MkdirAll creates dir and its missing parents (mode 0755, not subject to
// the umask) and returns the
// directories it created, outermost first, so they can be removed again.
func MkdirAll(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	var created []string
	for i := len(missing) - 1; i >= 0; i-- {
		if err := os.Mkdir(missing[i], 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return created, err
		}
		created = append(created, missing[i])
		// 0755 whatever the umask: a 0700 /etc/security under umask 077
		// would hide every limits file from the users logging in.
		if err := os.Chmod(missing[i], 0o755); err != nil {
			return created, err
		}
	}
	return created, nil
}

// WriteAtomic replaces path with data: it writes a temporary file in the
// same directory, fsyncs it, renames it over path and fsyncs the
// directory, so a crash leaves either the old or the new bytes. The
// directory must exist.
func WriteAtomic(path string, data []byte, perm fs.FileMode) error {
	return WriteAtomicOwned(path, data, perm, -1, -1)
}

// WriteAtomicOwned is WriteAtomic that also gives the file owner uid and
// group gid (before the rename, so it never appears with another owner);
// -1 leaves that id as the writing process's. It is atomicfile.Replace,
// whose folder fsync error counts here: an owned file whose rename may not
// survive a crash is a failed write.
func WriteAtomicOwned(path string, data []byte, perm fs.FileMode, uid, gid int) error {
	return atomicfile.Replace(path, data, perm, uid, gid)
}

// Remove deletes path (absent is fine) and fsyncs its directory.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// isTempOf reports whether name is a temporary file WriteAtomic makes for
// a file named base (atomicfile.TempPattern): "." + base + ".tmp-" +
// digits, nothing else.
func isTempOf(name, base string) bool {
	rest, ok := strings.CutPrefix(name, "."+base+".tmp-")
	if !ok || rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// RemoveStaleTemps removes the temporary files a killed WriteAtomic of
// path left next to it (regular files named exactly as atomicfile.TempPattern makes
// them; nothing else) and returns their paths. The caller holds hostprep's
// lock, so no write of path is in progress.
func RemoveStaleTemps(path string) ([]string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range ents {
		if !e.Type().IsRegular() || !isTempOf(e.Name(), base) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}
