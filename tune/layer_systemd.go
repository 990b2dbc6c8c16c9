package tune

import (
	"fmt"
	"sort"

	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// The systemd layers: the manager drop-in
// /etc/systemd/system.conf.d/60-hostprep.conf (DefaultLimitNOFILE, soft
// kept at 1024 in the built-ins) and one drop-in per unit
// /etc/systemd/system/UNIT.d/60-hostprep.conf (LimitNOFILE, soft = hard,
// and TasksMax= when the profile sets systemd.tasks_max: layer_tasks.go).
// Written and rolled back as owned files (layer_files.go); verified at
// boot by bootLimitItems (bootcheck.go).

// systemdWants plans the manager and unit drop-ins.
func (pl *Plan) systemdWants(per journal.Persisted) []fileWant {
	var wants []fileWant
	if d := per.DefaultLimitNOFILE; d != nil {
		wants = append(wants, fileWant{path: files.SystemConf,
			data: files.RenderSystemConf(pl.profiles, d.Soft, d.Hard), systemd: true,
			note: fmt.Sprintf("systemd applies DefaultLimitNOFILE=%s after `systemctl daemon-reexec`, to services started afterwards", files.SystemdNofile(d.Soft, d.Hard))})
	}
	units := make([]string, 0, len(per.Services))
	for u := range per.Services {
		units = append(units, u)
	}
	sort.Strings(units)
	for _, u := range units {
		l := per.Services[u]
		wants = append(wants, fileWant{path: files.ServiceDropIn(u),
			data: files.RenderServiceDropIn(pl.profiles, l.Soft, l.Hard, tasksMaxText(per.TasksMax, u)), unit: u, systemd: true})
	}
	return wants
}
