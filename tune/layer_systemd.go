package tune

import (
	"cmp"
	"fmt"
	"path"
	"sort"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// The systemd layers: the manager drop-in
// /etc/systemd/system.conf.d/60-hostprep.conf (DefaultLimitNOFILE, soft
// kept at 1024 in the built-ins) and one drop-in per unit
// /etc/systemd/system/UNIT.d/60-hostprep.conf (LimitNOFILE, soft = hard,
// and TasksMax= when the profile sets systemd.tasks_max: layer_tasks.go).
// Written and rolled back as owned files (ownedfile.go); verified at
// boot by systemdItems (here; boot.go's bootLimitItems adds the
// fs.nr_open check every nofile layer shares).

// layerSystemd names the systemd layers' drop-ins at apply time.
const layerSystemd = "systemd"

// systemdWants plans the manager and unit drop-ins.
func (pl *Plan) systemdWants(per journal.Persisted) []fileWant {
	var wants []fileWant
	if d := per.DefaultLimitNOFILE; d != nil {
		wants = append(wants, fileWant{layer: layerSystemd, path: files.SystemConf,
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
		wants = append(wants, fileWant{layer: layerSystemd, path: files.ServiceDropIn(u),
			data: files.RenderServiceDropIn(pl.profiles, l.Soft, l.Hard, tasksMaxText(per.TasksMax, u)), unit: u, systemd: true})
	}
	return wants
}

// systemdItems compares DefaultLimitNOFILE and each unit's LimitNOFILE
// hostprep persisted with what systemd gives at the next boot (none
// where systemd is not PID 1 there).
func systemdItems(env Env, per journal.Persisted, overlay map[string][]byte) ([]BootItem, error) {
	root := env.bootRoot()
	var out []BootItem
	if ok, _ := env.SystemdDecision(); !ok {
		return out, nil
	}
	pid1 := env.pid1Nofile()
	if d := per.DefaultLimitNOFILE; d != nil {
		m, read, err := hostconf.ManagerNofileOverlay(root, overlay)
		if err != nil {
			return nil, err
		}
		out = append(out, systemdItem(env, "DefaultLimitNOFILE", files.SystemConf, read, *d, m.Resolved(pid1)))
	}
	units := make([]string, 0, len(per.Services))
	for u := range per.Services {
		units = append(units, u)
	}
	sort.Strings(units)
	for _, u := range units {
		m, read, err := hostconf.UnitNofileOverlay(root, u, overlay)
		if err != nil {
			return nil, err
		}
		it := systemdItem(env, u+" LimitNOFILE", files.ServiceDropIn(u), read, per.Services[u], m.Resolved(pid1))
		notStarted(env, &it, read, u, "LimitNOFILE")
		out = append(out, it)
	}
	return out, nil
}

// notStarted marks it (unit u's item for its setting key, "LimitNOFILE"
// or "TasksMax") not OK when systemd will not start u after a reboot:
// its unit file, read[0] of the files hostconf.UnitNofile lists, is masked
// (empty or a link to /dev/null) or fails to parse. A unit with no unit
// file at all is not installed: that fails nothing (hostprep's drop-in
// applies once it is installed) but is no plain ok either: it is marked
// NotInstalled, with a note naming the unit.
func notStarted(env Env, it *BootItem, read []hostconf.ConfFile, u, key string) {
	it.unit = u
	if unitMissing(read, u) {
		it.NotInstalled = true
		it.Note = fmt.Sprintf("%s is not installed %s (no unit file in any systemd unit directory, no SysV init script in /etc/init.d that systemd-sysv-generator makes one of): hostprep's drop-in %s applies once the unit is installed, but until then no service gets it",
			u, installedWhere(env), files.ServiceDropIn(u))
		return
	}
	it.unitFile = read[0].Name()
	switch {
	case read[0].Masked:
		it.OK = false
		it.mask = cmp.Or(read[0].Mask, read[0].Path)
		it.Problem = fmt.Sprintf("%s: the unit is masked (%s is empty or a link to /dev/null): systemd will not start it after a reboot, so no %s applies; %s", it.Limit, it.mask, key, unmaskFix(it.mask))
	case read[0].Broken != "":
		it.OK = false
		it.Boot = BootValue{Value: "not loaded"}
		it.Problem = fmt.Sprintf("%s: systemd cannot parse the unit file (%s) and fails to load the unit (\"failed to load properly\"), so after a reboot it is not started and no %s applies; hostprep never edits a file it does not own: fix that line", it.Limit, read[0].Broken, key)
	}
}

// unmaskFix is how to lift mask, a unit's mask (a path relative to the
// root), as systemd 252's systemctl does: `systemctl unmask` removes a
// mask in /etc/systemd/system only, --runtime one in /run/systemd/system;
// a mask elsewhere (a package's in /lib/systemd/system) neither removes
// (measured with systemctl --root: it exits 0 and the unit stays
// masked), but a unit file of that name in /etc/systemd/system comes
// first. systemctl unmask removes the mask of the name it is given, not
// of an alias's target: the command names the mask's own name.
func unmaskFix(mask string) string {
	name := path.Base(mask)
	switch path.Dir(mask) {
	case "/etc/systemd/system":
		return fmt.Sprintf("unmask it (systemctl unmask %s) or name the unit that runs the service", name)
	case "/run/systemd/system":
		return fmt.Sprintf("unmask it (systemctl unmask --runtime %s) or name the unit that runs the service", name)
	}
	return fmt.Sprintf("systemctl unmask does not remove a mask there (only one in /etc/systemd/system), a mask a package ships on purpose (often a SysV name another unit replaces): name the unit that runs the service, or override the mask with a unit file /etc/systemd/system/%s", path.Base(mask))
}

// unitMissing says whether read, the files hostconf.UnitNofile lists for
// unit u, hold no unit file of u (nor of its template, for an
// instance; an alias link counts as u's): u is not installed, and
// drop-ins alone do not make a unit.
func unitMissing(read []hostconf.ConfFile, u string) bool {
	return len(read) == 0 || !hostconf.IsUnitFile(read[0].Path, u)
}

// systemdItem compares systemd's boot value of a nofile setting with want,
// which hostprep wrote in its drop-in own (a path relative to the root);
// read are the files systemd reads for it, in order. The problem names
// what wins instead: hostprep's drop-in not read (removed, masked or
// hidden) and a default or another file in force, hostprep's own drop-in
// with other bytes, or a file read after it.
func systemdItem(env Env, name, own string, read []hostconf.ConfFile, want journal.Limit, got hostconf.NofileSetting) BootItem {
	it := BootItem{Limit: name, Want: files.SystemdNofile(want.Soft, want.Hard), OK: true, Boot: BootValue{Value: got.String()}, hard: got.Hard}
	if got.Infinity != "" {
		it.Boot.Value += " (" + got.Infinity + ")"
	}
	if got.Set {
		it.Boot.File, it.Boot.Line = got.File.Name(), got.Line
	}
	// where hostprep kept a unit's own infinity (soft or hard), only an
	// infinity written at boot is as much: got holds it resolved
	ws, wh, wok := hostconf.ParseNofile(got.Written())
	covers := func(got, want, written uint64) bool {
		if want == hostconf.Unlimited {
			return wok && written == hostconf.Unlimited
		}
		return got >= want
	}
	if covers(got.Hard, want.Hard, wh) && covers(got.Soft, want.Soft, ws) {
		return it
	}
	it.OK = false
	head := fmt.Sprintf("%s: after a reboot systemd uses %s from %s, below the %s hostprep wrote", name, got.String(), got.Where(), it.Want)
	if got.Infinity != "" {
		head = fmt.Sprintf("%s: after a reboot systemd uses %s from %s, which gives %s (%s), below the %s hostprep wrote", name, got.Written(), got.Where(), got.String(), got.Infinity, it.Want)
	}
	it.Problem = dropInProblem(env, head, own, read, got.File.Path)
	return it
}

// dropInProblem is the problem of a systemd setting hostprep wrote in its
// drop-in own (a path relative to the root) that loses at boot to the one
// in winner (a path, "" for a default), after head (what systemd uses and
// what hostprep wrote): hostprep's drop-in not read (removed, masked or
// hidden), hostprep's own drop-in with other bytes, or a file read after
// it.
func dropInProblem(env Env, head, own string, read []hostconf.ConfFile, winner string) string {
	again := env.reapply()
	hider := hiderOf(read, own)
	switch {
	case hider >= 0:
		masked := ""
		if read[hider].Masked {
			masked = " (a link to /dev/null: a mask)"
		}
		return fmt.Sprintf("%s: hostprep's drop-in %s is hidden by %s%s, which systemd reads instead (same name, a directory with precedence); hostprep never edits a file it does not own: remove that file", head, own, read[hider].Path, masked)
	case !readsOwn(read, own):
		return fmt.Sprintf("%s: hostprep's drop-in %s is not read (removed, or masked with a link to /dev/null); %s writes it again", head, own, again)
	case winner == own:
		return fmt.Sprintf("%s: hostprep's drop-in was edited; %s writes it again", head, again)
	}
	return fmt.Sprintf("%s, a drop-in that sorts after hostprep's %s; hostprep never edits a file it does not own: change or remove that line", head, own)
}
