package hostconf

import (
	"fmt"
	"math"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/unitname"
)

// SystemdDefaultNofile is systemd's DefaultLimitNOFILE when no file sets
// it (systemd.conf(5), systemd >= 240): soft 1024 so select() keeps
// working, hard 524288.
var SystemdDefaultNofile = NofileSetting{Soft: 1024, Hard: 524288}

// ManagerConf is the manager's main configuration file; ManagerDropInDirs
// its drop-in directories in precedence order (CONF_PATHS_NULSTR of a
// split-usr build: /usr/lib before /lib, unlike the unit directories).
var (
	ManagerConf       = "/etc/systemd/system.conf"
	ManagerDropInDirs = []string{"/etc/systemd/system.conf.d", "/run/systemd/system.conf.d", "/usr/local/lib/systemd/system.conf.d", "/usr/lib/systemd/system.conf.d", "/lib/systemd/system.conf.d"}
)

// UnitDirs are the system unit directories in precedence order (an
// earlier one's UNIT file or drop-in name hides a later one's): Debian's
// systemd 252's system search path (lookup_paths_init, as `systemd-analyze
// unit-paths` prints it), with the portable services' .attached and the
// generators' directories. Debian builds systemd with split-usr paths:
// its unit directory (SYSTEM_DATA_UNIT_DIR) is /lib/systemd/system,
// before /usr/lib/systemd/system, so on an image whose /lib is not
// /usr/lib /lib's unit files and drop-ins come first, and on a merged
// one a unit file is named /lib/systemd/system/NAME.
var UnitDirs = []string{"/etc/systemd/system.control", "/run/systemd/system.control", "/run/systemd/transient", "/run/systemd/generator.early",
	"/etc/systemd/system", "/etc/systemd/system.attached", "/run/systemd/system", "/run/systemd/system.attached", "/run/systemd/generator",
	"/usr/local/lib/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system", "/run/systemd/generator.late"}

// NofileSetting is an RLIMIT_NOFILE pair systemd gives services, with the
// line that sets it.
type NofileSetting struct {
	Soft, Hard uint64
	// Set is false when no file sets it (a default applies).
	Set  bool
	File ConfFile
	Line int
	// Infinity, when not "", says that an "infinity" soft or hard was
	// replaced with the number a service really gets, and where that
	// number comes from (Resolved).
	Infinity string
	// written is the value as the file wrote it.
	written string
}

// Written is the value as the file that sets it wrote it ("infinity",
// "1024:infinity"), also after Resolved replaced an infinity; String
// when no file sets it.
func (n NofileSetting) Written() string {
	if n.written != "" {
		return n.written
	}
	return n.String()
}

// Where is "FILE:LINE" for messages, or "systemd's built-in default".
func (n NofileSetting) Where() string {
	if !n.Set {
		return "systemd's built-in default"
	}
	return fmt.Sprintf("%s:%d", n.File.Name(), n.Line)
}

// String is "soft:hard".
func (n NofileSetting) String() string {
	f := func(v uint64) string {
		if v == Unlimited {
			return "infinity"
		}
		return strconv.FormatUint(v, 10)
	}
	return f(n.Soft) + ":" + f(n.Hard)
}

// ManagerNofile is the DefaultLimitNOFILE= the systemd manager of the
// host under root ("" = /) uses after the next boot (or `systemctl
// daemon-reexec`): /etc/systemd/system.conf, then system.conf.d/*.conf
// drop-ins (shadowing and order as `systemd-analyze cat-config
// systemd/system.conf` shows them), the last assignment in a [Manager]
// section wins; SystemdDefaultNofile when none sets it. It also returns
// the files in the order they are read. Errors: a file that exists but
// cannot be read.
func ManagerNofile(root string) (NofileSetting, []ConfFile, error) {
	return ManagerNofileOverlay(root, nil)
}

// ManagerNofileOverlay is ManagerNofile as if the files in overlay (paths
// relative to root) had the given bytes (nil: absent).
func ManagerNofileOverlay(root string, overlay map[string][]byte) (NofileSetting, []ConfFile, error) {
	t := tree{root: root, overlay: overlay}
	files := []ConfFile{{Path: ManagerConf, Target: resolve(root, ManagerConf)}}
	files = append(files, listConfDirs(t, ManagerDropInDirs, listDropIns)...)
	set, err := lastAssignment(t, files, "Manager", "DefaultLimitNOFILE")
	if err != nil {
		return set, files, err
	}
	if !set.Set {
		set = SystemdDefaultNofile
	}
	return set, files, nil
}

