package boot_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/tune/boot"
)

// TestUnitDirsAreSystemdsOrder: boot.UnitDirs is the order
// `systemd-analyze unit-paths` prints (Debian's systemd 252: /lib before
// /usr/lib). It was /usr/lib first, so on an unmerged image hostprep
// took /usr/lib's unit file and drop-ins where systemd takes /lib's.
func TestUnitDirsAreSystemdsOrder(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skipf("systemd-analyze is needed: %v", err)
	}
	out, err := exec.Command("systemd-analyze", "unit-paths").Output()
	if err != nil {
		t.Skipf("systemd-analyze unit-paths: %v", err)
	}
	got := strings.Fields(string(out))
	if !slices.Equal(got, boot.UnitDirs) {
		t.Errorf("systemd-analyze unit-paths:\n%s\nboot.UnitDirs:\n%s", strings.Join(got, "\n"), strings.Join(boot.UnitDirs, "\n"))
	}
}

// On an unmerged image (/lib a directory of its own) with a unit file
// and drop-ins of the same names in /lib and /usr/lib, /lib's win.
func TestUnmergedLibUnitFirst(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/lib/systemd/system/a.service":                 "[Service]\nLimitNOFILE=1000\n",
		"/usr/lib/systemd/system/a.service":             "[Service]\nLimitNOFILE=2000\n",
		"/lib/systemd/system/b.service":                 "[Service]\n",
		"/lib/systemd/system/b.service.d/50-x.conf":     "[Service]\nLimitNOFILE=3000\n",
		"/usr/lib/systemd/system/b.service.d/50-x.conf": "[Service]\nLimitNOFILE=4000\n",
	})
	for unit, want := range map[string]string{"a.service": "1000:1000 /lib/systemd/system/a.service:2", "b.service": "3000:3000 /lib/systemd/system/b.service.d/50-x.conf:2"} {
		got, _, err := boot.UnitNofile(root, unit)
		must(t, err)
		if s := got.String() + " " + got.Where(); s != want {
			t.Errorf("%s: %s, want %s", unit, s, want)
		}
	}
}

// On a merged image (/lib -> usr/lib) systemd names a unit file by the
// first unit directory it is found in: /lib/systemd/system/NAME.
func TestMergedLibNamesUnitFile(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/lib":                              "symlink to usr/lib",
		"/usr/lib/systemd/system/a.service": "[Service]\nLimitNOFILE=1000\n",
	})
	got, files, err := boot.UnitNofile(root, "a.service")
	must(t, err)
	if !strings.Contains(got.Where(), "(as /lib/systemd/system/a.service)") || len(files) == 0 || files[0].Path != "/lib/systemd/system/a.service" {
		t.Errorf("merged image: %s at %s (files %+v), want it named /lib/systemd/system/a.service", got, got.Where(), files)
	}
}
