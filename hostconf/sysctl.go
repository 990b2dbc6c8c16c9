package hostconf

import (
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/hostprep/hostprep/internal/sysctlkey"
)

// Loader is the program that applies sysctl.d files at boot.
type Loader string

const (
	// SystemdSysctl is systemd-sysctl.service (systemd 252 rules).
	SystemdSysctl Loader = "systemd-sysctl"
	// ProcpsSystem is procps `sysctl --system` (procps-ng 4.0), run by
	// the init script of hosts without systemd.
	ProcpsSystem Loader = "sysctl --system"
)

// SysctlDirs are the sysctl.d directories in precedence order (earlier
// shadows later), as sysctl.d(5) and sysctl(8) list them.
var SysctlDirs = []string{"/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d", "/lib/sysctl.d"}

// SysctlConf is the file procps reads last and Debian links as
// /etc/sysctl.d/99-sysctl.conf for systemd-sysctl.
const SysctlConf = "/etc/sysctl.conf"

// SysctlSetting is the assignment of one key that is in force after boot.
type SysctlSetting struct {
	// Key as the kernel spells it (net.core.somaxconn).
	Key string
	// Value as written in the file, surrounding blanks removed.
	Value string
	// File is the file that sets it and Line its 1-based line.
	File ConfFile
	Line int
	// Glob is the pattern when a glob line sets the key
	// (net.ipv4.conf.*.rp_filter); empty for an explicit key.
	Glob string
	// IgnoreFailure is true for a "-key = value" line: a refusal by the
	// kernel (no such key, EINVAL) is not an error at boot.
	IgnoreFailure bool
}

// Where is "FILE:LINE" for messages.
func (s SysctlSetting) Where() string {
	return fmt.Sprintf("%s:%d", s.File.Name(), s.Line)
}

// Sysctl is the sysctl configuration a host applies at boot.
type Sysctl struct {
	// Root the files were read under ("" = /).
	Root string
	// Loader is the program whose rules were used.
	Loader Loader
	// Files in the order they are applied.
	Files []ConfFile
	// explicit maps a normalized key (path form, net/core/somaxconn) to
	// its assignment; a nil value is a "-key" exclusion from globs.
	explicit map[string]*SysctlSetting
	// globs in the order systemd-sysctl applies them.
	globs []*SysctlSetting
	// writes is every line procps keeps, in order.
	writes []procpsWrite
	tree   tree
	// Dir says whether /proc/sys/DIR ("net/ipv4") is a directory on the
	// kernel that boots: procps opens a key's path as it is written, so
	// a ".." in it is followed by the kernel, which needs the directory
	// before it to exist ("net/ipv4/../core/somaxconn" is somaxconn,
	// "net/nosuch/../core/somaxconn" nothing). nil: every directory a key
	// names exists. systemd-sysctl refuses a key with ".." whatever.
	Dir func(dir string) bool
}

// DetectLoader says which program applies sysctl.d at boot on the host
// under root: systemd-sysctl when it is installed
// (ROOT/lib/systemd/systemd-sysctl or ROOT/usr/lib/systemd/systemd-sysctl),
// else procps `sysctl --system`.
func DetectLoader(root string) Loader {
	for _, p := range []string{"/usr/lib/systemd/systemd-sysctl", "/lib/systemd/systemd-sysctl"} {
		if _, err := os.Stat(hostPath(root, resolve(root, p))); err == nil {
			return SystemdSysctl
		}
	}
	return ProcpsSystem
}

// ReadSysctl reads the sysctl configuration under root ("" = /) with the
// loader DetectLoader finds. Errors: a configuration file that exists but
// cannot be read (the message names it).
func ReadSysctl(root string) (*Sysctl, error) {
	return ReadSysctlWith(root, DetectLoader(root))
}

// ReadSysctlWith is ReadSysctl with the loader given.
func ReadSysctlWith(root string, loader Loader) (*Sysctl, error) {
	return ReadSysctlOverlay(root, loader, nil)
}

// ReadSysctlOverlay is ReadSysctlWith as if the files in overlay (paths
// relative to root, "/etc/sysctl.d/60-hostprep.conf") had the given bytes
// (nil: absent): what the boot after an apply that writes them will read.
func ReadSysctlOverlay(root string, loader Loader, overlay map[string][]byte) (*Sysctl, error) {
	t := tree{root: root, overlay: overlay}
	s := &Sysctl{Root: root, Loader: loader, explicit: map[string]*SysctlSetting{}, tree: t}
	s.Files = listConfDirs(t, SysctlDirs, sysctlListing(loader))
	if loader == ProcpsSystem {
		if st, err := os.Stat(hostPath(root, resolve(root, SysctlConf))); err == nil && st.Mode().IsRegular() {
			s.Files = append(s.Files, ConfFile{Path: SysctlConf, Target: resolve(root, SysctlConf)})
		}
	}
	read := readLines // procps: fgets
	if loader == SystemdSysctl {
		read = readSysctlLines
	}
	for _, f := range s.Files {
		lines, err := read(t, f)
		if err != nil {
			return nil, fmt.Errorf("boot: reading %s: %w", f.Name(), err)
		}
		for i, l := range lines {
			if loader == SystemdSysctl {
				s.systemdLine(f, i+1, l)
			} else {
				s.procpsLine(f, i+1, l)
			}
		}
	}
	return s, nil
}

