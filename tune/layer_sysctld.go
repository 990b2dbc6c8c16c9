package tune

import (
	"fmt"
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
	"github.com/hostprep/hostprep/internal/sysctlval"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/sysval"
)

// The sysctl.d layer: hostprep's /etc/sysctl.d/60-hostprep.conf (or
// --persist-name) with every persisted key, fs.nr_open and fs.file-max
// first; optional keys get the "-" prefix. Written and rolled back as an
// owned file (ownedfile.go), which keeps it at rollback where a limits
// file left behind needs its fs.nr_open (keepForBootNofile, here); verified at boot by bootSysctlItems
// (here), which names any file that wins instead and every writer after
// the loader that sets a key back (boot_writers.go). An apply under
// another --persist-name moves the file: the one written under the former
// name is taken back (retireSysctlD), or it would keep its old values and,
// sorting later, win at boot over the new one.

// layerSysctlD names the sysctl.d layer's files at apply time.
const layerSysctlD = "sysctl.d"

// sysctlDWants plans the sysctl.d file.
func (pl *Plan) sysctlDWants(per journal.Persisted) []fileWant {
	if len(per.Sysctl) == 0 {
		return nil
	}
	keys := make([]string, 0, len(per.Sysctl))
	for k := range per.Sysctl {
		keys = append(keys, k)
	}
	// The boot starts from the kernel's default start (1024): a start
	// below it must be written before a range that reaches below it, a
	// start above it after the range; the profile alone decides, so a
	// second apply writes the same file.
	slices.SortFunc(keys, writeOrder(lowersStart(per.Sysctl[keyUnprivStart].Value, "")))
	lines := make([]files.SysctlLine, len(keys))
	for i, k := range keys {
		v := per.Sysctl[k]
		lines[i] = files.SysctlLine{Key: k, Value: v.Value, Optional: v.Optional, Comment: v.Comment}
	}
	return []fileWant{{layer: layerSysctlD, path: pl.env.sysctlConf(), data: files.RenderSysctl(pl.profiles, lines)}}
}

// warnHidden warns when hostprep's file rel (under /etc) would hide a file
// of the same name in a directory read after its own (never one read
// before it, such as /etc/systemd/system.control): sysctl.d(5),
// modules-load.d(5) and systemd's drop-in directories read only the first
// file of a name (/usr/lib/sysctl.d/99-vendor.conf for --persist-name
// 99-vendor.conf), so none of that file's settings apply at boot any more.
func (pl *Plan) warnHidden(rel string) {
	dir, name := filepath.Dir(rel), filepath.Base(rel)
	var dirs []string
	switch {
	case dir == "/etc/sysctl.d":
		dirs = hostconf.SysctlDirs
	case dir == "/etc/modules-load.d":
		dirs = hostconf.ModulesLoadDirs
	case dir == "/etc/systemd/system.conf.d":
		dirs = hostconf.ManagerDropInDirs
	case filepath.Dir(dir) == "/etc/systemd/system" && strings.HasSuffix(dir, ".d"):
		for _, u := range hostconf.UnitDirs {
			dirs = append(dirs, filepath.Join(u, filepath.Base(dir)))
		}
	}
	// only directories read after hostprep's (lower precedence) are hidden
	// by it: systemd's system.control, transient and generator.early come
	// before /etc/systemd/system and hide hostprep's drop-in instead
	// (verify --boot names such a file, hiderOf)
	if i := slices.Index(dirs, dir); i >= 0 {
		dirs = dirs[i+1:]
	}
	for _, d := range dirs {
		other := filepath.Join(d, name)
		if fi, err := os.Lstat(pl.env.path(other)); err == nil && !fi.IsDir() {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s hides %s (same name; only the first file of a name is read, /etc before /run and /usr/lib), so none of that file's settings apply at boot; rename that file, or for sysctl.d choose another --persist-name", rel, other))
		}
	}
}

