package tune

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// The sysctl.d layer: hostprep's /etc/sysctl.d/60-hostprep.conf (or
// --persist-name) with every persisted key, fs.nr_open and fs.file-max
// first; optional keys get the "-" prefix. Written and rolled back as an
// owned file (layer_files.go); verified at boot by bootSysctlItems
// (bootcheck.go), which names any file that wins instead. An apply under
// another --persist-name moves the file: the one written under the former
// name is taken back (retireSysctlD), or it would keep its old values and,
// sorting later, win at boot over the new one.

// sysctlDWants plans the sysctl.d file.
func (pl *Plan) sysctlDWants(per journal.Persisted) []fileWant {
	if len(per.Sysctl) == 0 {
		return nil
	}
	keys := make([]string, 0, len(per.Sysctl))
	for k := range per.Sysctl {
		keys = append(keys, k)
	}
	sortKeys(keys)
	lines := make([]files.SysctlLine, len(keys))
	for i, k := range keys {
		v := per.Sysctl[k]
		lines[i] = files.SysctlLine{Key: k, Value: v.Value, Optional: v.Optional, Comment: v.Comment}
	}
	return []fileWant{{path: pl.env.sysctlConf(), data: files.RenderSysctl(pl.profiles, lines)}}
}

// warnHidden warns when hostprep's file rel (under /etc) would hide a file
// of the same name in a directory read after its own (never one read
// before it, such as /etc/systemd/system.control): sysctl.d(5),
// modules-load.d(5) and systemd's drop-in directories read only the first
// file of a name (/usr/lib/sysctl.d/99-vendor.conf for --persist-name
// 99-vendor.conf), so none of that file's settings apply at boot any more.
func (pl *Plan) warnHidden(rel string) {
	dir, name := filepath.Dir(rel), filepath.Base(rel)
	var dirs []string
	switch {
	case dir == "/etc/sysctl.d":
		dirs = hostconf.SysctlDirs
	case dir == "/etc/modules-load.d":
		dirs = hostconf.ModulesLoadDirs
	case dir == "/etc/systemd/system.conf.d":
		dirs = hostconf.ManagerDropInDirs
	case filepath.Dir(dir) == "/etc/systemd/system" && strings.HasSuffix(dir, ".d"):
		for _, u := range hostconf.UnitDirs {
			dirs = append(dirs, filepath.Join(u, filepath.Base(dir)))
		}
	}
	// only directories read after hostprep's (lower precedence) are hidden
	// by it: systemd's system.control, transient and generator.early come
	// before /etc/systemd/system and hide hostprep's drop-in instead
	// (verify --boot names such a file, hiderOf)
	if i := slices.Index(dirs, dir); i >= 0 {
		dirs = dirs[i+1:]
	}
	for _, d := range dirs {
		other := filepath.Join(d, name)
		if fi, err := os.Lstat(pl.env.path(other)); err == nil && !fi.IsDir() {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s hides %s (same name; only the first file of a name is read, /etc before /run and /usr/lib), so none of that file's settings apply at boot; rename that file, or for sysctl.d choose another --persist-name", rel, other))
		}
	}
}

// retireSysctlD plans taking back hostprep's sysctl.d files written under
// a former --persist-name (every journaled file in ROOT/etc/sysctl.d but
// this apply's): restored to its original bytes, or removed when hostprep
// created it; the new file carries every persisted key. One edited since
// hostprep wrote it is left, with a warning (it is no longer hostprep's
// to restore). Errors: exitcode.Environment when a file cannot be read.
func (pl *Plan) retireSysctlD(st *journal.State) error {
	dir, cur := pl.env.path("/etc/sysctl.d"), pl.env.path(pl.env.sysctlConf())
	var old []string
	for p := range st.Files {
		if filepath.Dir(p) == dir && p != cur {
			old = append(old, p)
		}
	}
	sort.Strings(old)
	for _, p := range old {
		j := st.Files[p]
		data, exists, err := files.Read(p)
		if err != nil {
			return ownedReadError(p, err)
		}
		if !exists || journal.SHA256(data) != j.SetSHA256 {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s, hostprep's sysctl.d file under a former --persist-name, %s; %s", p, leftReason(p, data, exists), "whatever it sets still applies at boot"))
			continue
		}
		step := fileStep{path: p, existed: true, from: data, retire: j}
		step.perm, step.owner = permOwner(p)
		to := "absent"
		if j.Existed {
			step.to, to = j.Original, describe(j.Original, true)
		}
		pl.files = append(pl.files, step)
		pl.Changes = append(pl.Changes, Change{File: p, Layer: Persistent, From: describe(data, true), To: to,
			Reason: fmt.Sprintf("hostprep's sysctl.d file under a former --persist-name; its keys move to %s", filepath.Base(cur))})
	}
	return nil
}
