package tune

// The boot check: what the host will have after its next boot, per item
// hostprep persisted, as package hostconf reads the configuration. Each
// layer judges its own items (bootSysctlItems in layer_sysctld.go,
// limitsDItems in layer_limitsd.go, systemdItems in layer_systemd.go,
// tasksItems in layer_tasks.go); bootItems runs them against the boot
// with and without the files now on /run, and plan, apply, status and
// verify --boot print the result.

import (
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// BootValue is what a key or limit will be after the next boot, and the
// file and 1-based line that set it (no file: the kernel's or systemd's
// default stays).
type BootValue struct {
	Value string `json:"value"`
	File  string `json:"file,omitempty"`
	Line  int    `json:"line,omitempty"`
	// Writer is the program that writes it (hostconf.Writers:
	// "systemd-sysctl", "sysctl --system", "ufw", "tuned", ...); empty
	// for a limit.
	Writer string `json:"writer,omitempty"`
}

// BootItem compares one thing hostprep persists with what the host will
// have after its next boot (package hostconf reads the configuration the
// way systemd-sysctl, sysctl --system, pam_limits and systemd do).
type BootItem struct {
	// Key is a sysctl key; Limit names a nofile limit instead
	// ("limits.d nofile for *", "DefaultLimitNOFILE", "emqx.service LimitNOFILE").
	Key   string `json:"key,omitempty"`
	Limit string `json:"limit,omitempty"`
	// Want is what hostprep persists (a sysctl value, or "soft:hard").
	Want string `json:"want"`
	// Boot is the value after the next boot and the file line that sets it.
	Boot BootValue `json:"boot"`
	// OK says the boot value satisfies Want (by the key's mode; a nofile
	// limit at least Want).
	OK bool `json:"ok"`
	// Problem says why not, naming the file and line that win, and the fix.
	Problem string `json:"problem,omitempty"`
	// NotInstalled says the item is a unit's (LimitNOFILE, TasksMax) and
	// the unit has no unit file (for an instance, neither has its
	// template) in any systemd unit directory: it is not installed, so
	// no service gets the value yet. Boot is what the unit gets once it
	// is installed (hostprep's drop-in, read as systemd will read it);
	// OK judges that, so a unit that is not installed fails nothing,
	// but it is no plain ok either: Note says so.
	NotInstalled bool `json:"not_installed,omitempty"`
	// Note says what the item's OK does not (NotInstalled: which unit
	// is missing and that the drop-in applies once it is installed).
	Note string `json:"note,omitempty"`
	// Writers are the programs after the sysctl.d loader that set the
	// key (ufw, tuned, rc.local, a service running sysctl), each with
	// its verdict: OK only where none overrides hostprep's value or
	// may do so unseen.
	Writers []BootWriter `json:"writers,omitempty"`
	// hard is a nofile limit's hard value in force at boot
	// (hostconf.Unlimited when none or unlimited).
	hard uint64
	// unit is the unit a LimitNOFILE or TasksMax item is of ("" for
	// any other item), and unitFile its unit file ("" when none).
	unit, unitFile string
	// mask is the mask (an empty file or a link to /dev/null) a unit's
	// item failed on, "" when it did not.
	mask string
	// runtimeMask says Note tells of a mask on /run that a reboot
	// removes (installNotes prints it).
	runtimeMask bool
}

// volatileDirs are directories boot reads that live on /run, a tmpfs
// emptied at every boot (file-hierarchy(7)): a file there now is not there
// after the next reboot, so it cannot make a value hold then.
// The generators' directories (/run/systemd/generator*) are left out:
// systemd runs its generators again at every boot, before it reads them.
var volatileDirs = []string{"/run/sysctl.d", "/run/modules-load.d", "/run/systemd/system.control", "/run/systemd/transient", "/run/systemd/system",
	"/run/systemd/system.attached", "/run/systemd/system.conf.d"}

// generated says whether p (relative to the root) is in a generator's
// output directory, written again at every boot.
func generated(p string) bool {
	for _, d := range []string{"/run/systemd/generator", "/run/systemd/generator.early", "/run/systemd/generator.late"} {
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// onRun says whether p (relative to the root) is on /run, a tmpfs
// emptied at every boot.
func onRun(p string) bool { return strings.HasPrefix(path.Clean(p)+"/", "/run/") }

// nextBoot is overlay (paths relative to root, nil: absent) with every
// file in volatileDirs (and their drop-in directories) marked absent, as
// the next boot finds them, and so is every file on /run (outside the
// generators' directories) that an entry of the other directories boot
// reads links to (`systemctl link /run/x.service`, a drop-in or sysctl
// file linked there); overlay's own entries stay.
func nextBoot(root string, overlay map[string][]byte) map[string][]byte {
	out := maps.Clone(overlay)
	if out == nil {
		out = map[string][]byte{}
	}
	var mark func(rel string, depth int)
	mark = func(rel string, depth int) {
		ents, _ := os.ReadDir(filepath.Join(root, rel))
		for _, e := range ents {
			p := path.Join(rel, e.Name())
			if e.IsDir() {
				if depth == 0 {
					mark(p, 1) // UNIT.d drop-in directories
				}
				continue
			}
			if _, ok := out[p]; !ok {
				out[p] = nil
			}
		}
	}
	for _, d := range volatileDirs {
		mark(d, 0)
	}
	var links func(rel string, depth int)
	links = func(rel string, depth int) {
		ents, _ := os.ReadDir(filepath.Join(root, rel))
		for _, e := range ents {
			p := path.Join(rel, e.Name())
			if e.IsDir() && depth == 0 {
				links(p, 1) // UNIT.d drop-in directories
			}
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			if t := hostconf.Resolve(root, p); onRun(t) && !generated(t) {
				if _, ok := out[t]; !ok {
					out[t] = nil
				}
			}
		}
	}
	for _, dirs := range [][]string{hostconf.UnitDirs, hostconf.ManagerDropInDirs, hostconf.SysctlDirs, hostconf.ModulesLoadDirs} {
		for _, d := range dirs {
			if !onRun(d) {
				links(d, 0)
			}
		}
	}
	return out
}

// bootRoot is the root the boot simulation reads ("" = /).
func (e Env) bootRoot() string { return e.Root }

// bootItems checks every key and limit in per against the boot that
// follows, as if the owned files had the bytes in overlay (paths relative
// to the root; nil overlay: the files on disk). Each key's mode is the
// one persisted with it (journal.PersistedKey.Mode), else modes' (a
// journal from before modes were persisted), else exact. Errors: exitcode.Environment when a
// configuration file cannot be read.
//
// The files on /run (volatileDirs) may or may not be there after the
// reboot: an item is OK only when it holds both with them and without
// them; one that fails only without them says so.
func bootItems(env Env, per journal.Persisted, modes map[string]string, overlay map[string][]byte, owned map[string]bool) ([]BootItem, error) {
	items, err := bootItemsOnce(env, per, modes, overlay, owned)
	if err != nil {
		return nil, err
	}
	gone := nextBoot(env.bootRoot(), overlay)
	if len(gone) == len(overlay) {
		return items, nil // nothing on /run
	}
	without, err := bootItemsOnce(env, per, modes, gone, owned)
	if err != nil {
		return nil, err
	}
	for i := range items {
		switch {
		case i >= len(without):
		case items[i].mask != "" && without[i].mask == "":
			// a runtime mask (systemctl mask --runtime), of the unit
			// or of the name an alias leads to: gone after a reboot,
			// when the unit gets what its other files say
			mask, unit := items[i].mask, items[i].unit
			items[i] = without[i]
			if items[i].OK && !items[i].NotInstalled {
				items[i].runtimeMask = true
				items[i].Note = fmt.Sprintf("%s is masked now (%s), by a runtime mask (systemctl mask --runtime) on /run, a tmpfs emptied at every boot: after a reboot it is not masked and gets hostprep's drop-in %s; until then systemd refuses to start it (systemctl unmask --runtime %s lifts the mask now)", unit, mask, files.ServiceDropIn(unit), unit)
			}
		case items[i].OK && !without[i].OK:
			items[i] = without[i]
			items[i].Problem += " (this is the boot without the files now on /run, a tmpfs emptied at every boot: they count only if something writes them again at boot)"
		case without[i].NotInstalled && !items[i].NotInstalled:
			// its only unit file is on /run (a transient unit,
			// systemd-run): gone after a reboot
			items[i].NotInstalled = true
			items[i].Note = fmt.Sprintf("%s is not installed after a reboot: its only unit file, %s, is on /run, a tmpfs emptied at every boot (a transient unit of systemd-run, a portable service attached with --runtime, a unit linked there); hostprep's drop-in %s applies once the unit is installed, but until then no service gets it",
				items[i].unit, items[i].unitFile, files.ServiceDropIn(items[i].unit))
		}
	}
	return items, nil
}

func bootItemsOnce(env Env, per journal.Persisted, modes map[string]string, overlay map[string][]byte, owned map[string]bool) ([]BootItem, error) {
	items, err := bootSysctlItems(env, per, modes, overlay, owned)
	if err != nil {
		return nil, exitcode.Environmentf("tune: boot configuration: %w", err)
	}
	lim, err := bootLimitItems(env, per, overlay)
	if err != nil {
		return nil, exitcode.Environmentf("tune: boot configuration: %w", err)
	}
	tasks, err := tasksItems(env, per, overlay)
	if err != nil {
		return nil, exitcode.Environmentf("tune: boot configuration: %w", err)
	}
	return append(append(items, lim...), tasks...), nil
}

// bootLimitItems checks every nofile limit hostprep persisted against the
// boot that follows (limitItems), and each hard one in force then against
// fs.nr_open then: setrlimit refuses more (EPERM), so pam_limits fails
// the login and systemd sets a lower limit than the one written.
func bootLimitItems(env Env, per journal.Persisted, overlay map[string][]byte) ([]BootItem, error) {
	out, err := limitItems(env, per, overlay)
	if err != nil {
		return nil, err
	}
	nrOpen, nrFrom, err := numberAtBoot(env.bootRoot(), overlay, keyNrOpen, defaultNrOpen)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if it := &out[i]; it.hard != hostconf.Unlimited && it.hard > nrOpen {
			it.OK = false
			it.Problem = fmt.Sprintf("%s: hard nofile %d at boot is above fs.nr_open %d after the next boot (%s): setrlimit refuses it, so logins fail (\"Could not set limit\") and services do not get it; raise fs.nr_open (a profile's `fs.nr_open: {value: \"%d\", mode: at-least}`) or lower the limit", it.Limit, it.hard, nrOpen, nrFrom, it.hard)
		}
	}
	return out, nil
}

// limitItems compares each nofile limit hostprep persisted with what
// pam_limits (limitsDItems) and systemd (systemdItems) give at the next
// boot.
func limitItems(env Env, per journal.Persisted, overlay map[string][]byte) ([]BootItem, error) {
	out, err := limitsDItems(env, per, overlay)
	if err != nil {
		return nil, err
	}
	sd, err := systemdItems(env, per, overlay)
	if err != nil {
		return nil, err
	}
	return append(out, sd...), nil
}

// installedWhere is "on this host", or "in the image" in image mode.
func installedWhere(env Env) string {
	if env.ImageMode() {
		return "in the image"
	}
	return "on this host"
}

// installNotes say what the unit items among items (LimitNOFILE,
// TasksMax) of units that are not installed do not say with OK. Some of
// the units not installed (a profile's alternatives: emqx or mosquitto,
// whichever the host runs): a note per such unit, the Note of its first
// item, naming it and its drop-in. None of them installed: no note, one
// warning saying the limits reach no service at all. A unit masked now
// only by a runtime mask on /run, which a reboot removes (its items OK):
// a note saying so, in either case. Both nil when every unit is
// installed and none is masked that way.
func installNotes(env Env, items []BootItem) (notes, warnings []string) {
	var units, missing, masks []string
	for _, it := range items {
		if it.runtimeMask && !slices.Contains(masks, it.Note) {
			masks = append(masks, it.Note)
		}
		if it.unit == "" || slices.Contains(units, it.unit) {
			continue
		}
		units = append(units, it.unit)
		if it.NotInstalled {
			missing, notes = append(missing, it.unit), append(notes, it.Note)
		}
	}
	if len(missing) == 0 || len(missing) < len(units) {
		return append(notes, masks...), nil
	}
	return masks, []string{fmt.Sprintf("no unit hostprep tuned is installed %s (%s: no unit file at the next boot), so the limits in hostprep's %s reach no service until one is; install the service, or apply a profile whose systemd.services names the unit that runs it",
		installedWhere(env), strings.Join(missing, ", "), plural.Noun(len(missing), "drop-in"))}
}

// overlayOf maps the owned files a plan writes to their new bytes, by path
// relative to the root, for the boot simulation.
func overlayOf(env Env, steps []fileStep) map[string][]byte {
	out := map[string][]byte{}
	for _, f := range steps {
		out[env.relPath(f.path)] = f.to
	}
	return out
}

// relPath is host path p (under Root) as the boot simulation names it,
// relative to the root: "/etc/sysctl.d/60-hostprep.conf".
func (e Env) relPath(p string) string {
	if e.Root != "" {
		p = "/" + relTo(e.Root, p)
	}
	return path.Clean(p)
}

// ownedFiles are the files in the journal, by path relative to the root.
func ownedFiles(env Env, st *journal.State) map[string]bool {
	out := map[string]bool{}
	for p := range st.Files {
		out[env.relPath(p)] = true
	}
	return out
}

func joinSemi(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += "; "
		}
		out += s
	}
	return out
}

// relTo is p relative to root ("etc/sysctl.d/x.conf"), or p when it is
// not under root.
func relTo(root, p string) string {
	r, err := filepath.Rel(root, p)
	if err != nil || strings.HasPrefix(r, "..") {
		return strings.TrimPrefix(p, "/")
	}
	return r
}
