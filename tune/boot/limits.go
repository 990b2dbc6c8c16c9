package boot

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
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

// NofileAtBoot is the nofile a new login session of user gets on the host
// under root ("" = /), by pam_limits' rules (Debian's pam 1.5): limits.conf,
// then limits.d/*.conf in C-locale order; for soft and hard separately, a
// line naming the user beats an @group line the user is in (primary or
// supplementary group, from ROOT/etc/passwd and ROOT/etc/group) beats "*",
// whatever the order; among lines of one kind the later wins; "*" and
// @group lines do not apply to root; a "-" type sets soft and hard. Only
// "nofile" lines count. Errors: a file that exists but cannot be read.
func NofileAtBoot(root, user string) (Nofile, error) {
	return NofileOverlay(root, user, nil)
}

// NofileOverlay is NofileAtBoot as if the files in overlay (paths relative
// to root) had the given bytes (nil: absent).
func NofileOverlay(root, user string, overlay map[string][]byte) (Nofile, error) {
	return nofileFor(tree{root: root, overlay: overlay}, user, userGroups(root, user))
}

// NofileForGroups is NofileAtBoot for a user whose groups (names, primary
// and supplementary) the caller already knows — from NSS (os/user) on the
// live host, or from a recording — instead of ROOT/etc/passwd and
// ROOT/etc/group. It reads limits.conf and limits.d only.
func NofileForGroups(root, user string, groups []string) (Nofile, error) {
	return NofileForGroupsOverlay(root, user, groups, nil)
}

// NofileForGroupsOverlay is NofileForGroups as if the files in overlay
// (paths relative to root) had the given bytes (nil: absent).
func NofileForGroupsOverlay(root, user string, groups []string, overlay map[string][]byte) (Nofile, error) {
	set := map[string]bool{}
	for _, g := range groups {
		set[g] = true
	}
	return nofileFor(tree{root: root, overlay: overlay}, user, set)
}

func nofileFor(t tree, user string, groups map[string]bool) (Nofile, error) {
	n := Nofile{User: user}
	files := []ConfFile{{Path: LimitsConf, Target: resolve(t.root, LimitsConf)}}
	files = append(files, listConfDirs(t, []string{LimitsDir}, false)...)
	softPrio, hardPrio := prioNone, prioNone
	for _, f := range files {
		lines, err := readLines(t, f)
		if err != nil {
			return n, fmt.Errorf("boot: reading %s: %w", f.Name(), err)
		}
		if lines != nil {
			n.Files = append(n.Files, f)
		}
		for i, l := range lines {
			if c := strings.IndexByte(l, '#'); c >= 0 {
				l = l[:c]
			}
			fs := strings.Fields(l)
			if len(fs) != 4 || strings.ToLower(fs[2]) != "nofile" {
				continue
			}
			prio := prioNone
			switch d := fs[0]; {
			case d == user:
				prio = prioUser
			case strings.HasPrefix(d, "@") && user != "root" && groups[d[1:]]:
				prio = prioGroup
			case d == "*" && user != "root":
				prio = prioDefault
			}
			if prio == prioNone {
				continue
			}
			v, ok := parseRlimit(fs[3])
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

func parseRlimit(s string) (uint64, bool) {
	switch strings.ToLower(s) {
	case "-1", "-", "unlimited", "infinity":
		return Unlimited, true
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return v, err == nil
}

// userGroups is the set of groups user is in (primary and supplementary)
// by ROOT/etc/passwd and ROOT/etc/group.
func userGroups(root, user string) map[string]bool {
	out := map[string]bool{}
	gid := ""
	eachLine(hostPath(root, "/etc/passwd"), func(fs []string) {
		if len(fs) > 3 && fs[0] == user {
			gid = fs[3]
		}
	})
	eachLine(hostPath(root, "/etc/group"), func(fs []string) {
		if len(fs) < 4 {
			return
		}
		if fs[2] == gid {
			out[fs[0]] = true
		}
		for _, m := range strings.Split(fs[3], ",") {
			if m == user {
				out[fs[0]] = true
			}
		}
	})
	return out
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