// sysctlListing is how loader lists sysctl.d.
func sysctlListing(loader Loader) listing {
	if loader == SystemdSysctl {
		return listSystemdSysctl
	}
	return listProcps
}

// systemdSpace is systemd's WHITESPACE, what its strstrip removes: not
// \v, \f or a non-ASCII space (a value keeps a trailing U+00A0, which the
// kernel then refuses).
const systemdSpace = " \t\n\r"

// cSpace is isspace in the C locale, what procps strips.
const cSpace = " \t\n\v\f\r"

// systemdLine parses one line as systemd-sysctl 252 does (parse_file).
func (s *Sysctl) systemdLine(f ConfFile, n int, line string) {
	p := strings.Trim(line, systemdSpace)
	if p == "" || strings.ContainsRune("#;", rune(p[0])) {
		return
	}
	key, value, hasValue := strings.Cut(p, "=")
	ignore := false
	if strings.HasPrefix(key, "-") {
		ignore, key = true, key[1:]
	} else if !hasValue {
		return // "Line is not an assignment, ignoring"
	}
	key = NormalizeSysctlKey(strings.Trim(key, systemdSpace))
	if key == "" {
		return
	}
	if !hasValue {
		s.explicit[key] = nil // "-key": excluded from globs, unset
		s.removeGlob(key)
		return
	}
	set := &SysctlSetting{Key: DottedKey(key), Value: strings.Trim(value, systemdSpace), File: f, Line: n, IgnoreFailure: ignore}
	if isGlob(key) {
		set.Glob = set.Key
		for i, g := range s.globs {
			if NormalizeSysctlKey(g.Glob) == key {
				if g.Value == set.Value {
					g.IgnoreFailure = g.IgnoreFailure || ignore
					return
				}
				s.globs = append(s.globs[:i], s.globs[i+1:]...)
				break
			}
		}
		s.globs = append(s.globs, set)
		return
	}
	if old, ok := s.explicit[key]; ok && old != nil && old.Value == set.Value {
		old.IgnoreFailure = old.IgnoreFailure || ignore
		return
	}
	s.explicit[key] = set
}

func (s *Sysctl) removeGlob(key string) {
	for i, g := range s.globs {
		if NormalizeSysctlKey(g.Glob) == key {
			s.globs = append(s.globs[:i], s.globs[i+1:]...)
			return
		}
	}
}

// procpsWrite is one line procps-ng 4.0 `sysctl --system` keeps.
type procpsWrite struct {
	set     *SysctlSetting
	path    string // "/proc/sys/" + the key with separators swapped, as procps builds it
	glob    bool
	exclude bool // "-key" without a value
}

// procpsLine parses one line as procps-ng 4.0 `sysctl --system` does
// (parse_setting_line): every line is kept in order; then explicit keys
// are written in that order (the last wins) and a glob is written to each
// key it matches that no line names with exactly the same path (an
// explicit line or a "-key" exclusion).
func (s *Sysctl) procpsLine(f ConfFile, n int, line string) {
	line, _, _ = strings.Cut(line, "\x00") // a C string ends there
	key := strings.Trim(line, cSpace)
	if key == "" || key[0] == '#' || key[0] == ';' {
		return
	}
	k, value, hasValue := strings.Cut(key, "=")
	w := procpsWrite{set: &SysctlSetting{File: f, Line: n}}
	switch {
	case !hasValue && strings.HasPrefix(k, "-"):
		w.exclude = true
		k = strings.TrimRight(k[1:], " \t\r\v\f")
	case !hasValue:
		return // "invalid syntax, continuing..."
	default:
		if strings.HasPrefix(k, "-") {
			w.set.IgnoreFailure, k = true, k[1:]
		}
		k = strings.TrimRight(k, " \t\r\v\f")
		// A \r inside the line stays in the value (the kernel then
		// refuses "1\r..."); C-locale white space around it goes, a
		// non-ASCII space stays.
		w.set.Value = strings.Trim(value, cSpace)
	}
	w.path = "/proc/sys/" + slashdot(k)
	w.glob = isGlob(w.path)
	w.set.Key = DottedKey(NormalizeSysctlKey(k))
	if w.glob {
		w.set.Glob = w.set.Key
	}
	s.writes = append(s.writes, w)
}

