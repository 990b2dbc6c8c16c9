package tune

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/proclimits"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// selectLimit is FD_SETSIZE: select() cannot watch a descriptor >= 1024,
// so a host-wide soft nofile above it breaks programs that still use it.
const selectLimit = 1024

// closeAllLimit is the soft nofile above which programs that loop over
// every possible descriptor (close-all before exec, up to RLIMIT_NOFILE)
// get slow enough to notice.
const closeAllLimit = 1048576

// nofileNow is what a new login session, the systemd manager or a unit
// gets now (before this apply), and where that comes from.
type nofileNow struct {
	soft, hard uint64
	from       string
	// softInfinity and hardInfinity say the soft or hard is systemd's
	// "infinity", resolved to the number in soft or hard as the model
	// sees it; on the host it may be more (PID 1's hard limit comes from
	// fs.nr_open at boot, which the kernel command line may set), so
	// hostprep keeps "infinity".
	softInfinity, hardInfinity bool
}

// neverLower raises each nofile limit per will write to at least what new
// login sessions, the systemd manager and each unit get now (the boot
// simulation of limits.d and systemd, and for sessions with no line what
// the login process tree has, loginBase): hostprep never
// writes a lower soft or hard. A kept value is listed as skipped with the
// reason. An unlimited value there counts as what it gives: limits.d's
// unlimited or -1 nrOpen (fs.nr_open after the sysctls; see
// resolveUnlimited), systemd's infinity PID 1's hard limit at boot
// (systemdNow). A profile that raises a host-wide soft above 1024 gets a note
// (select(), FD_SETSIZE), above 1048576 a warning; a soft kept because the
// host already has it gets neither.
func (pl *Plan) neverLower(per *journal.Persisted, services bool, nrOpen uint64) error {
	root := pl.env.bootRoot()
	if n := per.Nofile; n != nil {
		now, err := pl.sessionNofileNow(root, per.NofileUsers)
		if err != nil {
			return err
		}
		pl.noteHostWideSoft("limits.nofile (new login sessions of "+strings.Join(per.NofileUsers, ", ")+")", n.Soft)
		pl.keep(n, now, nrOpen, pl.env.path(files.LimitsConf), "new login sessions")
	}
	if !services {
		return nil
	}
	pid1 := pl.env.pid1Nofile()
	if d := per.DefaultLimitNOFILE; d != nil {
		m, _, err := hostconf.ManagerNofile(root)
		if err != nil {
			return exitcode.Environmentf("tune: %w", err)
		}
		pl.noteHostWideSoft("systemd.default_limit_nofile (every service)", d.Soft)
		pl.keep(d, systemdNow(m, pid1), nrOpen, pl.env.path(files.SystemConf), "every systemd service (DefaultLimitNOFILE)")
	}
	units := make([]string, 0, len(per.Services))
	for u := range per.Services {
		units = append(units, u)
	}
	sort.Strings(units)
	for _, u := range units {
		m, _, err := hostconf.UnitNofile(root, u)
		if err != nil {
			return exitcode.Environmentf("tune: %w", err)
		}
		l := per.Services[u]
		pl.keep(&l, systemdNow(m, pid1), nrOpen, pl.env.path(files.ServiceDropIn(u)), u)
		per.Services[u] = l
	}
	return nil
}

// systemdNow is what a service gets from m, a unit's or the manager's
// nofile: an "infinity" in it is PID 1's hard limit (m.Resolved with
// pid1), not fs.nr_open after the sysctls.
func systemdNow(m hostconf.NofileSetting, pid1 hostconf.Pid1Hard) nofileNow {
	softInf, hardInf := m.Soft == hostconf.Unlimited, m.Hard == hostconf.Unlimited
	m = m.Resolved(pid1)
	if m.Infinity == "" {
		return nofileNow{soft: m.Soft, hard: m.Hard, from: m.Where()}
	}
	return nofileNow{soft: m.Soft, hard: m.Hard, softInfinity: softInf, hardInfinity: hardInf,
		from: fmt.Sprintf("%s, which writes %s (infinity is %s)", m.Where(), m.Written(), strings.TrimPrefix(m.Infinity, "infinity: "))}
}

