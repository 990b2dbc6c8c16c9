package hostconf_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// TestUnitDirsAreSystemdsOrder: hostconf.UnitDirs is the order
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
	if !slices.Equal(got, hostconf.UnitDirs) {
		t.Errorf("systemd-analyze unit-paths:\n%s\nboot.UnitDirs:\n%s", strings.Join(got, "\n"), strings.Join(hostconf.UnitDirs, "\n"))
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
		got, _, err := hostconf.UnitNofile(root, unit)
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
	got, files, err := hostconf.UnitNofile(root, "a.service")
	must(t, err)
	if !strings.Contains(got.Where(), "(as /lib/systemd/system/a.service)") || len(files) == 0 || files[0].Path != "/lib/systemd/system/a.service" {
		t.Errorf("merged image: %s at %s (files %+v), want it named /lib/systemd/system/a.service", got, got.Where(), files)
	}
}

// A unit file the overlay marks absent (nil: what tune's next-boot view
// does to the files now on /run, a tmpfs) is not read: a transient
// unit's /run/systemd/transient/NAME makes no unit after a reboot, and
// without it a unit file later in the search path is the one loaded.
// The unit map read the unit directories from disk, so a unit whose only
// file was on /run still counted as installed after the reboot.
func TestOverlayAbsentUnitFileIsNotRead(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/run/systemd/transient/a.service": "[Service]\nLimitNOFILE=1000\n",
		"/run/systemd/system/b.service":    "[Service]\nLimitNOFILE=2000\n",
		"/lib/systemd/system/b.service":    "[Service]\nLimitNOFILE=3000\n",
	})
	gone := map[string][]byte{"/run/systemd/transient/a.service": nil, "/run/systemd/system/b.service": nil}
	for unit, want := range map[string][2]string{
		"a.service": {"/run/systemd/transient/a.service", ""},
		"b.service": {"/run/systemd/system/b.service", "/lib/systemd/system/b.service"},
	} {
		for i, overlay := range []map[string][]byte{nil, gone} {
			_, files, err := hostconf.UnitNofileOverlay(root, unit, overlay)
			must(t, err)
			got := ""
			if len(files) > 0 && hostconf.IsUnitFile(files[0].Path, unit) {
				got = files[0].Path
			}
			if got != want[i] {
				t.Errorf("%s with overlay %v: unit file %q, want %q", unit, overlay, got, want[i])
			}
		}
	}
}
