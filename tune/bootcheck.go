package tune

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/sysval"
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

// persistHint suggests a --persist-name that sorts after the file that
// wins, where a name can (procps reads /etc/sysctl.conf after every
// sysctl.d file, so nothing sorts after it there).
func persistHint(env Env, loader hostconf.Loader, win hostconf.ConfFile) string {
	if loader == hostconf.ProcpsSystem && win.Path == hostconf.SysctlConf {
		return " (sysctl --system reads /etc/sysctl.conf last, so only editing it helps)"
	}
	base := path.Base(win.Path)
	name, ok := nameAfter(base)
	if !ok {
		return fmt.Sprintf(" (no file name --persist-name takes sorts after %q, which systemd-sysctl and sysctl --system compare byte by byte: rename that file or change its line)", base)
	}
	return fmt.Sprintf(", or apply again with --persist-name %s (%s) so hostprep's file is read after %s", name, env.reapply("--persist-name", name), base)
}

// nameAfter is a --persist-name (CheckPersistName: printable ASCII, at
// most 200 bytes) that sorts after base byte by byte, as the sysctl
// loaders order files: zz-hostprep.conf with more z's, else ~ (the
// highest printable ASCII byte) repeated. false when none does: base
// begins with a byte above ~ (a UTF-8 name) or with more ~ than fit.
func nameAfter(base string) (string, bool) {
	const tail = "-hostprep.conf"
	for _, lead := range []string{"z", "~"} {
		for k := 2; k+len(tail) <= 200; k++ {
			if name := strings.Repeat(lead, k) + tail; name > base {
				return name, true
			}
			if lead == "z" && k == 8 {
				break
			}
		}
	}
	return "", false
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

// numberAtBoot is the numeric key (fs.nr_open, fs.file-max) after the
// next boot of the tree under root, as if the files in overlay had its
// bytes: the value the file that wins sets (read as the kernel reads it,
// sysval.Uint: 0x300000 is 3145728, 010 is 8) and "FILE:LINE sets it at
// boot". A value the kernel refuses (outside profiles.KernelBounds:
// fs.nr_open above 2147483584) leaves the last accepted one under procps
// and the default under systemd-sysctl (Sysctl.LookupAccepted), as does
// no file setting it: then def and "the kernel default at boot ..." (def
// 0: unknown, 0 and "").
// Errors: exitcode.Environment when a configuration file cannot be read.
func numberAtBoot(root string, overlay map[string][]byte, key string, def uint64) (uint64, string, error) {
	s, err := hostconf.ReadSysctlOverlay(root, hostconf.DetectLoader(root), overlay)
	if err != nil {
		return 0, "", exitcode.Environmentf("tune: boot configuration: %w", err)
	}
	why := "no sysctl file sets it"
	accepted := func(v string) bool {
		f, ok := sysval.Written(v, 1)
		return ok && len(f) == 1 && kernelRefuses(key, v, "0") == ""
	}
	last, named := s.Lookup(key)
	if named && !accepted(last.Value) {
		why = fmt.Sprintf("%s sets %s, which the kernel refuses", last.Where(), strings.TrimSpace(last.Value))
	}
	if set, ok := s.LookupAccepted(key, accepted); ok {
		f, _ := sysval.Written(set.Value, 1)
		n, _ := sysval.Uint(f[0])
		from := set.Where() + " sets it at boot"
		if set.Where() != last.Where() {
			from += " (" + why + ")"
		}
		return n, from, nil
	}
	if def == 0 {
		return 0, "", nil
	}
	return def, "the kernel default at boot (" + why + ")", nil
}

// kernelRefuses is why the kernel refuses value for key when written at
// boot, or "" when it takes it. A numeric want (every field an integer)
// makes the key numeric, taking as many fields as want has: the value is
// read as proc_dointvec reads it (sysval.Written), so text after those
// fields is ignored ("32768 # keep") while a value without them, or with
// a number followed by anything but a blank ("1000x", a trailing U+00A0,
// which systemd does not strip), is refused (EINVAL); then a field
// outside profiles.KernelBounds is refused too. A non-numeric want: only
// the bounds of a numeric value are checked.
func kernelRefuses(key, value, want string) string {
	if sysval.PortSetKeys[key] {
		if _, ok := sysval.KernelPorts(value); !ok {
			return fmt.Sprintf("EINVAL: the kernel does not take %s as a list of ports and ranges (\"1883,8083-8084\": no blanks, each range low-high, each port below 65536)", shownValue(value))
		}
		return ""
	}
	kept, ok := kernelKeeps(key, value, want)
	if !ok {
		return fmt.Sprintf("EINVAL: the kernel does not take %s as %s", shownValue(value), plural.N(len(sysval.Fields(want)), "number"))
	}
	f := sysval.Fields(kept)
	dec := make([]string, len(f))
	for i, x := range f {
		n, ok := sysval.Uint(x)
		if !ok {
			return "" // negative or not a number: no bound of hostprep's applies
		}
		dec[i] = strconv.FormatUint(n, 10)
	}
	if msgs := profiles.CheckBounds(key, strings.Join(dec, " "), ""); len(msgs) > 0 {
		return msgs[0]
	}
	return ""
}

// shownValue is a sysctl value for a report: its fields, or Go-quoted
// when it holds a control character or a non-ASCII one (a trailing
// U+00A0 the kernel refuses would otherwise not show).
func shownValue(v string) string {
	if strings.IndexFunc(v, func(r rune) bool { return r > 0x7e || (r < 0x20 && r != '\t' && r != ' ') }) >= 0 {
		return strconv.QuoteToASCII(v)
	}
	return sysval.Normalize(v)
}

// kernelKeeps is what the kernel keeps of value written to key, whose
// value hostprep wants to be want: for a port set key
// (sysval.PortSetKeys) the set as the kernel prints it
// (sysval.KernelPorts: "8084,8083" is "8083-8084"); for a numeric want (every field an
// integer the kernel reads) the first len(fields of want) numbers of
// value, in decimal (sysval.Written), ok false when the kernel refuses
// the write or it sets fewer fields; else value normalized.
func kernelKeeps(key, value, want string) (string, bool) {
	if sysval.PortSetKeys[key] {
		return sysval.KernelPorts(value)
	}
	n := len(sysval.Fields(want))
	if w, ok := sysval.Written(want, n); !ok || len(w) != n {
		return sysval.Normalize(value), true
	}
	f, ok := sysval.Written(value, n)
	return strings.Join(f, " "), ok && len(f) == n
}

// lowestAtBoot is numberAtBoot's value of key with the files now on /run
// and without them (nextBoot), whichever is lower: a file there may or may
// not be written again at boot, and a ceiling must hold either way.
func lowestAtBoot(root string, overlay map[string][]byte, key string, def uint64) (uint64, string, error) {
	n, from, err := numberAtBoot(root, overlay, key, def)
	if err != nil {
		return n, from, err
	}
	if m, mfrom, err := numberAtBoot(root, nextBoot(root, overlay), key, def); err == nil && m < n {
		return m, mfrom + ", once the files now on /run (a tmpfs) are gone", nil
	}
	return n, from, nil
}

// anyUser is a user name in no group, so that only "*" lines apply to it:
// what every ordinary login session gets.
const anyUser = hostconf.AnyUser

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

func bootSysctlItems(env Env, per journal.Persisted, modes map[string]string, overlay map[string][]byte, owned map[string]bool) ([]BootItem, error) {
	if len(per.Sysctl) == 0 {
		return nil, nil
	}
	root := env.bootRoot()
	loader := hostconf.DetectLoader(root)
	s, err := hostconf.ReadSysctlOverlay(root, loader, overlay)
	if err != nil {
		return nil, err
	}
	s.Dir = env.sysctlDir()
	mods, err := hostconf.ModulesAtBoot(root, overlay)
	if err != nil {
		return nil, err
	}
	boot, err := hostconf.ReadBootWith(s, overlay)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(per.Sysctl))
	for k := range per.Sysctl {
		keys = append(keys, k)
	}
	sortKeys(keys)
	var out []BootItem
	for _, k := range keys {
		want := per.Sysctl[k].Value
		it := BootItem{Key: k, Want: want, OK: true}
		set, ok := s.Lookup(k)
		if ok {
			it.Boot = BootValue{Value: shownValue(set.Value), File: set.File.Name(), Line: set.Line, Writer: string(loader)}
		}
		mode := per.Sysctl[k].Mode
		if m, ok := modes[k]; ok && mode == "" {
			mode = m // a journal written before modes were persisted
		}
		refused := ""
		if ok {
			refused = kernelRefuses(k, set.Value, want)
		}
		if refused != "" { // procps keeps an earlier line the kernel took
			if acc, ok := s.LookupAccepted(k, func(v string) bool { return kernelRefuses(k, v, want) == "" }); ok {
				set, refused = acc, ""
			}
		}
		if ok && refused == "" {
			// the value the kernel keeps: "32768 # keep" is 32768
			set.Value, _ = kernelKeeps(k, set.Value, want)
			it.Boot = BootValue{Value: set.Value, File: set.File.Name(), Line: set.Line, Writer: string(loader)}
		}
		switch {
		case !ok:
			it.OK = false
			it.Problem = fmt.Sprintf("sysctl %s: no file sets it at boot (%s), so after a reboot it is back at the kernel default instead of %s; is hostprep's sysctl.d file masked or the key excluded with \"-%s\"?", k, loader, want, k)
		case refused != "":
			it.OK = false
			it.Problem = fmt.Sprintf("sysctl %s: %s sets %s, which the kernel refuses (%s), so after a reboot the key keeps its default instead of %s; change or remove that line", k, set.Where(), shownValue(set.Value), refused, want)
		case !owned[set.File.Path] && !sysval.SatisfiesKey(k, set.Value, want, mode):
			it.OK = false
			it.Problem = fmt.Sprintf("sysctl %s: after a reboot %s sets %s (%s reads it after hostprep's file), so the host boots with %s, not %s; hostprep never edits a file it does not own: change or remove that line%s", k, set.Where(), sysval.Normalize(set.Value), loader, sysval.Normalize(set.Value), want, persistHint(env, loader, set.File))
		case !sysval.SatisfiesKey(k, set.Value, want, mode) && path.Dir(set.File.Path) == "/etc/sysctl.d" && set.File.Path != env.sysctlConf():
			it.OK = false
			it.Problem = fmt.Sprintf("sysctl %s: %s sets %s, not %s: it is hostprep's file from an apply under --persist-name %s, read after %s at boot; %s takes it back and keeps the name %s", k, set.Where(), sysval.Normalize(set.Value), want, path.Base(set.File.Path), path.Base(env.sysctlConf()), env.reapply(), path.Base(env.sysctlConf()))
		case !sysval.SatisfiesKey(k, set.Value, want, mode):
			it.OK = false
			it.Problem = fmt.Sprintf("sysctl %s: %s sets %s, not the %s hostprep wrote (the file was edited); %s writes it again", k, set.Where(), sysval.Normalize(set.Value), want, env.reapply())
		}
		if m := hostconf.ModuleFor(k); m != "" && it.OK {
			if _, loaded := mods[m]; !loaded {
				it.OK = false
				it.Boot = BootValue{Value: "absent"} // no file's line can set a key that does not exist
				it.Problem = fmt.Sprintf("sysctl %s: needs kernel module %s, which no modules-load.d file loads before %s runs, so at boot the key does not exist yet and stays at its default; hostprep writes %s for it", k, m, loader, files.ModulesLoad)
			}
		}
		checkWriters(&it, k, want, mode, boot.Key(k))
		out = append(out, it)
	}
	return out, nil
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
// pam_limits and systemd give at the next boot.
func limitItems(env Env, per journal.Persisted, overlay map[string][]byte) ([]BootItem, error) {
	root := env.bootRoot()
	overlay = imageLimitsConf(env, overlay)
	var out []BootItem
	if n := per.Nofile; n != nil {
		for _, u := range per.NofileUsers {
			var b hostconf.Nofile
			var err error
			switch {
			case u == "*":
				b, err = hostconf.NofileOverlay(root, anyUser, overlay)
			case strings.HasPrefix(u, "@") && !strings.Contains(u, ":"):
				// A member of the group with no line of its own.
				b, err = hostconf.NofileForGroupsOverlay(root, anyUser, []string{u[1:]}, overlay)
			case strings.HasPrefix(u, "%") || strings.Contains(u, ":"):
				continue // maxlogins domains and uid/gid ranges: no single user stands for them
			default:
				b, err = hostconf.NofileOverlay(root, u, overlay)
			}
			if err != nil {
				return nil, err
			}
			out = append(out, limitItem(env, "limits.d nofile for "+u, *n, b))
		}
	}
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

func fmtRlimit(v uint64) string {
	if v == hostconf.Unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

// limitItem compares pam_limits' boot soft and hard with want, which
// hostprep wrote in files.LimitsConf; the problem says whether hostprep's
// file is missing, was edited, or another line wins.
func limitItem(env Env, name string, want journal.Limit, b hostconf.Nofile) BootItem {
	soft, hard := b.Soft, b.Hard
	it := BootItem{Limit: name, Want: fmtLimit(want.Soft, want.Hard), OK: true, hard: hostconf.Unlimited}
	if hard.Set {
		it.hard = hard.Value
	}
	if soft.Set && hard.Set && soft.Value > hard.Value {
		// pam_limits lowers a soft above the hard to the hard before
		// setrlimit (setup_limits in pam_limits.c).
		soft.Value = hard.Value
	}
	s, h := "inherited", "inherited"
	if soft.Set {
		s = fmtRlimit(soft.Value)
	}
	if hard.Set {
		h = fmtRlimit(hard.Value)
	}
	it.Boot.Value = s + ":" + h
	win := hard
	if !hard.Set || (hard.Value >= want.Hard && soft.Set && soft.Value < want.Soft) {
		win = soft
	}
	if win.Set {
		it.Boot.File, it.Boot.Line = win.File.Name(), win.Line
	}
	switch {
	case b.Broken.Set:
		it.OK = false
		it.Boot.Value, it.Boot.File = "no session", b.Broken.File.Name()
		it.Problem = brokenLimits(env, name, b.Broken.File)
	case b.NoLimits.Set:
		it.OK = false
		it.Boot.File, it.Boot.Line = b.NoLimits.File.Name(), b.NoLimits.Line
		it.Problem = fmt.Sprintf("%s: %s line %q makes pam_limits set no limit at all for it (PAM_IGNORE; files after it are not read), so sessions keep what they inherit, not the %s hostprep wrote; hostprep never edits a file it does not own: remove that line", name, b.NoLimits.Where(), b.NoLimits.Domain+" -", it.Want)
	case !soft.Set || !hard.Set:
		it.OK = false
		it.Problem = fmt.Sprintf("%s: pam_limits sets no nofile for it (soft %s, hard %s): hostprep's %s is missing, unreadable or edited; %s writes it again", name, s, h, files.LimitsConf, env.reapply())
	case (hard.Value < want.Hard || soft.Value < want.Soft) && win.File.Path == files.LimitsConf:
		it.OK = false
		it.Problem = fmt.Sprintf("%s: new login sessions get nofile %s:%s, below the %s hostprep wrote: hostprep's %s was edited (line %d); %s writes it again", name, s, h, it.Want, files.LimitsConf, win.Line, env.reapply())
	case hard.Value < want.Hard || soft.Value < want.Soft:
		it.OK = false
		it.Problem = fmt.Sprintf("%s: new login sessions get nofile %s:%s, below the %s hostprep wrote: %s line %q wins (a user line beats @group beats *, and a later file beats an earlier one); hostprep never edits a file it does not own: change or remove that line", name, s, h, it.Want, win.Where(), win.Domain)
	}
	return it
}

// imageLimitsConf is overlay with an empty limits.conf when an image
// has none and no PAM file of it loads pam_limits (an image of
// configuration only, or without PAM): then nothing fails a session for
// it. An image whose /etc/pam.d (or /usr/lib/pam.d) loads pam_limits
// without a limits.conf is left as it is: every login of a host booted
// from it fails (brokenLimits).
func imageLimitsConf(env Env, overlay map[string][]byte) map[string][]byte {
	if !env.ImageMode() || imagePamLimits(env.bootRoot()) != "" {
		return overlay
	}
	if _, ok := overlay[hostconf.LimitsConf]; ok {
		return overlay
	}
	if _, err := os.Lstat(filepath.Join(env.bootRoot(), hostconf.LimitsConf)); !errors.Is(err, fs.ErrNotExist) {
		return overlay
	}
	out := maps.Clone(overlay)
	if out == nil {
		out = map[string][]byte{}
	}
	out[hostconf.LimitsConf] = []byte{}
	return out
}

// imagePamLimits is the first PAM service file under root that loads
// pam_limits (relative to root), or "".
func imagePamLimits(root string) string {
	for _, d := range []string{"/etc/pam.d", "/usr/lib/pam.d"} {
		ents, _ := os.ReadDir(filepath.Join(root, d))
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(root, d, e.Name()))
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(b), "\n") {
				if l = strings.TrimSpace(l); !strings.HasPrefix(l, "#") && strings.Contains(l, "pam_limits.so") {
					return path.Join(d, e.Name()) // a commented-out line loads nothing
				}
			}
		}
	}
	return ""
}