// keep raises want to now where now is higher and says so as a skip. An
// unlimited now is first resolved to what it gives (resolveUnlimited with
// nrOpen, fs.nr_open): hostprep writes numbers, never lower than that;
// but systemd's infinity (now.softInfinity, now.hardInfinity) is kept as
// infinity (hostconf.Unlimited, written "infinity"), since PID 1's hard
// limit on the host may be above the number the model resolves it to.
func (pl *Plan) keep(want *journal.Limit, now nofileNow, nrOpen uint64, file, who string) {
	soft, hard, how := resolveUnlimited(now.soft, now.hard, nrOpen)
	if hard > nrOpen {
		// A limit above fs.nr_open cannot be set (setrlimit: EPERM): it is
		// not the host's to keep, and hostprep's file (read later) replaces
		// it with the most that can be set.
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s: %s sets hard nofile %d for %s, above fs.nr_open %d: setrlimit refuses it, so those logins or services fail to get it; hostprep keeps at most %d", file, now.from, hard, who, nrOpen, nrOpen))
		hard, soft = nrOpen, min(soft, nrOpen)
	}
	var kept []string
	switch {
	case now.hardInfinity && hard >= want.Hard && want.Hard != hostconf.Unlimited:
		// systemd's infinity stays infinity: the number it resolves to
		// here may be less than what PID 1 has at boot
		kept = append(kept, fmt.Sprintf("hard infinity (the profile asks for %d)", want.Hard))
		want.Hard = hostconf.Unlimited
	case hard > want.Hard:
		kept = append(kept, fmt.Sprintf("hard %d (the profile asks for %d)", hard, want.Hard))
		want.Hard = hard
	}
	switch {
	case now.softInfinity && want.Hard == hostconf.Unlimited && soft >= want.Soft && want.Soft != hostconf.Unlimited:
		kept = append(kept, fmt.Sprintf("soft infinity (the profile asks for %d)", want.Soft))
		want.Soft = hostconf.Unlimited
	case soft > want.Soft && soft <= want.Hard:
		kept = append(kept, fmt.Sprintf("soft %d (the profile asks for %d)", soft, want.Soft))
		want.Soft = soft
	}
	if len(kept) == 0 {
		return
	}
	pl.Skipped = append(pl.Skipped, Skip{File: file, Layer: Persistent, Current: now.String(),
		Reason: fmt.Sprintf("nofile kept at %s for %s: they already get %s%s from %s, higher than the profile; hostprep never lowers a limit", strings.Join(kept, " and "), who, now.String(), how, now.from)})
}

// String is "soft:hard", or "?:hard" when no line sets the soft and what
// the session inherits is not known (an image without systemd): a
// hard-only line leaves the inherited soft, which is not 0.
func (n nofileNow) String() string {
	if n.soft == 0 {
		return "?:" + strings.TrimPrefix(fmtLimit(0, n.hard), "0:")
	}
	return fmtLimit(n.soft, n.hard)
}

// resolveUnlimited returns the nofile soft and hard an unlimited value
// (hostconf.Unlimited: systemd's infinity, limits.d's unlimited or -1) really
// gives, and how, for messages ("" when neither is unlimited). There is no
// infinite fd limit: setrlimit() refuses anything above fs.nr_open (EPERM);
// pam_limits turns unlimited nofile into fs.nr_open, so it becomes nrOpen
// (fs.nr_open in force after the sysctls, a count of files). systemd's
// infinity is resolved before (systemdNow: PID 1's hard limit, which it
// took from fs.nr_open before sysctl.d ran).
func resolveUnlimited(soft, hard, nrOpen uint64) (uint64, uint64, string) {
	if soft != hostconf.Unlimited && hard != hostconf.Unlimited {
		return soft, hard, ""
	}
	soft, hard = min(soft, nrOpen), min(hard, nrOpen)
	return soft, hard, fmt.Sprintf(" (%s: there is no infinite fd limit, unlimited resolves to fs.nr_open %d)", fmtLimit(soft, hard), nrOpen)
}

