package hostconf

import (
	"os"
	"path"
	"strings"
)

// SysvInitDir is where systemd-sysv-generator looks for SysV init
// scripts (SYSTEM_SYSVINIT_PATH), and SysvGeneratedDir where it writes
// the units it makes of them (its "late" output directory).
const (
	SysvInitDir      = "/etc/init.d"
	SysvGeneratedDir = "/run/systemd/generator.late"
)

// generatorDirs are systemd 252's system generator directories in
// precedence order (as `systemd-analyze unit-paths --generators` would
// list them on Debian's split-usr build): a generator's name in an
// earlier one hides it in later ones, and one linked to /dev/null (or
// empty) there is masked.
var generatorDirs = []string{"/run/systemd/system-generators", "/etc/systemd/system-generators", "/usr/local/lib/systemd/system-generators",
	"/lib/systemd/system-generators", "/usr/lib/systemd/system-generators"}

// sysvGeneratorRuns says whether systemd-sysv-generator runs at boot in
// the tree: the first generator directory that has it holds an
// executable, not a mask.
func sysvGeneratorRuns(t tree) bool {
	for _, d := range generatorDirs {
		p := path.Join(d, "systemd-sysv-generator")
		if b, ok := t.overlay[p]; ok && b == nil {
			continue
		}
		r := resolve(t.root, p) // links followed inside the root (an image's /lib -> /usr/lib)
		if r == "/dev/null" {
			return false
		}
		fi, err := os.Stat(hostPath(t.root, r))
		if err != nil {
			continue
		}
		return fi.Mode().IsRegular() && fi.Size() > 0
	}
	return false
}

// sysvScript is the SysV init script systemd-sysv-generator (systemd
// 252's enumerate_sysv) makes unit of at boot, relative to the root, ""
// when none: a regular file (links followed) in SysvInitDir, executable
// by its owner, not a hidden or backup file (hidden_or_backup_file), whose
// name, without a ".sh" suffix, is the unit's with ".service"
// (sysv_translate_name). None when the unit directories have the unit
// (frag, its fragment as unitNames finds it, is not ""): the generator
// skips a script with a native unit, a mask included.
func sysvScript(t tree, unit, frag string) string {
	stem, ok := strings.CutSuffix(unit, ".service")
	if frag != "" || !ok || !sysvGeneratorRuns(t) {
		return ""
	}
	dir := resolve(t.root, SysvInitDir)
	for _, name := range []string{stem, stem + ".sh"} {
		if hiddenOrBackup(name) || strings.HasSuffix(stem, ".sh") && name == stem { // x.sh is x.service's
			continue
		}
		p := path.Join(SysvInitDir, name)
		if b, ok := t.overlay[p]; ok && b == nil {
			continue
		}
		fi, err := os.Stat(hostPath(t.root, resolve(t.root, path.Join(dir, name))))
		if err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o100 != 0 {
			return p
		}
	}
	return ""
}

// hiddenOrBackup is systemd 252's hidden_or_backup_file: a name starting
// with "." or ending in "~" or a backup suffix that package managers and
// editors leave.
func hiddenOrBackup(name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") {
		return true
	}
	switch name {
	case "lost+found", "aquota.user", "aquota.group":
		return true
	}
	dot := strings.LastIndex(name, ".")
	if dot < 0 {
		return false
	}
	switch name[dot+1:] {
	case "rpmnew", "rpmsave", "rpmorig", "dpkg-old", "dpkg-new", "dpkg-tmp", "dpkg-dist", "dpkg-bak", "dpkg-backup", "dpkg-remove",
		"ucf-new", "ucf-old", "ucf-dist", "swp", "bak", "old", "new":
		return true
	}
	return false
}
