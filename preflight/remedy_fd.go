package preflight

import "github.com/hostprep/hostprep/profiles"

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
func fdFixable(f *Facts, t Target) bool {
	p := f.Target
	return !p.UnitMissing && !unseenServer(p, t) && !shellStandsIn(f)
}

// unitNofileChanges are the changes systemdRemedy prints: the unit's
// LimitNOFILE (the profile's where it covers need), and the fs.nr_open
// and fs.file-max it needs.
func unitNofileChanges(f *Facts, t Target, unit string, need uint64) []Change {
	pl := t.ProfileUnitNofile
	soft, hard := max(need, pl.Soft), max(need, pl.Hard)
	if t.Profile != "" && profileUnit(t, unit) && pl.Soft >= need && pl.Hard >= need {
		soft, hard = pl.Soft, pl.Hard
	}
	return append(sysctlSets(hardSets(f, t, hard)), SetUnitNofile{Unit: unit, Soft: soft, Hard: hard})
}

// apartChanges are apartRemedy's: restart the unit, and raise its
// LimitNOFILE first where it is short too.
func apartChanges(f *Facts, t Target, need uint64) []Change {
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
func loginNofileChanges(f *Facts, t Target, soft, hard uint64) []Change {
	sets := nofileSets(f, t, soft, hard)
	soft, hard = max(soft, t.ProfileNofile.Soft), max(hard, soft, t.ProfileNofile.Hard)
	return append(sysctlSets(sets), SetLoginNofile{Soft: soft, Hard: hard})
}

func remedyFDSoft(f *Facts, t Target) []Change {
	p := f.Target
	need, _ := fdNeed(p, t)
	switch {
	case !fdFixable(f, t):
		return nil
	case p.Apart != nil:
		return apartChanges(f, t, need)
	case underSystemd(f):
		unit := p.Unit
		if unit == "" {
			return nil
		}
		return unitNofileChanges(f, t, unit, need)
	}
	if ceiling, _, blocked := hostCeiling(f); blocked && need > ceiling && p.CapSysResource {
		return []Change{SetProcessNofile{PID: p.PID, Soft: need, Hard: need}}
	}
	if need <= p.NofileHard || canRaise(f) {
		return loginNofileChanges(f, t, need, max(need, p.NofileHard))
	}
	if p.NofileSoft < p.NofileHard {
		return []Change{SetLoginNofile{Soft: p.NofileHard, Hard: p.NofileHard}}
	}
	return nil // at the hard limit: fd.hard and fd.raise say how
}

func remedyFDHard(f *Facts, t Target) []Change {
	p := f.Target
	need, _ := fdNeed(p, t)
	if !fdFixable(f, t) {
		return nil
	}
	switch ceiling, _, blocked := hostCeiling(f); {
	case p.Apart != nil:
		return apartChanges(f, t, need)
	case underSystemd(f):
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

func remedyFDRaise(f *Facts, t Target) []Change {
	p := f.Target
	need, _ := fdNeed(p, t)
	if !fdFixable(f, t) || p.Apart != nil || underSystemd(f) || p.CapSysResource {
		return nil
	}
	if ceiling, _, blocked := hostCeiling(f); blocked && ceiling < need {
		return nil
	}
	return loginNofileChanges(f, t, need, need)
}

func remedyFDNrOpen(f *Facts, t Target) []Change {
	n, _ := fdNeed(f.Target, t)
	return sysctlSets([]string{fdNrOpenSet(t, n)})
}

func remedyFDFileMax(f *Facts, t Target) []Change {
	return sysctlSets([]string{atLeast(t, "fs.file-max", wantFileMax(f, t))})
}

// fdNrOpenSet is fd.nr_open's --set: at least need, the kernel default
// and the profile's hard limits.
func fdNrOpenSet(t Target, need uint64) string {
	return atLeast(t, "fs.nr_open", int64(max(need, profiles.DefaultNrOpen, t.ProfileNofile.Hard, t.ProfileUnitNofile.Hard)))
}

func remedyNrOpenHard(f *Facts, t Target) []Change {
	var top uint64
	for _, l := range configuredHard(f) {
		top = max(top, l.Value)
	}
	return sysctlSets([]string{nrOpenHardSet(t, top)})
}
