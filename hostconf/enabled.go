package hostconf

import (
	"os"
	"path"
	"slices"
	"sort"
	"strings"
)

// wantsDirs are the unit directories whose *.wants and *.requires
// directories pull units into the boot (`systemctl enable` writes
// /etc/systemd/system/TARGET.wants/UNIT; packages ship links in
// /lib/systemd/system).
var wantsDirs = []string{"/etc/systemd/system", "/run/systemd/system", "/usr/local/lib/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"}

// sysvStartDirs are the runlevel directories whose S links start SysV
// init scripts at boot (multi-user runlevels 2-5).
var sysvStartDirs = []string{"/etc/rc2.d", "/etc/rc3.d", "/etc/rc4.d", "/etc/rc5.d"}

// enabled is the entry that makes unit (a service name) start at the
// next boot, relative to the root: a link (or file) named for it in a
// *.wants or *.requires directory, or an S link of its SysV script in
// /etc/rc[2-5].d; "" when none does, or the unit is masked.
func (h *Host) enabled(unit string) string {
	if files, err := unitFiles(h.tree(), unit); err == nil && len(files) > 0 && files[0].Masked {
		return ""
	}
	for _, e := range h.enabledUnits() {
		if path.Base(e) == unit {
			return e
		}
	}
	name := strings.TrimSuffix(unit, ".service")
	for _, d := range sysvStartDirs {
		ents, _ := os.ReadDir(hostPath(h.Root, resolve(h.Root, d)))
		for _, e := range ents {
			if n := e.Name(); strings.HasPrefix(n, "S") && strings.TrimLeft(n[1:], "0123456789") == name {
				return path.Join(d, n)
			}
		}
	}
	return ""
}

// enabledUnits are the entries of the *.wants and *.requires
// directories of wantsDirs (paths relative to the root), each unit's
// first one, sorted by unit name.
func (h *Host) enabledUnits() []string {
	seen := map[string]string{}
	for _, d := range wantsDirs {
		rd := resolve(h.Root, d)
		ents, _ := os.ReadDir(hostPath(h.Root, rd))
		for _, e := range ents {
			if !e.IsDir() || !(strings.HasSuffix(e.Name(), ".wants") || strings.HasSuffix(e.Name(), ".requires")) {
				continue
			}
			sub := path.Join(d, e.Name())
			units, _ := os.ReadDir(hostPath(h.Root, path.Join(rd, e.Name())))
			for _, u := range units {
				if _, ok := seen[u.Name()]; !ok && strings.HasSuffix(u.Name(), ".service") {
					seen[u.Name()] = path.Join(sub, u.Name())
				}
			}
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = seen[n]
	}
	return out
}

// sysvStarted are the SysV init scripts /etc/rc[2-5].d starts at boot
// (relative to the root, "/etc/init.d/NAME"), each once, sorted.
func (h *Host) sysvStarted() []string {
	var out []string
	for _, d := range sysvStartDirs {
		ents, _ := os.ReadDir(hostPath(h.Root, resolve(h.Root, d)))
		for _, e := range ents {
			n := e.Name()
			if !strings.HasPrefix(n, "S") {
				continue
			}
			s := path.Join("/etc/init.d", strings.TrimLeft(n[1:], "0123456789"))
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	sort.Strings(out)
	return out
}