// retireSysctlD plans taking back hostprep's sysctl.d files written under
// a former --persist-name (every journaled file in ROOT/etc/sysctl.d but
// this apply's): restored to its original bytes, or removed when hostprep
// created it; the new file carries every persisted key. One edited since
// hostprep wrote it is left, with a warning (it is no longer hostprep's
// to restore). Errors: exitcode.Environment when a file cannot be read.
func (pl *Plan) retireSysctlD(st *journal.State) error {
	dir, cur := pl.env.path("/etc/sysctl.d"), pl.env.path(pl.env.sysctlConf())
	var old []string
	for p := range st.Files {
		if filepath.Dir(p) == dir && p != cur {
			old = append(old, p)
		}
	}
	sort.Strings(old)
	for _, p := range old {
		j := st.Files[p]
		data, exists, err := files.Read(p)
		if err != nil {
			return ownedReadError(p, err)
		}
		if !exists || journal.SHA256(data) != j.SetSHA256 {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s, hostprep's sysctl.d file under a former --persist-name, %s; %s", p, leftReason(p, data, exists), "whatever it sets still applies at boot"))
			continue
		}
		step := fileStep{layer: layerSysctlD, path: p, existed: true, from: data, retire: j}
		step.perm, step.owner = permOwner(p)
		to := "absent"
		if j.Existed {
			step.to, to = j.Original, describe(j.Original, true)
		}
		pl.files = append(pl.files, step)
		pl.Changes = append(pl.Changes, Change{File: p, Layer: Persistent, From: describe(data, true), To: to,
			Reason: fmt.Sprintf("hostprep's sysctl.d file under a former --persist-name; its keys move to %s", filepath.Base(cur))})
	}
	return nil
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

// numberAtBoot is the numeric key (fs.nr_open, fs.file-max) after the
// next boot of the tree under root, as if the files in overlay had its
// bytes: the value the file that wins sets (read as the kernel reads it,
// sysval.Uint: 0x300000 is 3145728, 010 is 8) and "FILE:LINE sets it at
// boot". A value the kernel refuses (outside sysctlval.KernelBounds:
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
// outside sysctlval.KernelBounds is refused too. A non-numeric want: only
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
	if msgs := sysctlval.CheckBounds(key, strings.Join(dec, " "), ""); len(msgs) > 0 {
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
		checkWriters(&it, k, want, mode, boot.KeyAccepted(k, func(v string) bool { return kernelRefuses(k, v, want) == "" }))
		out = append(out, it)
	}
	return out, nil
}

// keepForBootNofile returns a Kept entry when path is hostprep's sysctl.d
// file, fs.nr_open at the next boot covers r.need with it, and restoring
// it would leave fs.nr_open below r.need, the hard nofile a left-behind file (r.needFile) sets: the
// runtime key may be kept, but without the file the host boots with the
// lower fs.nr_open and logins fail to set that limit. nil otherwise.
func (r *rollbackRun) keepForBootNofile(path string) *Skip {
	j := r.st.Files[path]
	if r.need == 0 || j == nil || filepath.Dir(path) != r.env.path("/etc/sysctl.d") {
		return nil
	}
	var orig []byte // nil: the file goes (absent at boot)
	if j.Existed {
		orig = j.Original
	}
	n, from, err := lowestAtBoot(r.env.bootRoot(), map[string][]byte{r.env.relPath(path): orig}, keyNrOpen, defaultNrOpen)
	if err != nil || n >= r.need {
		return nil
	}
	if with, _, err := lowestAtBoot(r.env.bootRoot(), nil, keyNrOpen, defaultNrOpen); err == nil && with < r.need {
		return nil // already below with the file: keeping it protects nothing
	}
	cur, _, _ := files.Read(path)
	return &Skip{File: path, Layer: Persistent, Current: describe(cur, true),
		Reason: fmt.Sprintf("kept because %s (%s) sets hard nofile %d, and without this file fs.nr_open after the next boot would be %d (%s): logins and services would fail to set that limit; fix or remove that file and run %s again", r.needFile, r.needWhy, r.need, n, from, r.env.suggest("rollback"))}
}