// brokenLimits is the problem of a limits file pam_limits cannot open:
// it then fails every session it opens ("cannot open session: Error in
// service module", measured with runuser and Debian 12's pam_limits).
func brokenLimits(env Env, name string, f hostconf.ConfFile) string {
	const fails = "pam_limits then fails every login session (\"cannot open session: Error in service module\": login, su, sshd, runuser), so no session gets any limit"
	if f.Path != hostconf.LimitsConf {
		return fmt.Sprintf("%s: pam_limits cannot open %s (a link to a missing file); %s; remove that entry or fix its link", name, f.Name(), fails)
	}
	missing := fmt.Sprintf("%s: %s does not exist", name, f.Name())
	if f.Target != f.Path {
		missing = fmt.Sprintf("%s: %s is a link to a missing file", name, f.Path)
	}
	if env.ImageMode() {
		return fmt.Sprintf("%s in the image, whose %s loads pam_limits: a host booted from it fails every login session there (\"cannot open session: Error in service module\"), so no session gets hostprep's limits.d value; the file comes with the PAM modules package (Debian: libpam-modules): install it into the image, or create %s (it may be empty)", missing, imagePamLimits(env.bootRoot()), hostconf.LimitsConf)
	}
	return fmt.Sprintf("%s; %s; restore it (Debian: libpam-modules ships it; it may be empty)", missing, fails)
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

// BootStatus is the JSON of `hostprep tune verify --boot`.
type BootStatus struct {
	// Changed is always false: verify only reads.
	Changed bool `json:"changed"`
	// Applied is false when there is no journal (nothing applied: no
	// items, and verify --boot passes as plain verify does).
	Applied bool `json:"applied"`
	// Journal is the state file read.
	Journal string     `json:"journal"`
	Items   []BootItem `json:"items"`
	// Failing counts items whose boot value differs from what hostprep
	// applied.
	Failing int `json:"failing"`
	// NotInstalled lists the units hostprep wrote a drop-in for that have
	// no unit file (their items are marked not_installed): not failing,
	// but no service gets their limits until they are installed.
	NotInstalled []string `json:"not_installed,omitempty"`
	// Notes say so, one per such unit, when another unit hostprep tuned
	// is installed (a profile's alternatives: emqx or mosquitto).
	Notes []string `json:"notes,omitempty"`
	// Warnings say so when no unit hostprep tuned is installed: the
	// limits reach no service.
	Warnings []string `json:"warnings,omitempty"`
}

// VerifyBoot compares every key and limit hostprep persisted (from the
// journal) with what the host will have after its next boot. It fails
// (exitcode.Failed, exit 1) naming every key whose boot value differs and
// the file:line that wins. With nothing applied (no journal) it returns a
// BootStatus with Applied false and no error, as Verify does. Errors: exitcode.Environment when
// the journal or a configuration file cannot be read.
func VerifyBoot(env Env) (*BootStatus, error) {
	if err := env.checkRoot("verify --boot"); err != nil {
		return nil, err
	}
	st, err := env.loadJournal()
	if err != nil {
		return nil, exitcode.Environmentf("tune verify --boot: %w", err)
	}
	bs := &BootStatus{Items: []BootItem{}, Journal: env.stateFile()}
	if st == nil {
		return bs, nil
	}
	bs.Applied = true
	env = env.keepPersistName(st).withLastApply(st)
	modes := map[string]string{}
	for k, j := range st.Keys {
		modes[k] = j.Mode
	}
	items, err := bootItems(env, st.Persisted, modes, nil, ownedFiles(env, st))
	if err != nil {
		return nil, err
	}
	bs.Items = items
	bs.Notes, bs.Warnings = installNotes(env, items)
	var bad []string
	for _, it := range items {
		if !it.OK {
			bs.Failing++
			bad = append(bad, it.Problem)
		}
		if it.NotInstalled && !slices.Contains(bs.NotInstalled, it.unit) {
			bs.NotInstalled = append(bs.NotInstalled, it.unit)
		}
	}
	if bs.Failing > 0 {
		return bs, exitcode.Failedf("tune verify --boot: %s will not have hostprep's value after a reboot: %s", plural.N(bs.Failing, "item"), joinSemi(bad))
	}
	return bs, nil
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
