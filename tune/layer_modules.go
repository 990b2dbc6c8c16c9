package tune

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// The modules-load.d layer: /etc/modules-load.d/60-hostprep.conf names the
// kernel modules that register persisted keys (net.netfilter.* needs
// nf_conntrack), so systemd-modules-load loads them before systemd-sysctl
// applies the sysctl.d file. Written and rolled back as an owned file
// (ownedfile.go); verified at boot by bootSysctlItems (layer_sysctld.go).

// layerModules names the modules-load.d layer's file at apply time.
const layerModules = "modules-load.d"

// modulesWants plans the modules-load.d file, when a persisted key needs a
// module.
func (pl *Plan) modulesWants(per journal.Persisted) []fileWant {
	mods, why := modulesFor(per.Sysctl, pl.env.sysctlConf())
	if len(mods) == 0 {
		return nil
	}
	return []fileWant{{layer: layerModules, path: files.ModulesLoad, data: files.RenderModules(pl.profiles, mods), why: why}}
}

// modulesFor lists the kernel modules the persisted keys need at boot
// (net.netfilter.* needs nf_conntrack), each with the keys that need it,
// and the reason for the modules-load.d file.
func modulesFor(keys map[string]journal.PersistedKey, conf string) ([]files.ModuleLine, string) {
	need := map[string][]string{}
	for k := range keys {
		if m := hostconf.ModuleFor(k); m != "" {
			need[m] = append(need[m], k)
		}
	}
	if len(need) == 0 {
		return nil, ""
	}
	names := make([]string, 0, len(need))
	for m := range need {
		names = append(names, m)
	}
	sort.Strings(names)
	out := make([]files.ModuleLine, len(names))
	var whys []string
	for i, m := range names {
		sort.Strings(need[m])
		ks := strings.Join(need[m], ", ")
		out[i] = files.ModuleLine{Module: m, Comment: "registers " + ks + "; loaded by systemd-modules-load before systemd-sysctl applies " + conf}
		whys = append(whys, fmt.Sprintf("loads %s at boot before systemd-sysctl runs, so %s exists when %s is applied (without it the key is missing then and keeps its default after a reboot)", m, ks, conf))
	}
	return out, strings.Join(whys, "; ")
}
