package tune

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// loopIsBadInput turns err, in image mode, into bad input (exit 2) when
// it is a symbolic link loop in the image (ELOOP, "too many levels of
// symbolic links"): the image's own links are wrong, not the build host.
// The message names the path and the fix. Other errors, and all on a
// live host, are returned as they are.
func (e Env) loopIsBadInput(err error) error {
	if err == nil || !e.ImageMode() || !errors.Is(err, syscall.ELOOP) {
		return err
	}
	path := ""
	var pe *fs.PathError
	if errors.As(err, &pe) {
		path = loopingLink(pe.Path)
	}
	if path == "" {
		return exitcode.BadInputf("--root %s: a symbolic link loop in the image (%v); nothing was changed: fix the link so that it leads to a file or directory", e.Root, err)
	}
	return exitcode.BadInputf("--root %s: %s is a symbolic link loop (too many levels of symbolic links); nothing was changed: fix the link in the image so that it leads to a file or directory, or remove it", e.Root, e.relPath(path))
}

// loopingLink is the outermost symbolic link on path that cannot be
// resolved for a loop (ELOOP), or path itself when none is found.
func loopingLink(path string) string {
	var chain []string
	for d := filepath.Clean(path); d != filepath.Dir(d); d = filepath.Dir(d) {
		chain = append(chain, d)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		fi, err := os.Lstat(chain[i])
		if err != nil {
			break
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if _, err := os.Stat(chain[i]); errors.Is(err, syscall.ELOOP) {
				return chain[i]
			}
		}
	}
	return path
}
