package tune

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// A directory where hostprep keeps a file of its own, or a file where it
// needs a directory, stops apply before anything changes, with the fix:
// move it away (hostprep never removes what it did not write). Field
// case: "tune: reading …/60-hostprep.conf: read …: is a directory".
func TestOwnedPathBlockedNamesTheFix(t *testing.T) {
	for _, c := range []struct {
		name, profile, dir, file string
	}{
		{"a directory at hostprep's sysctl.d file", "sys-tune", "etc/sysctl.d/60-hostprep.conf", ""},
		{"a file at a drop-in directory", "mqtt-broker-1m", "", "etc/systemd/system/emqx.service.d"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			if c.dir != "" {
				must(t, os.MkdirAll(filepath.Join(h.root, c.dir), 0o755))
			}
			if c.file != "" {
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(h.root, c.file)), 0o755))
				must(t, os.WriteFile(filepath.Join(h.root, c.file), []byte("x"), 0o644))
			}
			p, err := profiles.Load(c.profile, nil)
			must(t, err)
			before := h.snapshot()
			_, err = h.apply(p)
			wantCode(t, err, exitcode.Environment, "move it away", "hostprep never removes what it did not write")
			if after := h.snapshot(); !reflect.DeepEqual(before, after) {
				t.Errorf("apply changed the host before it stopped")
			}
		})
	}
}

// Directories hostprep creates are 0755 whatever the umask: under umask
// 077 a 0700 /etc/security or /etc/sysctl.d in an image hides every file
// in it from the users and services that need them.
func TestCreatedDirectoriesIgnoreTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	img, env := newImage(t, nil)
	p, err := profiles.Load("mqtt-broker-1m", nil)
	must(t, err)
	_, err = Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	must(t, filepath.WalkDir(img, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == img {
			return err
		}
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, want 0755", path, fi.Mode().Perm())
		}
		return nil
	}))
}
