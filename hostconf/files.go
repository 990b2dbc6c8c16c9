package hostconf

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// ConfFile is one configuration file a boot program reads, in the order it
// reads them.
type ConfFile struct {
	// Path is where the program finds it, relative to the root
	// ("/etc/sysctl.d/99-sysctl.conf").
	Path string
	// Target is the file Path resolves to through symlinks, relative to the
	// root ("/etc/sysctl.conf"); equal to Path for a plain file. It is the
	// file to edit.
	Target string
	// Masked is true for a symlink to /dev/null: it is read as empty and,
	// like any file, hides files of the same name in later directories.
	Masked bool
	// Broken, for a unit file (UnitNofile), says where and why systemd
	// fails to parse it ("FILE:LINE: invalid section header ..."): the
	// unit then fails to load and is never started. "" otherwise.
	Broken string
	// SysV, for a unit file systemd-sysv-generator makes at boot, is the
	// SysV init script it makes it of ("/etc/init.d/mosquitto"); the
	// file itself (Path, in its output directory) may not exist yet.
	SysV string
	// Mask, for a masked unit file (UnitNofile), is the mask itself
	// (relative to the root): the empty file or the link to /dev/null
	// where the unit's name, or the name an alias of it leads to, was
	// found ("/lib/systemd/system/ssh.service" for sshd.service).
	Mask string
}

// Name is how a report names the file: Target, with Path when they differ
// ("/etc/sysctl.conf (as /etc/sysctl.d/99-sysctl.conf)").
func (f ConfFile) Name() string {
	if f.SysV != "" {
		return f.Path + " (made by systemd-sysv-generator of " + f.SysV + ")"
	}
	if f.Target == f.Path || f.Target == "" {
		return f.Path
	}
	return f.Target + " (as " + f.Path + ")"
}

// hostPath maps a path relative to root onto the file system.
func hostPath(root, p string) string {
	if root == "" || root == "/" {
		return p
	}
	return filepath.Join(root, p)
}

// resolve follows symlinks in p (absolute, relative to root) component by
// component, with absolute link targets taken relative to root as
// chroot(2) would. It returns the resolved path relative to root, or
// "/dev/null" when the chain ends there. Broken links resolve to their
// (missing) target.
// Resolve is p (a path relative to root) with every symbolic link
// followed inside root, as the programs that read configuration at boot
// see it: an absolute link target names a file of the tree under root,
// not of the host running hostprep; a link to /dev/null stays /dev/null.
func Resolve(root, p string) string { return resolve(root, p) }

func resolve(root, p string) string {
	p = path.Clean("/" + p)
	done := "/"
	rest := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for hops := 0; len(rest) > 0 && hops < 40; {
		c := rest[0]
		rest = rest[1:]
		if c == "" || c == "." {
			continue
		}
		next := path.Join(done, c)
		if next == "/dev/null" && len(rest) == 0 {
			return next
		}
		t, err := os.Readlink(hostPath(root, next))
		if err != nil {
			done = next
			continue
		}
		hops++
		if !path.IsAbs(t) {
			t = path.Join(done, t)
		}
		rest = append(strings.Split(strings.TrimPrefix(path.Clean(t), "/"), "/"), rest...)
		done = "/"
	}
	return done
}

// listing is how a program lists the *.conf files of its directories.
type listing int

const (
	// listDropIns is systemd's conf_files_list with
	// CONF_FILES_REGULAR|CONF_FILES_FILTER_MASKED (system.conf.d, unit
	// drop-ins): hidden names skipped, a name that is not a regular file
	// once links are followed (a directory, a broken link) skipped and
	// hiding nothing.
	listDropIns listing = iota
	// listSystemdSysctl is systemd-sysctl 252's conf_files_list_strv with
	// no flags: hidden names skipped, every other *.conf name listed
	// whatever it is, so a broken link or a directory named X.conf hides
	// X.conf in later directories and is read as nothing (measured with
	// the real systemd-sysctl: TestSysctlOracle).
	listSystemdSysctl
	// listProcps is procps `sysctl --system`: hidden names read too, every
	// name listed (a broken link or a directory hides later ones and sets
	// nothing).
	listProcps
	// listPam is pam_limits' glob("/etc/security/limits.d/*.conf"): no
	// GLOB_PERIOD, so hidden names are skipped; every other name listed
	// (a broken link then fails the session: Nofile.Broken).
	listPam
)

