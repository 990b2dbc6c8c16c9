package hostconf

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/cstrconv"
)

// Unlimited is an rlimit of "unlimited"/"infinity"/"-1" (RLIM_INFINITY).
// pam_limits turns an unlimited nofile into fs.nr_open at login.
const Unlimited uint64 = math.MaxUint64

// LimitsConf and LimitsDir are where pam_limits reads nofile lines.
const (
	LimitsConf = "/etc/security/limits.conf"
	LimitsDir  = "/etc/security/limits.d"
)

// LimitValue is one soft or hard value and the line that sets it.
type LimitValue struct {
	// Set is false when no line applies: the session keeps what the
	// process that opened it had.
	Set bool
	// Value in file descriptors (Unlimited for unlimited).
	Value uint64
	// File and Line (1-based) of the line that wins.
	File ConfFile
	Line int
	// Domain of that line: the user name, @group or "*".
	Domain string
}

// Where is "FILE:LINE" for messages.
func (v LimitValue) Where() string { return fmt.Sprintf("%s:%d", v.File.Name(), v.Line) }

// Nofile is the nofile a new login session of one user gets from
// pam_limits.
type Nofile struct {
	User       string
	Soft, Hard LimitValue
	// Broken is a file pam_limits cannot open, when there is one: a
	// missing limits.conf (or a link to a missing file), or a limits.d
	// entry that is a link to a missing file. pam_limits then fails the
	// session ("cannot open session: Error in service module", shown with
	// the real pam of Debian 12 and runuser), so no login works at all.
	// Set false when none; Soft and Hard are unset then. A limits.conf
	// that is a directory opens and reads as empty.
	Broken LimitValue
	// NoLimits is the "DOMAIN -" line (two fields) that names the user or
	// one of their groups, when one does: pam_limits then returns
	// PAM_IGNORE and sets no limit at all for the session (Soft and Hard
	// are unset; later files are not read). Set false when none.
	NoLimits LimitValue
	// Files read, in order.
	Files []ConfFile
}

// domain priority as pam_limits ranks it (lower wins whatever the order).
const (
	prioUser    = 0
	prioGroup   = 1
	prioDefault = 4
	prioNone    = 6
)

// AnyUser stands for an ordinary login user: uid and primary gid
// FirstUID, in no supplementary group, so "*" lines and uid/gid ranges
// that cover FirstUID apply to it.
const AnyUser = "hostprep-any-user"

// FirstUID is the uid (and primary gid) of the first ordinary user
// Debian's adduser creates (FIRST_UID in /etc/adduser.conf, UID_MIN in
// /etc/login.defs), the uid AnyUser stands for.
const FirstUID = 1000

// account is who pam_limits matches lines against: the name, uid and
// primary gid (-1: not known, then no uid/gid range matches) and the
// groups by name.
type account struct {
	name     string
	uid, gid int64
	groups   map[string]bool
	gids     map[int64]bool // the gids of groups, primary included
}

// NofileAtBoot is the nofile a new login session of user gets on the host
// under root ("" = /), by pam_limits' rules (Debian's pam 1.5,
// parse_config_file in pam_limits.c): limits.conf, then limits.d/*.conf in
// C-locale order (glob without GLOB_PERIOD: hidden ".x.conf" names are not
// read); a missing limits.conf or a limits.d link to a missing file fails
// the session (Nofile.Broken). For soft and hard separately, a line naming the user or
// a uid range holding their uid ("1000:", ":0", "1000:2000") beats an
// @group line (a group they are in, or a gid range holding their primary
// gid) beats "*", whatever the order; among lines of one kind the later
// wins; "*" and @group lines do not apply to root; a "-" type sets soft and
// hard. Only "nofile" lines count (type, item and value in any case: pam
// lowers them); a value is read as strtoul reads it ("65536x" is
// 65536), fields after the fourth are ignored, and a two-field "DOMAIN -"
// line for the user ends the reading with no limit set (NoLimits). The
// uid and gid come from ROOT/etc/passwd (root is 0; AnyUser is
// FirstUID). Errors: a file that exists but cannot be read.
func NofileAtBoot(root, user string) (Nofile, error) {
	return NofileOverlay(root, user, nil)
}