// UnitNofile is the LimitNOFILE= a service unit (emqx or emqx.service)
// started after the next boot gets: the unit file the first of UnitDirs
// with an entry of that name leads to (for an instance, foo@x.service,
// the template foo@.service when no directory has the instance), through
// alias links (/etc/systemd/system/sshd.service ->
// /lib/systemd/system/ssh.service, as `systemctl enable` makes them for
// Alias=); then the drop-ins of DropInNames of each of the unit's names
// in every directory — its id (the unit file's name) first, then every
// name that is an alias of the same unit file, sshd.service.d for
// ssh.service and ssh.service.d for sshd.service — and the type's
// top-level ones (service.d) after them (by basename, the first directory
// in that order hiding later ones, applied in basename order); the last
// assignment in
// a [Service] section wins, else the manager's DefaultLimitNOFILE
// (ManagerNofile). Files are returned in the order read. Errors: a file
// that exists but cannot be read.
func UnitNofile(root, unit string) (NofileSetting, []ConfFile, error) {
	return UnitNofileOverlay(root, unit, nil)
}

// UnitNofileOverlay is UnitNofile as if the files in overlay (paths
// relative to root) had the given bytes (nil: absent).
func UnitNofileOverlay(root, unit string, overlay map[string][]byte) (NofileSetting, []ConfFile, error) {
	t := tree{root: root, overlay: overlay}
	files, err := unitFiles(t, unit)
	if err != nil {
		return NofileSetting{}, files, err
	}
	set, err := lastAssignment(t, files, "Service", "LimitNOFILE")
	if err != nil || set.Set {
		return set, files, err
	}
	m, _, err := ManagerNofileOverlay(root, overlay)
	return m, files, err
}

// unitFiles are the files systemd reads for unit (a name without a type
// is a service), in order: its unit file, if any, then its drop-ins
// (UnitNofile says how they are found). Errors: a unit file that exists
// but cannot be read (returned alone).
func unitFiles(t tree, unit string) ([]ConfFile, error) {
	unit = unitname.Service(unit)
	var files []ConfFile
	frag, entry, names := buildUnitMap(t).unitNames(unit)
	if f, ok := unitFile(t, frag, entry); ok {
		why, err := fileFails(t, f)
		if err != nil {
			return []ConfFile{f}, err
		}
		f.Broken = why
		files = append(files, f)
	} else if script := sysvScript(t, unit, frag); script != "" {
		// no unit file: systemd-sysv-generator makes one of the SysV
		// script at boot (no LimitNOFILE= in it), read like any other
		p := path.Join(SysvGeneratedDir, unit)
		files = append(files, ConfFile{Path: p, Target: p, SysV: script})
	}
	// One name space and order for every drop-in directory, as systemd's
	// unit_file_find_dropin_paths builds it: per unit directory the
	// chain of the unit's id, then per unit directory the chain of each
	// other name (an alias: sshd.service for ssh.service), then the
	// type's top-level directories.
	var dropDirs []string
	for _, n := range names {
		chain := DropInNames(n)
		for _, d := range UnitDirs {
			for _, c := range chain {
				dropDirs = append(dropDirs, path.Join(d, c+".d"))
			}
		}
	}
	typ := unit[strings.LastIndex(unit, ".")+1:]
	for _, d := range UnitDirs {
		dropDirs = append(dropDirs, path.Join(d, typ+".d"))
	}
	return append(files, listConfDirs(t, dropDirs, listDropIns)...), nil
}

// unitFile is the unit file systemd loads, frag (relative to root, as
// unitNames finds it), named by entry, where the unit's name was found
// (an alias link: /etc/systemd/system/sshd.service for
// /lib/systemd/system/ssh.service). false when there is none or it is a
// link to nothing. A link to /dev/null or an empty file masks the unit
// (systemd's unit_file_load: size 0 is "masked"). A target tr's overlay
// marks absent (a file on /run the next boot does not find, linked from
// /etc) is none.
func unitFile(tr tree, frag, entry string) (ConfFile, bool) {
	if frag == "" {
		return ConfFile{}, false
	}
	t := resolve(tr.root, frag)
	if b, ok := tr.overlay[t]; ok && b == nil {
		return ConfFile{}, false
	}
	fi, err := statHost(tr.root, t)
	if err != nil || (t != "/dev/null" && !fi.Mode().IsRegular()) {
		return ConfFile{}, false
	}
	f := ConfFile{Path: entry, Target: t, Masked: t == "/dev/null" || fi.Size() == 0}
	if f.Masked {
		f.Mask = frag
	}
	return f, true
}