// listConfDirs lists the *.conf files of dirs (relative to root) the way
// the program how names reads them (see listing): a basename found in an
// earlier directory hides the same name in later ones; a name that points
// to /dev/null is kept as Masked (it still hides later ones). The result
// is sorted by basename in C-locale (byte) order. Directories that
// resolve to one already listed (/lib -> usr/lib) are read once.
func listConfDirs(t tree, dirs []string, how listing) []ConfFile {
	root := t.root
	seen := map[string]bool{}
	byName := map[string]ConfFile{}
	for _, d := range dirs {
		rd := resolve(root, d)
		if seen[rd] {
			continue
		}
		seen[rd] = true
		ents, _ := os.ReadDir(hostPath(root, rd))
		names := make([]string, 0, len(ents))
		for _, e := range ents {
			names = append(names, e.Name())
		}
		for p, b := range t.overlay {
			if path.Dir(p) == d && b != nil {
				names = append(names, path.Base(p))
			}
		}
		for _, name := range names {
			if b, ok := t.overlay[path.Join(d, name)]; ok {
				if b != nil && byName[name].Path == "" && strings.HasSuffix(name, ".conf") {
					byName[name] = ConfFile{Path: path.Join(d, name), Target: path.Join(d, name)}
				}
				if b == nil {
					continue
				}
			}
			if !strings.HasSuffix(name, ".conf") || (how != listProcps && strings.HasPrefix(name, ".")) {
				continue
			}
			if _, ok := byName[name]; ok {
				continue
			}
			p := path.Join(d, name)
			f := ConfFile{Path: p, Target: resolve(root, p)}
			if f.Target == "/dev/null" {
				f.Masked = true
				byName[name] = f
				continue
			}
			st, err := os.Stat(hostPath(root, f.Target))
			if how == listDropIns && (err != nil || !st.Mode().IsRegular()) {
				// systemd lists drop-ins by name without a stat: a dangling
				// link or a directory named X.conf hides the X.conf of later
				// directories and sets nothing itself (measured with systemd
				// --test: hostprep's drop-in hidden that way was not applied)
				f.Masked = true
			}
			byName[name] = f
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]ConfFile, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out
}

// tree is a root directory with some files replaced: overlay maps a path
// relative to the root to the bytes it will have (nil: absent), so a plan
// can see the boot that follows its apply before it writes anything.
type tree struct {
	root    string
	overlay map[string][]byte
}

// readLines reads f's lines, split at each newline as fgets and getline
// do (nil for a masked or missing file).
func readLines(t tree, f ConfFile) ([]string, error) {
	b, err := readConf(t, f)
	if b == nil || err != nil {
		return nil, err
	}
	return strings.Split(string(b), "\n"), nil
}

// readSystemdLines reads f's lines as systemd's read_line does
// (systemdLines): nil for a masked or missing file. config_parse fails a
// file at a line of LONG_LINE_MAX bytes or more (read_line: ENOBUFS,
// "Line too long"): only the lines before it are returned, and long
// says so (the lines before it count: configLines, fileFails).
func readSystemdLines(t tree, f ConfFile) (lines []string, long bool, err error) {
	b, err := readConf(t, f)
	if b == nil || err != nil {
		return nil, false, err
	}
	lines, long = systemdLinesLong(b, longLineMax)
	return lines, long, nil
}

// readConf is f's bytes (nil for a masked or missing file, or a
// directory named *.conf, which reads as empty: fgets fails at once).
func readConf(t tree, f ConfFile) ([]byte, error) {
	if f.Masked {
		return nil, nil
	}
	if b, ok := t.overlay[f.Target]; ok {
		return b, nil
	}
	b, err := os.ReadFile(hostPath(t.root, f.Target))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EISDIR) {
		return nil, nil
	}
	if b == nil && err == nil {
		b = []byte{}
	}
	return b, err
}

// systemdLines splits b into lines as systemd 252's read_line_full
// (src/basic/fileio.c) does: a line ends at a run of end-of-line bytes —
// \n, \r and NUL — in which each kind appears at most once and NUL
// ends the run ("\r\n" and "\n\r" are one end, "\n\n" two, a bare
// \r or NUL one). With limit above 0, a line of limit bytes or more is
// an error (ENOBUFS): only the lines before it are returned.
func systemdLines(b []byte, limit int) []string {
	out, _ := systemdLinesLong(b, limit)
	return out
}

// systemdLinesLong is systemdLines, and whether it stopped at a line of
// limit bytes or more.
func systemdLinesLong(b []byte, limit int) (out []string, long bool) {
	var cur []byte
	const lf, cr, nul = 1, 2, 4
	prev := 0
	for _, c := range b {
		if limit > 0 && len(cur) >= limit {
			return out, true
		}
		kind := 0
		switch c {
		case '\n':
			kind = lf
		case '\r':
			kind = cr
		case 0:
			kind = nul
		}
		if prev&nul != 0 || (kind == 0 && prev != 0) || (kind != 0 && prev&kind != 0) {
			out = append(out, string(cur))
			cur, prev = cur[:0:0], 0
		}
		if kind != 0 {
			prev |= kind
			continue
		}
		cur = append(cur, c)
	}
	if limit > 0 && len(cur) >= limit {
		return out, true
	}
	if len(cur) > 0 || prev != 0 {
		out = append(out, string(cur))
	}
	return out, false
}

// longLineMax is systemd's LONG_LINE_MAX, the longest line read_line
// takes (1 MiB).
const longLineMax = 1 << 20

// readSysctlLines is readSystemdLines for systemd-sysctl, whose
// parse_file stops at a line too long ("Failed to read file, ignoring"):
// the lines before it count, the rest of the file does not.
func readSysctlLines(t tree, f ConfFile) ([]string, error) {
	b, err := readConf(t, f)
	if b == nil || err != nil {
		return nil, err
	}
	return systemdLines(b, longLineMax), nil
}

func statHost(root, p string) (os.FileInfo, error) {
	if p == "/dev/null" {
		return os.Stat("/dev/null")
	}
	return os.Stat(hostPath(root, p))
}