// NofileOverlay is NofileAtBoot as if the files in overlay (paths relative
// to root) had the given bytes (nil: absent).
func NofileOverlay(root, user string, overlay map[string][]byte) (Nofile, error) {
	a := lookupAccount(root, user)
	userGroups(root, &a, nil)
	return nofileFor(tree{root: root, overlay: overlay}, a)
}

// NofileForGroups is NofileAtBoot for a user whose groups (names, primary
// and supplementary) the caller already knows — from NSS (os/user) on the
// live host, or from a recording — instead of ROOT/etc/group. It reads
// limits.conf and limits.d, and the uid from ROOT/etc/passwd.
func NofileForGroups(root, user string, groups []string) (Nofile, error) {
	return NofileForGroupsOverlay(root, user, groups, nil)
}

// NofileForGroupsOverlay is NofileForGroups as if the files in overlay
// (paths relative to root) had the given bytes (nil: absent).
func NofileForGroupsOverlay(root, user string, groups []string, overlay map[string][]byte) (Nofile, error) {
	a := lookupAccount(root, user)
	if groups == nil {
		groups = []string{}
	}
	userGroups(root, &a, groups)
	return nofileFor(tree{root: root, overlay: overlay}, a)
}

// LimitsFiles are the files pam_limits reads under root ("" is /), in its
// order: limits.conf, then the *.conf of limits.d as its glob lists them
// (no hidden names). Path is where pam finds each, Target the file a
// link there leads to inside root.
func LimitsFiles(root string) []ConfFile { return limitsFiles(tree{root: root}) }

func limitsFiles(t tree) []ConfFile {
	files := []ConfFile{{Path: LimitsConf, Target: resolve(t.root, LimitsConf)}}
	return append(files, listConfDirs(t, []string{LimitsDir}, listPam)...)
}

// long on purpose: it is pam_limits' parse_config_file, one line kind
// after another, kept in the order of the C code it follows.
func nofileFor(t tree, a account) (Nofile, error) {
	n := Nofile{User: a.name}
	files := limitsFiles(t)
	softPrio, hardPrio := prioNone, prioNone
	for _, f := range files {
		lines, err := readPamLines(t, f)
		if err != nil {
			return n, fmt.Errorf("boot: reading %s: %w", f.Name(), err)
		}
		if lines != nil {
			n.Files = append(n.Files, f)
		} else if unopenable(t, f) {
			return Nofile{User: a.name, Broken: LimitValue{Set: true, File: f}, Files: n.Files}, nil
		}
		for i, l := range lines {
			if c := strings.IndexByte(l, '#'); c >= 0 {
				l = l[:c]
			}
			fs := strings.FieldsFunc(l, isCSpace) // sscanf's %s: U+00A0 is no space
			if len(fs) == 2 && strings.HasPrefix(fs[1], "-") && a.noLimits(fs[0]) {
				// "DOMAIN -": PAM_IGNORE, no limit set for this session.
				return Nofile{User: a.name, NoLimits: LimitValue{Set: true, File: f, Line: i + 1, Domain: fs[0]}, Files: n.Files}, nil
			}
			if len(fs) < 4 || strings.ToLower(fs[2]) != "nofile" {
				continue
			}
			prio := a.matches(fs[0])
			if prio == prioNone {
				continue
			}
			v, ok := parseRlimit(strings.ToLower(fs[3]))
			if !ok {
				continue
			}
			lv := LimitValue{Set: true, Value: v, File: f, Line: i + 1, Domain: fs[0]}
			typ := strings.ToLower(fs[1])
			if typ == "soft" || typ == "-" {
				if softPrio < prio {
					continue // pam_limits returns here: a "-" line's hard is not set either
				}
				n.Soft, softPrio = lv, prio
			}
			if typ == "hard" || typ == "-" {
				if hardPrio < prio {
					continue
				}
				n.Hard, hardPrio = lv, prio
			}
		}
	}
	return n, nil
}

