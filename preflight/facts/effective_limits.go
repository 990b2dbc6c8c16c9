package facts

import (
	"fmt"
	"os"
	"strings"

	"github.com/hostprep/hostprep/profiles"
)

// Effective limits of a unit that is not running yet. systemd applies
// LimitNOFILE in the forked service process before exec with
// setrlimit_closest() (src/basic/rlimit-util.c): it asks for the value as
// written; when the kernel refuses it with EPERM — any value above
// fs.nr_open, and "infinity" (RLIM_INFINITY) always is — it sets the
// closest it can instead: the value capped at the hard limit the process
// inherited from the manager, PID 1. So LimitNOFILE=infinity gives the
// manager's own hard limit (often 65536 or 524288), never an unlimited
// number of files.

// resolveNofile returns the RLIMIT_NOFILE a process started by systemd
// with req gets, and how it was resolved ("" when req applies as
// written). nrOpen is fs.nr_open (0 if unknown); pid1 is PID 1's limit
// (nil if unknown, when fs.nr_open is the only bound known); noRaise,
// when not "", says why PID 1 cannot raise a hard limit above its own
// (Facts.Pid1NoRaise): setrlimit() then refuses any hard limit above
// pid1's too.
func ResolveNofile(req profiles.Limit, nrOpen int64, pid1 *profiles.Limit, noRaise string) (profiles.Limit, string) {
	if noRaise != "" && pid1 != nil && req.Hard > pid1.Hard && req.Hard != Unlimited && (nrOpen <= 0 || req.Hard <= uint64(nrOpen)) {
		eff := profiles.Limit{Soft: min(req.Soft, pid1.Hard), Hard: pid1.Hard}
		return eff, fmt.Sprintf("LimitNOFILE=%s is above the service manager's own hard limit %d (PID 1, /proc/1/limits) and %s, so setrlimit() refuses it (EPERM) and systemd sets the closest it can (setrlimit_closest), giving %s", FmtLimit(req), pid1.Hard, noRaise, FmtLimit(eff))
	}
	fits := nrOpen > 0 && req.Hard <= uint64(nrOpen) && req.Soft <= req.Hard
	if fits || (nrOpen <= 0 && req.Hard != Unlimited && req.Soft != Unlimited) {
		return req, ""
	}
	why := fmt.Sprintf("LimitNOFILE=%s is above fs.nr_open %d, so setrlimit() refuses it (EPERM) and systemd sets the closest it can (setrlimit_closest): ", FmtLimit(req), nrOpen)
	if req.Soft == Unlimited || req.Hard == Unlimited {
		why = fmt.Sprintf("LimitNOFILE=%s: there is no infinite fd limit (RLIM_INFINITY is above fs.nr_open %d, setrlimit() refuses it with EPERM), so systemd sets the closest it can (setrlimit_closest): ", FmtLimit(req), nrOpen)
	}
	if pid1 != nil {
		eff := profiles.Limit{Soft: min(req.Soft, pid1.Hard), Hard: min(req.Hard, pid1.Hard)}
		return eff, why + fmt.Sprintf("capped at the service manager's own hard limit %d (PID 1, /proc/1/limits), giving %s", pid1.Hard, FmtLimit(eff))
	}
	if nrOpen <= 0 {
		return req, why + "capped at PID 1's hard limit, but neither /proc/1/limits nor fs.nr_open could be read"
	}
	bound := uint64(nrOpen)
	eff := profiles.Limit{Soft: min(req.Soft, bound), Hard: min(req.Hard, bound)}
	return eff, why + fmt.Sprintf("capped at PID 1's hard limit, which could not be read; at most fs.nr_open %d", nrOpen)
}

// pid1 reads PID 1's RLIMIT_NOFILE (the service manager's own), and the
// hard one hostprep itself was started with (Facts.HereNofileHard).
func (g *Gatherer) pid1() {
	if _, hard, err := readNofile(g.path(fmt.Sprintf("/proc/%d/limits", g.selfPID()))); err == nil {
		g.F.HereNofileHard = hard
	}
	soft, hard, err := readNofile(g.path("/proc/1/limits"))
	if err != nil {
		g.note("/proc/1/limits: %v", err)
		return
	}
	g.F.Pid1Nofile = &profiles.Limit{Soft: soft, Hard: hard}
	g.F.Pid1NoRaise = g.pid1NoRaise()
}

// pid1NoRaise says why PID 1 cannot raise a hard RLIMIT_NOFILE above its
// own, "" when it can or that is not known. Raising a hard limit needs
// CAP_SYS_RESOURCE in the initial user namespace (do_prlimit's
// capable()): PID 1 lacks it when its CapEff has no bit 24, or when it
// runs in a user namespace of its own (an unprivileged container: its
// uid_map is not the identity "0 0 4294967295"), whatever its CapEff
// says there.
func (g *Gatherer) pid1NoRaise() string {
	if has, err := g.hasCap(1, "CapEff", CapSysResource); err == nil && !has {
		return "PID 1 lacks CAP_SYS_RESOURCE (CapEff in /proc/1/status)"
	}
	b, err := os.ReadFile(g.path("/proc/1/uid_map"))
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 && !(f[0] == "0" && f[1] == "0" && f[2] == "4294967295") {
		return fmt.Sprintf("PID 1 runs in a user namespace of its own (/proc/1/uid_map %q), where CAP_SYS_RESOURCE cannot raise a hard limit", strings.Join(f, " "))
	}
	return ""
}

// applyUnitLimit sets the target's limits to what systemd gives a unit
// asking for req (see resolveNofile), saying where they came from.
func (f *Facts) applyUnitLimit(req profiles.Limit, source string) {
	nr, _ := f.SysInt("fs.nr_open")
	eff, how := ResolveNofile(req, nr, f.Pid1Nofile, f.Pid1NoRaise)
	t := &f.Target
	t.NofileSoft, t.NofileHard, t.Source = eff.Soft, eff.Hard, source
	if how != "" {
		t.Requested = FmtLimit(req)
		t.Source = source + "; " + how
	}
}

// capUnlimited replaces an "unlimited" nofile that no systemd resolution
// handled (limits.d's unlimited or -1, a recorded value) with what the
// kernel can give: there is no infinite fd limit, setrlimit() refuses
// anything above fs.nr_open, and pam_limits turns "unlimited" for nofile
// into fs.nr_open. Unknown fs.nr_open leaves the value as it is.
func (f *Facts) capUnlimited() {
	t := &f.Target
	nr, ok := f.SysInt("fs.nr_open")
	if !ok || nr <= 0 || (t.NofileSoft != Unlimited && t.NofileHard != Unlimited) {
		return
	}
	req := profiles.Limit{Soft: t.NofileSoft, Hard: t.NofileHard}
	t.NofileSoft, t.NofileHard = min(t.NofileSoft, uint64(nr)), min(t.NofileHard, uint64(nr))
	if t.Requested == "" {
		t.Requested = FmtLimit(req)
	}
	t.Source += fmt.Sprintf("; nofile %s: there is no infinite fd limit, the kernel allows at most fs.nr_open %d (pam_limits turns unlimited into fs.nr_open)", FmtLimit(req), nr)
}
