package hostconf_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// TestSysvUnitOracle: a service provided only by a SysV init script in
// /etc/init.d is a unit at boot (Debian's systemd-sysv-generator writes
// NAME.service for it into /run/systemd/generator.late), so hostprep's
// drop-in reaches it. hostconf.UnitNofile found no unit file and tune judged
// such a unit "not installed" (an image, a script added since the last
// boot), warned that no unit hostprep tuned is installed, and left it
// out of apply's restart line. Now the unit file the generator makes
// counts, for exactly the scripts the real generator
// (/lib/systemd/system-generators/systemd-sysv-generator, run over the
// same tree with SYSTEMD_SYSVINIT_PATH and SYSTEMD_UNIT_PATH) makes a unit
// of: executable regular files (links followed), NAME or NAME.sh, not
// hidden or backup files, not where a native unit or a mask exists; and
// none when the generator is masked or absent.
func TestSysvUnitOracle(t *testing.T) {
	const gen = "/lib/systemd/system-generators/systemd-sysv-generator"
	if _, err := os.Stat(gen); err != nil {
		t.Skipf("%s is needed: %v", gen, err)
	}
	const script = "#!/bin/sh\n"
	tree := map[string]string{
		"/lib/systemd/system-generators/systemd-sysv-generator": "generator",
		"/etc/init.d/plain": script, "/etc/init.d/suffixed.sh": script, "/etc/init.d/noexec": script, "/etc/init.d/userexec": script,
		"/etc/init.d/.hidden": script, "/etc/init.d/backup.dpkg-old": script, "/etc/init.d/editor~": script,
		"/etc/init.d/native": script, "/lib/systemd/system/native.service": "[Service]\nExecStart=/bin/true\n",
		"/etc/init.d/masked": script, "/etc/systemd/system/masked.service": "symlink to /dev/null",
		"/etc/init.d/linked": "symlink to plain", "/etc/init.d/dangling": "symlink to nowhere",
		"/etc/init.d/inst@x": script, "/etc/init.d/Upper": script,
	}
	modes := map[string]os.FileMode{"noexec": 0o644, "userexec": 0o744}
	root := testenv.TempTree(t, tree)
	must(t, os.MkdirAll(filepath.Join(root, "etc/init.d/adir"), 0o755))
	ents, err := os.ReadDir(filepath.Join(root, "etc/init.d"))
	must(t, err)
	for _, e := range ents {
		if e.Type().IsRegular() {
			m, ok := modes[e.Name()]
			if !ok {
				m = 0o755
			}
			must(t, os.Chmod(filepath.Join(root, "etc/init.d", e.Name()), m))
		}
	}
	units := []string{"plain", "suffixed", "suffixed.sh", "noexec", "userexec", ".hidden", "backup.dpkg-old", "editor~", "native", "masked", "linked", "dangling", "adir", "inst@x", "Upper", "nosuch"}
	generated := func() map[string]bool {
		out := t.TempDir()
		for _, d := range []string{"a", "b", "c"} {
			must(t, os.MkdirAll(filepath.Join(out, d), 0o755))
		}
		cmd := exec.Command(gen, filepath.Join(out, "a"), filepath.Join(out, "b"), filepath.Join(out, "c"))
		cmd.Env = append(os.Environ(), "SYSTEMD_SYSVINIT_PATH="+filepath.Join(root, "etc/init.d"), "SYSTEMD_SYSVRCND_PATH="+filepath.Join(out, "rc"),
			"SYSTEMD_UNIT_PATH="+filepath.Join(root, "etc/systemd/system")+":"+filepath.Join(root, "lib/systemd/system"))
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", gen, err, b)
		}
		got := map[string]bool{}
		ents, _ := os.ReadDir(filepath.Join(out, "c"))
		for _, e := range ents {
			got[e.Name()] = e.Type().IsRegular()
		}
		return got
	}()
	for _, u := range units {
		unit := u + ".service"
		_, files, err := hostconf.UnitNofile(root, unit)
		must(t, err)
		sysv := len(files) > 0 && files[0].SysV != "" && hostconf.IsUnitFile(files[0].Path, unit)
		if sysv != generated[unit] {
			t.Errorf("%s: systemd-sysv-generator makes it: %v; hostconf.UnitNofile: %v (%v)", unit, generated[unit], sysv, files)
		}
		if sysv && !strings.HasPrefix(files[0].Name(), "/run/systemd/generator.late/"+unit+" (made by systemd-sysv-generator of /etc/init.d/") {
			t.Errorf("%s: unit file named %q", unit, files[0].Name())
		}
	}
	if !generated["plain.service"] || !generated["suffixed.service"] {
		t.Fatalf("the generator made no unit of /etc/init.d/plain or suffixed.sh: %v", generated)
	}
	// a masked generator, and none, make no unit at all; an image whose
	// /lib is an absolute link (/lib -> /usr/lib) is read inside the
	// image, not on the host that has the generator
	img := testenv.TempTree(t, map[string]string{"/lib": "symlink to /usr/lib", "/etc/init.d/plain": script})
	must(t, os.Chmod(filepath.Join(img, "etc/init.d/plain"), 0o755))
	if _, files, err := hostconf.UnitNofile(img, "plain.service"); err != nil || len(files) > 0 {
		t.Errorf("an image without the generator (its /lib an absolute link): %v %v", files, err)
	}
	for _, g := range []map[string]string{
		{"/etc/systemd/system-generators/systemd-sysv-generator": "symlink to /dev/null"},
		{"/lib/systemd/system-generators/systemd-sysv-generator": "symlink to nowhere"},
	} {
		testenv.WriteTree(t, root, g)
		_, files, err := hostconf.UnitNofile(root, "plain.service")
		must(t, err)
		if len(files) > 0 && files[0].SysV != "" {
			t.Errorf("with %v hostconf.UnitNofile still has the generator make plain.service: %v", g, files)
		}
	}
}
