package tune

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

// An owned file masked with a link to /dev/null (0666, world-writable) is
// replaced by a 0644 file owned by the writer, never by one with the
// device's mode: any user could otherwise add sysctl or limits lines that
// the next boot applies as root.
func TestMaskedFileIsReplacedNotWorldWritable(t *testing.T) {
	h := newHost(t, nil)
	for _, f := range []string{files.SysctlConf, files.LimitsConf} {
		must(t, os.Symlink("/dev/null", filepath.Join(h.root, f)))
	}
	_, err := h.apply(&profiles.Profile{Name: "m",
		Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: "8192", Mode: profiles.AtLeast}},
		Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 524288}}})
	must(t, err)
	for _, f := range []string{files.SysctlConf, files.LimitsConf} {
		fi, err := os.Lstat(filepath.Join(h.root, f))
		must(t, err)
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s after apply over a /dev/null mask: %v, want a regular 0644 file", f, fi.Mode())
		}
	}
}