// TemplateOf is the template of an instance name (foo@x.service ->
// foo@.service); false for any other name.
func TemplateOf(name string) (string, bool) {
	at, dot := strings.Index(name, "@"), strings.LastIndex(name, ".")
	if at < 0 || dot < at+2 {
		return "", false
	}
	return name[:at+1] + name[dot:], true
}

// DropInNames are the unit names whose NAME.d directories systemd reads
// for unit's drop-ins, most specific first, as systemd 252's
// unit_file_find_dirs (src/shared/dropin.c) walks them: the name; for an
// instance its template's chain; then the chain of the name cut after
// its last dash, keeping the instance ("foo-bar-waldo.service":
// foo-bar-waldo.service, foo-bar-.service, foo-.service;
// "foo-bar@x.service": foo-bar@x.service, foo-bar@.service, foo-.service,
// foo-@x.service, foo-@.service). The type's top-level directory
// (service.d) is not among them: it comes after every directory's chain.
func DropInNames(unit string) []string {
	var out []string
	var walk func(name string, depth int)
	walk = func(name string, depth int) {
		out = append(out, name)
		dot := strings.LastIndex(name, ".")
		if dot <= 0 || depth > 64 {
			return
		}
		prefix, typ := name[:dot], name[dot:]
		instance := ""
		if at := strings.Index(prefix, "@"); at >= 0 {
			prefix, instance = prefix[:at], prefix[at+1:]
			if instance != "" {
				walk(prefix+"@"+typ, depth+1)
			}
		}
		// Cut after the last dash; a trailing dash is chopped off first,
		// once ("foo-bar-" -> "foo-").
		for chopped := false; ; {
			i := strings.LastIndex(prefix, "-")
			if i <= 0 {
				return // no dash, or only a leading one
			}
			if i+1 < len(prefix) || chopped {
				prefix = prefix[:i+1]
				break
			}
			prefix, chopped = prefix[:i], true
		}
		if instance != "" {
			prefix += "@" + instance
		}
		walk(prefix+typ, depth+1)
	}
	walk(unit, 0)
	return out
}

// lastAssignment finds the last KEY= line inside [section] of files.
func lastAssignment(t tree, files []ConfFile, section, key string) (NofileSetting, error) {
	var out NofileSetting
	err := eachAssignment(t, files, section, key, func(v string, f ConfFile, line int) {
		// An empty value is no reset for a resource limit: systemd's
		// config_parse_rlimit has no empty branch, so "LimitNOFILE=" is an
		// invalid value, logged ("Failed to parse resource value,
		// ignoring") and ignored like any other (systemd-analyze verify
		// shows it).
		soft, hard, ok := parseSystemdRlimit(v)
		if !ok {
			return
		}
		out = NofileSetting{Soft: soft, Hard: hard, Set: true, File: f, Line: line, written: v}
	})
	return out, err
}

// eachAssignment calls fn with the value (trimmed), file and 1-based line
// of every KEY= line inside [section] of files, in order, each file read
// as systemd 252's config_parse (src/shared/conf-parser.c) reads it.
func eachAssignment(t tree, files []ConfFile, section, key string, fn func(v string, f ConfFile, line int)) error {
	for _, f := range files {
		lines, long, err := readSystemdLines(t, f)
		if err != nil {
			return fmt.Errorf("boot: reading %s: %w", f.Name(), err)
		}
		in := ""
		for _, l := range configLines(lines, long) {
			p := strings.Trim(l.text, systemdSpace)
			if p == "" {
				continue
			}
			if parseStops(p) != "" {
				break // config_parse fails the file here: the rest is not read
			}
			if p[0] == '[' {
				if strings.HasSuffix(p, "]") {
					in = p[1 : len(p)-1]
				}
				continue
			}
			k, v, ok := strings.Cut(p, "=")
			if ok && in == section && strings.Trim(k, systemdSpace) == key {
				fn(strings.Trim(v, systemdSpace), f, l.n)
			}
		}
	}
	return nil
}