// noteHostWideSoft explains what a host-wide soft nofile above 1024 does.
func (pl *Plan) noteHostWideSoft(what string, soft uint64) {
	switch {
	case soft > closeAllLimit:
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s: soft nofile %d for every process it covers: programs that loop over every possible descriptor (closing up to RLIMIT_NOFILE before exec) slow down, and select() breaks past descriptor 1024 (FD_SETSIZE); keep the host-wide soft at 1024 and give the services that need more their own limit (systemd.services)", what, soft))
	case soft > selectLimit:
		pl.Notes = append(pl.Notes, fmt.Sprintf("%s: soft nofile %d is above 1024: a program there that uses select() fails on descriptors >= 1024 (FD_SETSIZE); the usual way is soft 1024 host-wide and a higher soft only for the services that need it (systemd.services)", what, soft))
	}
}

// sessionNofileNow is the highest nofile any of users gets in a new login
// session now: pam_limits' lines (limits.conf, limits.d, hostprep's own
// file included), else what the login process tree has (loginBase). Never
// the limit of the shell that started hostprep: new logins do not inherit
// from it.
func (pl *Plan) sessionNofileNow(root string, users []string) (nofileNow, error) {
	var out nofileNow
	base, err := pl.loginBase(root)
	if err != nil {
		return out, err
	}
	for _, u := range users {
		sim := u
		switch {
		case u == "*":
			sim = anyUser
		case strings.HasPrefix(u, "@") || strings.HasPrefix(u, "%"):
			continue
		}
		b, err := hostconf.NofileAtBoot(root, sim)
		if err != nil {
			return out, exitcode.Environmentf("tune: %w", err)
		}
		now := base
		if now.from != "" {
			now.from += fmt.Sprintf(" (no limits line covers %q)", u)
		}
		if b.Hard.Set {
			now.hard, now.from = b.Hard.Value, b.Hard.Where()
		}
		if b.Soft.Set {
			now.soft = b.Soft.Value
			if !b.Hard.Set && base.from != "" {
				now.from = b.Soft.Where() + " (soft) and " + base.from
			} else if !b.Hard.Set {
				now.from = b.Soft.Where()
			}
		}
		if now.hard > out.hard || (now.hard == out.hard && now.soft > out.soft) {
			out = now
		}
	}
	return out, nil
}

// loginBase is the nofile a new login session gets when no limits line
// applies: what the login process tree has. With systemd (running, or
// installed in the image in image mode) that is the manager's
// DefaultLimitNOFILE (hostconf.ManagerNofile: sshd and logind's sessions are
// services that get it); without systemd PID 1's limit (/proc/1/limits),
// which every process below it inherits. Zero (from "") when unknown.
func (pl *Plan) loginBase(root string) (nofileNow, error) {
	if pl.env.systemdRunning() || (pl.env.ImageMode() && isDir(pl.env.path("/etc/systemd"))) {
		m, _, err := hostconf.ManagerNofile(root)
		if err != nil {
			return nofileNow{}, exitcode.Environmentf("tune: %w", err)
		}
		return nofileNow{soft: m.Soft, hard: m.Hard, from: "systemd's DefaultLimitNOFILE (" + m.Where() + "), which login sessions inherit"}, nil
	}
	if pl.env.ImageMode() {
		return nofileNow{}, nil
	}
	soft, hard, ok := readNofile(filepath.Join(pl.env.proc(), "1", "limits"))
	if !ok {
		return nofileNow{}, nil
	}
	return nofileNow{soft: soft, hard: hard, from: "PID 1's limit (/proc/1/limits), which login sessions inherit without systemd"}, nil
}

// readNofile reads the "Max open files" soft and hard of a
// /proc/PID/limits file; ok is false when it cannot, or when a limit is
// unlimited (no number to keep).
func readNofile(path string) (soft, hard uint64, ok bool) {
	soft, hard, err := proclimits.Nofile(path)
	return soft, hard, err == nil && soft != proclimits.Unlimited && hard != proclimits.Unlimited
}
