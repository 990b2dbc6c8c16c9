package remedies

import (
	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Remedies of the file descriptor checks (check_fd.go): the limits their
// printed remedies set, each where the target gets them from (its unit,
// a new login, prlimit, a restart through its unit), and the fs.nr_open
// and fs.file-max those limits need (hardSets).

func init() {
	registerRemedy("fd.soft", remedyFDSoft)
	registerRemedy("fd.hard", remedyFDHard)
	registerRemedy("fd.raise", remedyFDRaise)
	registerRemedy("fd.nr_open", remedyFDNrOpen)
	registerRemedy("fd.file_max", remedyFDFileMax)
	registerRemedy("fd.nr_open_hard", remedyNrOpenHard)
}

// fdFixable says whether the target is seen well enough that a limit
// can be changed for it: not a unit that is missing, nor a login shell
// standing in for an unseen server.
func fdFixable(f *facts.Facts, t facts.Target) bool {
	p := f.Target
	return !p.UnitMissing && !checks.UnseenServer(p, t) && !checks.ShellStandsIn(f)
}

// unitNofileChanges are the changes systemdRemedy prints: the unit's
// LimitNOFILE (the profile's where it covers need), and the fs.nr_open
// and fs.file-max it needs.
func unitNofileChanges(f *facts.Facts, t facts.Target, unit string, need uint64) []Change {
	pl := t.ProfileUnitNofile
	soft, hard := max(need, pl.Soft), max(need, pl.Hard)
	if t.Profile != "" && checks.ProfileUnit(t, unit) && pl.Soft >= need && pl.Hard >= need {
		soft, hard = pl.Soft, pl.Hard
	}
	return append(sysctlSets(checks.HardSets(f, t, hard)), SetUnitNofile{Unit: unit, Soft: soft, Hard: hard})
}

// apartChanges are apartRemedy's: restart the unit, and raise its
// LimitNOFILE first where it is short too.
func apartChanges(f *facts.Facts, t facts.Target, need uint64) []Change {
	a := f.Target.Apart
	cs := []Change{RestartUnit{Unit: a.Unit}}
	if a.Nofile.Soft < need || a.Nofile.Hard < need {
		cs = append(cs, unitNofileChanges(f, t, a.Unit, need)...)
	}
	return cs
}

// loginNofileChanges are the changes of `hostprep tune apply --set
// limits.nofile.soft=S --set limits.nofile.hard=H` (nofileSets) and a
// start from a new login.
func loginNofileChanges(f *facts.Facts, t facts.Target, soft, hard uint64) []Change {
	sets := checks.NofileSets(f, t, soft, hard)
	soft, hard = max(soft, t.ProfileNofile.Soft), max(hard, soft, t.ProfileNofile.Hard)
	return append(sysctlSets(sets), SetLoginNofile{Soft: soft, Hard: hard})
}

func remedyFDSoft(f *facts.Facts, t facts.Target) []Change {
	p := f.Target
	need, _ := checks.FdNeed(p, t)
	switch {
	case !fdFixable(f, t):
		return nil
	case p.Apart != nil:
		return apartChanges(f, t, need)
	case checks.UnderSystemd(f):
		unit := p.Unit
		if unit == "" {
			return nil
		}
		return unitNofileChanges(f, t, unit, need)
	}
	if ceiling, _, blocked := checks.HostCeiling(f); blocked && need > ceiling && p.CapSysResource {
		return []Change{SetProcessNofile{PID: p.PID, Soft: need, Hard: need}}
	}
	if need <= p.NofileHard || checks.CanRaise(f) {
		return loginNofileChanges(f, t, need, max(need, p.NofileHard))
	}
	if p.NofileSoft < p.NofileHard {
		return []Change{SetLoginNofile{Soft: p.NofileHard, Hard: p.NofileHard}}
	}
	return nil // at the hard limit: fd.hard and fd.raise say how
}

func remedyFDHard(f *facts.Facts, t facts.Target) []Change {
	p := f.Target
	need, _ := checks.FdNeed(p, t)
	if !fdFixable(f, t) {
		return nil
	}
	switch ceiling, _, blocked := checks.HostCeiling(f); {
	case p.Apart != nil:
		return apartChanges(f, t, need)
	case checks.UnderSystemd(f):
		if p.Unit == "" {
			return nil
		}
		return unitNofileChanges(f, t, p.Unit, need)
	case p.CapSysResource && p.PID > 0:
		return []Change{SetProcessNofile{PID: p.PID, Soft: p.NofileSoft, Hard: need}}
	case blocked && ceiling < need:
		return nil // no process here can: split the load
	case blocked:
		return []Change{SetLoginNofile{Soft: need, Hard: need}}
	}
	return loginNofileChanges(f, t, need, need)
}

func remedyFDRaise(f *facts.Facts, t facts.Target) []Change {
	p := f.Target
	need, _ := checks.FdNeed(p, t)
	if !fdFixable(f, t) || p.Apart != nil || checks.UnderSystemd(f) || p.CapSysResource {
		return nil
	}
	if ceiling, _, blocked := checks.HostCeiling(f); blocked && ceiling < need {
		return nil
	}
	return loginNofileChanges(f, t, need, need)
}

func remedyFDNrOpen(f *facts.Facts, t facts.Target) []Change {
	n, _ := checks.FdNeed(f.Target, t)
	return sysctlSets([]string{checks.FdNrOpenSet(t, n)})
}

func remedyFDFileMax(f *facts.Facts, t facts.Target) []Change {
	return sysctlSets([]string{checks.AtLeast(t, "fs.file-max", checks.WantFileMax(f, t))})
}

func remedyNrOpenHard(f *facts.Facts, t facts.Target) []Change {
	var top uint64
	for _, l := range checks.ConfiguredHard(f) {
		top = max(top, l.Value)
	}
	return sysctlSets([]string{checks.NrOpenHardSet(t, top)})
}