// pamLineLength is pam_limits' LINE_LENGTH: it reads a file with
// fgets(buf, LINE_LENGTH, fil), so a longer line comes in pieces of
// LINE_LENGTH-1 bytes, each parsed as a line of its own.
const pamLineLength = 1024

// readPamLines reads f as pam_limits does: lines as fgets gives them,
// cut into pieces of pamLineLength-1 bytes (the newline counted). The
// line numbers are fgets' calls.
func readPamLines(t tree, f ConfFile) ([]string, error) {
	lines, err := readLines(t, f)
	if lines == nil || err != nil {
		return lines, err
	}
	var out []string
	for i, l := range lines {
		if i < len(lines)-1 {
			l += "\n"
		}
		for len(l) > pamLineLength-1 {
			out = append(out, l[:pamLineLength-1])
			l = l[pamLineLength-1:]
		}
		out = append(out, strings.TrimSuffix(l, "\n"))
	}
	return out, nil
}

// isCSpace is isspace in the C and UTF-8 locales, byte by byte: no
// non-ASCII character is a space.
func isCSpace(r rune) bool { return r == ' ' || (r >= '\t' && r <= '\r') }

// unopenable says whether f, listed in a directory, cannot be opened: a
// symbolic link whose target is missing (files the overlay sets, masks
// and directories named *.conf open, or read as empty).
func unopenable(t tree, f ConfFile) bool {
	if f.Masked {
		return false
	}
	if _, ok := t.overlay[f.Target]; ok {
		return false
	}
	if _, ok := t.overlay[f.Path]; ok {
		return false
	}
	_, err := os.Stat(hostPath(t.root, f.Target))
	return errors.Is(err, fs.ErrNotExist)
}

// matches is the priority of a four-field line with domain d for a
// (prioNone: it does not apply): the user's name or a uid range holding
// their uid is a user line; @group (one they are in), @:GID (a group they
// are in) or an @gid range holding their primary gid a group line; "*" a
// default line. "*" and @group-by-name lines do not apply to root, and
// @gid ranges rank as user lines for root.
func (a account) matches(d string) int {
	root := a.name == "root" || a.uid == 0
	switch {
	case d == a.name:
		return prioUser
	case strings.HasPrefix(d, "@"):
		// For root, Debian's pam 1.5.2 skips @group by name but takes an
		// @gid range (or @:GID) holding its group at a user line's rank:
		// the later of it and a "root" line wins (measured with the real
		// pam_limits; TestLimitsOracle keeps it so).
		_, _, kind := parseIDRange(d[1:])
		switch {
		case !a.inGroup(d[1:]):
		case !root:
			return prioGroup
		case kind != rangeNone:
			return prioUser
		}
	case d == "*":
		if !root {
			return prioDefault
		}
	case a.inIDRange(d, a.uid):
		return prioUser
	}
	return prioNone
}

// noLimits says whether a two-field "DOMAIN -" line names a: its user
// name, a group it is in (@group, @:GID, @gid range) or a uid range
// holding its uid; not "*", and with no exception for root.
func (a account) noLimits(d string) bool {
	switch {
	case d == a.name:
		return true
	case strings.HasPrefix(d, "@"):
		return a.inGroup(d[1:])
	}
	return a.inIDRange(d, a.uid)
}

// inGroup: g is a group name a is in, ":GID" a gid it is in, or a gid
// range ("MIN:", "MIN:MAX") holding its primary gid.
func (a account) inGroup(g string) bool {
	lo, _, kind := parseIDRange(g)
	switch {
	case kind == rangeNone:
		return a.groups[g]
	case kind == rangeOK && strings.HasPrefix(g, ":"):
		return a.gids[lo]
	}
	return a.inIDRange(g, a.gid)
}

// inIDRange says whether d is a uid or gid range that holds id (-1:
// unknown, never held).
func (a account) inIDRange(d string, id int64) bool {
	lo, hi, kind := parseIDRange(d)
	return kind == rangeOK && id >= 0 && id >= lo && id <= hi
}

