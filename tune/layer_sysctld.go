package tune

import (
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// The sysctl.d layer: hostprep's /etc/sysctl.d/60-hostprep.conf (or
// --persist-name) with every persisted key, fs.nr_open and fs.file-max
// first; optional keys get the "-" prefix. Written and rolled back as an
// owned file (layer_files.go); verified at boot by bootSysctlItems
// (bootcheck.go), which names any file that wins instead.

// sysctlDWants plans the sysctl.d file.
func (pl *Plan) sysctlDWants(per journal.Persisted) []fileWant {
	if len(per.Sysctl) == 0 {
		return nil
	}
	keys := make([]string, 0, len(per.Sysctl))
	for k := range per.Sysctl {
		keys = append(keys, k)
	}
	sortKeys(keys)
	lines := make([]files.SysctlLine, len(keys))
	for i, k := range keys {
		v := per.Sysctl[k]
		lines[i] = files.SysctlLine{Key: k, Value: v.Value, Optional: v.Optional, Comment: v.Comment}
	}
	return []fileWant{{path: pl.env.sysctlConf(), data: files.RenderSysctl(pl.profiles, lines)}}
}