// parseStops is why systemd 252's config_parse fails a file at the
// logical line p (stripped, not a comment), "" when it reads on: a line
// that is not valid UTF-8 ("String is not UTF-8 clean"), a section
// header without a closing "]" ("Invalid section header") or whose name
// holds a control character, a backslash or a quote ("Bad characters in
// section header"). The lines before it count; for a unit file the unit
// then fails to load (measured with systemd --test: TestUnitOracle).
func parseStops(p string) string {
	if !utf8.ValidString(p) {
		return fmt.Sprintf("the line %s is not valid UTF-8", strconv.QuoteToASCII(p))
	}
	if p[0] != '[' {
		return ""
	}
	if !strings.HasSuffix(p, "]") || len(p) < 2 {
		return fmt.Sprintf("invalid section header %s", strconv.QuoteToASCII(p))
	}
	if strings.IndexFunc(p[1:len(p)-1], func(r rune) bool { return r < ' ' || r == 0x7f || r == '\\' || r == '"' || r == '\'' }) >= 0 {
		return fmt.Sprintf("bad characters in section header %s", strconv.QuoteToASCII(p))
	}
	return ""
}

// fileFails is where and why config_parse fails f ("LINE: why"), ""
// when it reads the whole file. Errors: f exists but cannot be read.
func fileFails(t tree, f ConfFile) (string, error) {
	lines, long, err := readSystemdLines(t, f)
	if err != nil {
		return "", fmt.Errorf("boot: reading %s: %w", f.Name(), err)
	}
	for _, l := range configLines(lines, long) {
		if p := strings.Trim(l.text, systemdSpace); p != "" {
			if why := parseStops(p); why != "" {
				return fmt.Sprintf("%s:%d: %s", f.Name(), l.n, why), nil
			}
		}
	}
	if long {
		return fmt.Sprintf("%s:%d: the line is %s or longer (systemd's LONG_LINE_MAX: \"Line too long\")", f.Name(), len(lines)+1, plural.N(longLineMax, "byte")), nil
	}
	return "", nil
}

// configLine is one logical line of a systemd configuration file and the
// 1-based lines it starts and ends on.
type configLine struct {
	text string
	n    int
	last int // the 1-based line it ends on (n, or later for a continuation)
}

// configLines joins lines (as read_line splits them) into the logical
// lines config_parse hands parse_line: a line whose first non-blank is #
// or ; is a comment, skipped even inside a continuation; the first line
// that starts with a UTF-8 byte order mark loses it; a line ending in an
// unescaped backslash continues on the next, the backslash becoming a
// blank; a continuation still open at the end of the file is parsed,
// unless cut says lines end before a line too long, where config_parse
// returns at once.
func configLines(lines []string, cut bool) []configLine {
	var out []configLine
	bom := false
	cont, start := "", 0
	open := false
	for i, raw := range lines {
		if c := strings.TrimLeft(raw, systemdSpace); c != "" && strings.ContainsRune("#;", rune(c[0])) {
			continue
		}
		l := raw
		if !bom {
			l, bom = strings.CutPrefix(raw, "\ufeff")
		}
		if !open {
			start = i + 1
		}
		l = cont + l
		if escapedEnd(l) {
			cont, open = l[:len(l)-1]+" ", true
			continue
		}
		out = append(out, configLine{text: l, n: start, last: i + 1})
		cont, open = "", false
	}
	if open && !cut {
		out = append(out, configLine{text: cont, n: start, last: len(lines)})
	}
	return out
}

// escapedEnd says whether l ends in a backslash that no backslash
// before it escapes.
func escapedEnd(l string) bool {
	esc := false
	for i := 0; i < len(l); i++ {
		if esc {
			esc = false
		} else if l[i] == '\\' {
			esc = true
		}
	}
	return esc
}

// LastSetting is the value of KEY= in [section] that files (as
// ManagerNofile or UnitNofile return them) leave in force, trimmed, and
// the FILE:LINE that sets it: the last assignment wins and an empty one
// resets it to "" (where "" too). "User" in "Service" is the user a unit
// runs as, "" for root. Errors: a file that exists but cannot be read.
func LastSetting(root string, files []ConfFile, section, key string) (value, where string, err error) {
	value, where, err = LastAccepted(root, files, section, key, nil)
	if value == "" {
		where = ""
	}
	return value, where, err
}