const (
	rangeNone = iota // no ":": not a range
	rangeErr         // a ":" but not a range pam reads
	rangeOK
)

// parseIDRange reads a uid or gid range as parse_uid_range in pam_limits.c
// does: "MIN:" (open), ":ID" (one), "MIN:MAX" (inclusive).
func parseIDRange(s string) (lo, hi int64, kind int) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, rangeNone
	}
	num := func(x string) (int64, bool) {
		v, err := strconv.ParseUint(x, 10, 32)
		return int64(v), err == nil
	}
	switch {
	case a == "" && b == "":
		return 0, 0, rangeErr
	case a == "":
		v, ok := num(b)
		if !ok {
			return 0, 0, rangeErr
		}
		return v, v, rangeOK
	}
	l, ok := num(a)
	if !ok {
		return 0, 0, rangeErr
	}
	if b == "" {
		return l, math.MaxInt64, rangeOK
	}
	h, ok := num(b)
	if !ok {
		return 0, 0, rangeErr
	}
	return l, h, rangeOK
}

// parseRlimit reads a nofile value (lower-cased) as pam_limits does: "-1",
// "-", "unlimited" and "infinity" are unlimited; anything else is
// read with strtoul, which takes the leading digits after an optional
// sign ("65536x" is 65536, "-5" wraps around) and fails only when there
// are none.
// ParseLimitsValue reads a limits.conf value as pam_limits does: "-1",
// "-", "unlimited" and "infinity" are Unlimited, otherwise strtoul in
// base 10 over the leading digits ("012000" is 12000, "65536x" 65536).
func ParseLimitsValue(s string) (uint64, bool) { return parseRlimit(s) }

func parseRlimit(s string) (uint64, bool) {
	switch s {
	case "-1", "-", "unlimited", "infinity":
		return Unlimited, true
	}
	v, _, ok, _ := cstrconv.Strtoull(s) // ERANGE: strtoul gives ULONG_MAX
	return v, ok
}

// lookupAccount is user's uid and primary gid from ROOT/etc/passwd; root
// is 0 and AnyUser FirstUID without one; -1 when not found.
func lookupAccount(root, user string) account {
	a := account{name: user, uid: -1, gid: -1}
	switch user {
	case "root":
		a.uid, a.gid = 0, 0
	case AnyUser:
		a.uid, a.gid = FirstUID, FirstUID
		return a
	}
	eachLine(hostPath(root, "/etc/passwd"), func(fs []string) {
		if len(fs) > 3 && fs[0] == user {
			if v, err := strconv.ParseInt(fs[2], 10, 64); err == nil {
				a.uid = v
			}
			if v, err := strconv.ParseInt(fs[3], 10, 64); err == nil {
				a.gid = v
			}
		}
	})
	return a
}

// userGroups fills a's groups (names and gids) from ROOT/etc/group: the
// group of its primary gid and those that list it as a member; names
// given (NofileForGroups) are kept and get their gids from the file.
func userGroups(root string, a *account, names []string) {
	if a.groups == nil {
		a.groups = map[string]bool{}
	}
	a.gids = map[int64]bool{}
	if a.gid >= 0 {
		a.gids[a.gid] = true
	}
	for _, n := range names {
		a.groups[n] = true
	}
	eachLine(hostPath(root, "/etc/group"), func(fs []string) {
		if len(fs) < 4 {
			return
		}
		gid, err := strconv.ParseInt(fs[2], 10, 64)
		if err != nil {
			return
		}
		member := names == nil && (gid == a.gid || slices.Contains(strings.Split(fs[3], ","), a.name))
		if member {
			a.groups[fs[0]] = true
		}
		if a.groups[fs[0]] {
			a.gids[gid] = true
		}
	})
}

func eachLine(p string, fn func([]string)) {
	f, err := os.Open(p)
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fn(strings.Split(sc.Text(), ":"))
	}
}