// slashdot is procps's slashdot(key, '.', '/'): when the first separator
// is a dot, dots and slashes swap; otherwise the key is kept (repeated
// slashes too, unlike NormalizeSysctlKey).
func slashdot(k string) string {
	i := strings.IndexAny(k, "./")
	if i < 0 || k[i] == '/' {
		return k
	}
	return sysctlkey.Swap(k)
}

// procpsLookup is Lookup for procps: the last line that matches k and
// whose value accept takes (nil: any).
func (s *Sysctl) procpsLookup(k string, accept func(string) bool) (SysctlSetting, bool) {
	p := "/proc/sys/" + k
	named := false
	for _, w := range s.writes {
		if w.path == p {
			named = true
			break
		}
	}
	for i := len(s.writes) - 1; i >= 0; i-- {
		w := s.writes[i]
		var hit bool
		switch {
		case w.exclude:
		case w.glob:
			m, _ := path.Match(w.path, p)
			hit = m && !named
		default:
			walked, ok := s.kernelWalk(w.path)
			hit = ok && walked == p
		}
		if hit && (accept == nil || accept(w.set.Value)) {
			out := *w.set
			out.Key = DottedKey(k)
			return out, true
		}
	}
	return SysctlSetting{}, false
}

// kernelWalk is the file the kernel opens for p ("/proc/sys/..."), as
// its path walk resolves it: empty and "." components skipped, ".."
// going up from a directory that exists (Dir); ok false when the walk
// fails (ENOENT), and for a ".." above /proc/sys (not modelled).
func (s *Sysctl) kernelWalk(p string) (string, bool) {
	var stack []string
	for _, c := range strings.Split(strings.TrimPrefix(p, "/proc/sys/"), "/") {
		switch c {
		case "", ".":
		case "..":
			if len(stack) == 0 || (s.Dir != nil && !s.Dir(strings.Join(stack, "/"))) {
				return "", false
			}
			stack = stack[:len(stack)-1]
		default:
			stack = append(stack, c)
		}
	}
	return "/proc/sys/" + strings.Join(stack, "/"), true
}

// Lookup returns the assignment of key (either spelling) in force after
// boot: for systemd-sysctl the explicit one, else the last glob that
// matches it; for procps the last line that matches it.
// ok is false when no file sets the key, so it keeps the kernel's default.
//
// Lookup does not know whether the key exists when the loader runs: a key
// of a module loaded later (net.netfilter.* before nf_conntrack) is
// assigned here but not set at boot; see NeedsModule.
func (s *Sysctl) Lookup(key string) (SysctlSetting, bool) {
	k := NormalizeSysctlKey(key)
	if s.Loader == ProcpsSystem {
		return s.procpsLookup(k, nil)
	}
	if set, ok := s.explicit[k]; ok {
		if set == nil {
			return SysctlSetting{}, false
		}
		return *set, true
	}
	for i := len(s.globs) - 1; i >= 0; i-- {
		g := s.globs[i]
		if m, _ := path.Match(NormalizeSysctlKey(g.Glob), k); m {
			out := *g
			out.Key = DottedKey(k)
			return out, true
		}
	}
	return SysctlSetting{}, false
}

// LookupAccepted is Lookup for a key whose values the kernel may refuse
// (accept says which it takes): procps writes every line in turn, so a
// refused last line leaves the last accepted one in force; systemd-sysctl
// writes only the assignment Lookup finds, so a refused one leaves the
// kernel's default (ok false).
func (s *Sysctl) LookupAccepted(key string, accept func(value string) bool) (SysctlSetting, bool) {
	if s.Loader == ProcpsSystem {
		return s.procpsLookup(NormalizeSysctlKey(key), accept)
	}
	set, ok := s.Lookup(key)
	if !ok || !accept(set.Value) {
		return SysctlSetting{}, false
	}
	return set, true
}

// SysctlAtBoot is the value key (net.core.somaxconn, or net/core/somaxconn)
// will have after the next boot of the host under root ("" = /), as far
// as the files say, and the file (as its Name) and 1-based line that set
// it. ok is false when no file sets it (the kernel default stays) or the
// files cannot be read.
func SysctlAtBoot(root, key string) (value, file string, line int, ok bool) {
	s, err := ReadSysctl(root)
	if err != nil {
		return "", "", 0, false
	}
	set, ok := s.Lookup(key)
	if !ok {
		return "", "", 0, false
	}
	return set.Value, set.File.Name(), set.Line, true
}

// NormalizeSysctlKey returns key in path form as systemd's
// sysctl_normalize does (sysctlkey.Path).
func NormalizeSysctlKey(key string) string { return sysctlkey.Path(key) }

// DottedKey is the kernel's dotted spelling of a path-form key
// (sysctlkey.Dotted).
func DottedKey(pathKey string) string { return sysctlkey.Dotted(pathKey) }

func isGlob(s string) bool { return strings.ContainsAny(s, "*?[") }