// LastAccepted is LastSetting for a key whose invalid values systemd logs
// and ignores, leaving the assignment before in force: only values accept
// takes count (accept nil takes all). An empty value resets to "" and,
// unlike in LastSetting, keeps its FILE:LINE in where, since for some
// keys (DefaultTasksMax=) an empty assignment differs from none.
func LastAccepted(root string, files []ConfFile, section, key string, accept func(v string) bool) (value, where string, err error) {
	err = eachAssignment(tree{root: root}, files, section, key, func(v string, f ConfFile, line int) {
		if v != "" && accept != nil && !accept(v) {
			return
		}
		value, where = v, fmt.Sprintf("%s:%d", f.Name(), line)
	})
	return value, where, err
}

// ParseNofile parses a LimitNOFILE=/DefaultLimitNOFILE= value as systemd
// 252 does (rlimit_parse): "N", "SOFT:HARD" (soft <= hard) or "infinity"
// (Unlimited), in file descriptors, each number read as safe_atou64
// reads it (base 0 and systemd's own prefixes: "0x1000", "010000",
// "0o10000" and "0b1000000000000" are 4096; a leading "+"; "-0" is 0); ok
// is false for anything else.
func ParseNofile(v string) (soft, hard uint64, ok bool) { return parseSystemdRlimit(v) }

// parseSystemdRlimit parses "N", "S:H" or "infinity" as systemd does.
func parseSystemdRlimit(v string) (soft, hard uint64, ok bool) {
	one := func(s string) (uint64, bool) {
		if s == "infinity" {
			return Unlimited, true
		}
		n, ok := safeAtou64(s)
		return n, ok && n != Unlimited // RLIM_INFINITY only as "infinity"
	}
	s, h, pair := strings.Cut(v, ":")
	soft, ok1 := one(s)
	if !pair {
		return soft, soft, ok1
	}
	hard, ok2 := one(h)
	return soft, hard, ok1 && ok2 && soft <= hard
}

// safeAtou64 is systemd 252's safe_atou64 (src/basic/parse-util.c):
// leading ASCII white space skipped, a "0b" or "0o" prefix read as base 2
// or 8 (mangle_base), else strtoull with base 0 (0x hexadecimal, a
// leading 0 octal), after an optional sign; the whole rest must be read
// without overflow, and a minus sign is refused unless the value is 0.
func safeAtou64(s string) (uint64, bool) {
	n, neg, ok := strtoBase0(s)
	return n, ok && (!neg || n == 0)
}

// safeAtoi is systemd 252's safe_atoi as parse_permyriad uses it for the
// whole part of a share: read as safeAtou64 reads a number, into a C int
// (at most 2147483647); parse_permyriad then refuses any value below 0,
// so ok is false for a negative one ("-0" is 0).
func safeAtoi(s string) (uint64, bool) {
	n, neg, ok := strtoBase0(s)
	return n, ok && (!neg || n == 0) && n <= math.MaxInt32
}

// strtoBase0 reads s as systemd's mangle_base and strtoull/strtol with
// base 0 do (see safeAtou64): the magnitude, whether a minus sign came
// before it, and whether all of s was read without overflow.
func strtoBase0(s string) (n uint64, neg, ok bool) {
	s = strings.TrimLeft(s, systemdSpace)
	base := 0
	if len(s) > 2 && s[0] == '0' {
		switch s[1] | 0x20 {
		case 'b':
			base, s = 2, s[2:]
		case 'o':
			base, s = 8, s[2:]
		}
	}
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if base == 0 {
		switch {
		case len(s) > 2 && s[0] == '0' && (s[1]|0x20) == 'x' && strings.ContainsRune("0123456789abcdefABCDEF", rune(s[2])):
			base, s = 16, s[2:]
		case s != "" && s[0] == '0':
			base = 8
		default:
			base = 10
		}
	}
	if s == "" || strings.ContainsAny(s, "+-_") {
		return 0, neg, false
	}
	n, err := strconv.ParseUint(s, base, 64)
	return n, neg, err == nil
}

// IsUnitFile says whether p, a path UnitNofile read, is unit's own unit
// file (or its template's) rather than a drop-in.
func IsUnitFile(p, unit string) bool {
	unit = unitname.Service(unit)
	base := path.Base(p)
	if base == unit {
		return true
	}
	tmpl, ok := TemplateOf(unit)
	return ok && base == tmpl
}
