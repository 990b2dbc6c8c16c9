package facts

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/profiles"
)

// judgePortOwner makes the process that holds one of ports the target
// when a unit was named (--service, or a profile's) but that process runs
// outside it: the unit is inactive and something started by hand holds
// the port, or the unit runs and another process owns the port. A unit's
// configuration says nothing about a process it did not start, so the
// verdict is on the process that serves the port: its own nofile
// (Listener.NofileSoft/NofileHard, from its /proc/PID/limits), and the
// unit's limits are kept in ProcessFacts.Apart for the remedy (restart
// the service through its unit). It returns the owner's pid, 0 when
// nothing changed. The listener's owner must have been looked up
// (findOwners, or a recorded host's listeners with pid and nofile).
func (f *Facts) JudgePortOwner(ports []int) int {
	p := f.Target
	if p.Unit == "" || p.UnitMissing || p.Apart != nil || !f.Systemd.Running {
		return 0
	}
	for _, l := range f.Listeners {
		if !slices.Contains(ports, l.Port) || l.PID <= 0 || l.PID == p.PID || slices.Contains(l.Holders, p.PID) || l.StartedBy == p.Unit {
			continue
		}
		if l.NofileSoft == 0 && l.NofileHard == 0 {
			f.Notes = append(f.Notes, fmt.Sprintf("port %d is held by %s outside %s, whose limits could not be read: judged on the unit's", l.Port, l.Owner(), p.Unit))
			continue
		}
		active := p.UnitActive
		if active == "" && p.PID == 0 {
			active = "inactive"
		}
		apart := &UnitApart{Unit: p.Unit, Active: active, MainPID: p.PID, Port: l.Port, Process: l.Process,
			Nofile: p.nofile(), From: p.Source}
		owner := ProcessFacts{ManagedBy: "shell", PID: l.PID, NofileSoft: l.NofileSoft, NofileHard: l.NofileHard,
			CapSysResource: false, NoRaiseBound: p.NoRaiseBound, Apart: apart}
		if strings.HasSuffix(l.StartedBy, ".service") {
			owner.ManagedBy, owner.Unit = "systemd", l.StartedBy
		}
		owner.Source = fmt.Sprintf("%s %s; port %d is held by pid %d (%s) started %s, nofile %s: /proc/%d/limits",
			p.Unit, apart.State(), l.Port, l.PID, cmp.Or(l.Process, "comm not read"), startedBy(l.StartedBy), FmtLimit(owner.nofile()), l.PID)
		f.Target = owner
		f.Notes = append(f.Notes, owner.Source)
		return l.PID
	}
	return 0
}

// startedBy phrases Listener.StartedBy after "started".
func startedBy(s string) string {
	if strings.HasSuffix(s, ".service") {
		return "by " + s
	}
	if s == "" || s == "outside any service" {
		return "outside it"
	}
	return "outside it (" + s + ")"
}

// nofile is the process's RLIMIT_NOFILE as a Limit.
func (p ProcessFacts) nofile() profiles.Limit {
	return profiles.Limit{Soft: p.NofileSoft, Hard: p.NofileHard}
}
