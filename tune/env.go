// Package tune applies a hostprep profile to a Linux host: it computes a
// Plan (every sysctl key and owned file, runtime and persistent layer,
// from -> to, or why skipped), executes that same plan in order under a
// lock with a journal, and takes it all back with Rollback.
//
// Layout: one file per layer, each planning, applying, verifying and
// rolling back its own items — layer_runtime.go (/proc/sys),
// layer_sysctld.go, layer_modules.go, layer_limitsd.go, layer_systemd.go
// and layer_verifyunit.go (each file layer: what its owned files hold,
// its own rules at rollback, and its items after the next boot; each is
// applied and undone as a layer of its own, through the generic
// owned-file write, undo and check of ownedfile.go), layer_process.go (prlimit of running
// processes). plan.go, apply.go, rollback.go and verify.go are short
// loops over the layers; boot.go runs every layer's boot items against
// the host after its next boot (package hostconf), boot_writers.go
// judges the programs that write a key after the sysctl.d loader
// (hostconf.Writers), neverlower.go keeps nofile limits the host already has,
// ports.go plans the port range and reserved ports, bounds.go the
// version- and RAM-dependent kernel bounds, output.go prints.
// Sub-packages: sysctl (the /proc/sys backend), files (owned files, atomic writes),
// journal (state.json), lock (flock), sysval (field-by-field value
// comparison); listening ports come from internal/procnet.
package tune

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/procnet"
	"github.com/hostprep/hostprep/internal/shellquote"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/lock"
	"github.com/hostprep/hostprep/tune/sysctl"
)

// Env says where the host is. The zero value is the live host: /proc/sys,
// /proc, persistent files under /, journal /var/lib/hostprep/state.json,
// lock /run/hostprep.lock.
type Env struct {
	// ProcSys is the sysctl tree ("" = /proc/sys).
	ProcSys string
	// Proc is the procfs holding net/tcp and net/tcp6 for listening ports
	// ("" = /proc).
	Proc string
	// Root is where the persistent files go ("" = /). Tests point it at a
	// temporary tree laid out like /.
	Root string
	// Image is image-build mode (--root DIR): only the persistent files
	// under Root are written; no runtime value is read or changed, and
	// host-dependent checks use kernel defaults.
	Image bool
	// StateFile is the journal ("" = ROOT/var/lib/hostprep/state.json).
	StateFile string
	// LockFile is flocked by apply and rollback ("" = /run/hostprep.lock
	// on a host; in image mode the Root directory itself is flocked, so an
	// image build needs no root and leaves no lock file in the image).
	LockFile string
	// LockWait is how long apply/rollback wait for the lock (0 = 5 s;
	// NoWait = fail at once when it is held).
	LockWait time.Duration
	// SystemdRunDir exists when systemd is PID 1 ("" = /run/systemd/system).
	SystemdRunDir string
	// SkipPrivilegeCheck lets tests against fixture trees run unprivileged.
	SkipPrivilegeCheck bool
	// Backend overrides the sysctl backend built from ProcSys (tests wrap
	// it to inject a kernel refusal).
	Backend sysctl.Backend
	// profileRef is the --profile a suggested "apply again" repeats: the
	// profile being planned, or the journal's last apply (see reapply).
	profileRef  string
	profileSets []string
	// verifyAtBoot is Options.VerifyAtBoot, for planFiles.
	verifyAtBoot *journal.VerifyUnit
	// PersistName is the basename of hostprep's sysctl.d file ("" =
	// 60-hostprep.conf); a name that sorts after another file's lets
	// hostprep's values win at boot (--persist-name).
	PersistName string
}

// sysctlConf is hostprep's sysctl.d file, relative to the root.
func (e Env) sysctlConf() string {
	if e.PersistName == "" {
		return files.SysctlConf
	}
	return "/etc/sysctl.d/" + e.PersistName
}

// keepPersistName is e with PersistName set to the name of the sysctl.d
// file earlier applies wrote when none is given, so that --persist-name
// is remembered: an apply without it keeps hostprep's file where it is,
// and one with another name moves it (retireSysctlD). The name is the
// journal's persist_name; in a journal from before that field, the one
// journaled file in ROOT/etc/sysctl.d (none, or more than one: the
// default).
func (e Env) keepPersistName(st *journal.State) Env {
	if e.PersistName != "" || st == nil {
		return e
	}
	if st.PersistName != "" {
		e.PersistName = st.PersistName
		return e
	}
	var names []string
	for p := range st.Files {
		if filepath.Dir(p) == e.path("/etc/sysctl.d") {
			names = append(names, filepath.Base(p))
		}
	}
	if len(names) == 1 {
		e.PersistName = names[0]
	}
	return e
}

// CheckPersistName refuses a --persist-name that is not a plain *.conf
// basename systemd-sysctl and sysctl --system read (exitcode.BadInput).
func CheckPersistName(name string) error {
	if name == "" {
		return nil
	}
	if strings.ContainsAny(name, "/\x00") || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".conf") || len(name) > 200 || strings.TrimFunc(name, func(r rune) bool { return r > ' ' && r < 0x7f }) != "" {
		return exitcode.BadInputf("--persist-name %q: want a plain file name ending in .conf, not hidden, printable ASCII without \"/\", e.g. \"99-zz-hostprep.conf\" (systemd-sysctl and sysctl --system read only *.conf, in name order)", name)
	}
	return nil
}

// ImageMode reports whether Env writes only persistent files (--root DIR).
func (e Env) ImageMode() bool { return e.Image }

func (e Env) procSys() string {
	if e.ProcSys == "" {
		return sysctl.DefaultRoot
	}
	return e.ProcSys
}

func (e Env) proc() string {
	if e.Proc == "" {
		return procnet.DefaultRoot
	}
	return e.Proc
}

// pid1Nofile is the hard nofile PID 1 holds after the next boot, what a
// systemd "infinity" nofile gives (hostconf.Pid1NofileHard): from the
// kernel command line in /proc/cmdline on a host, the kernel default in
// image mode (the image's command line is not known).
func (e Env) pid1Nofile() hostconf.Pid1Hard {
	if e.ImageMode() {
		return hostconf.Pid1NofileDefault("the kernel command line an image boots with is not known here")
	}
	p := filepath.Join(e.proc(), "cmdline")
	b, err := os.ReadFile(p)
	if err != nil {
		return hostconf.Pid1NofileDefault(fmt.Sprintf("%s could not be read: %v", p, err))
	}
	return hostconf.Pid1NofileHard(string(b))
}

// sysctlDir says whether DIR ("net/ipv4") is a directory of this
// kernel's sysctl tree (under ProcSys), for hostconf.Sysctl.Dir: procps
// follows a ".." in a key through it. nil in image mode, where the
// kernel that boots is not this one (every directory a key names is
// taken to exist).
func (e Env) sysctlDir() func(string) bool {
	if e.ImageMode() {
		return nil
	}
	return func(d string) bool {
		fi, err := os.Stat(filepath.Join(e.procSys(), d))
		return err == nil && fi.IsDir()
	}
}

// path maps an absolute host path (/etc/sysctl.d/...) into Root.
func (e Env) path(p string) string {
	if e.Root == "" {
		return p
	}
	return filepath.Join(e.Root, p)
}

// rebase maps a path the journal recorded under root onto this Env's Root.
func (e Env) rebase(root, p string) string {
	if filepath.Clean("/"+root) == filepath.Clean("/"+e.Root) {
		return p
	}
	rel := p
	if root != "" {
		if r, err := filepath.Rel(root, p); err == nil && !strings.HasPrefix(r, "..") {
			rel = "/" + r
		}
	}
	return e.path(rel)
}

// loadJournal reads the journal with its file and directory paths rebased
// onto this Env's Root (nil, nil when nothing is applied).
func (e Env) loadJournal() (*journal.State, error) {
	st, err := journal.Load(e.stateFile())
	if err != nil || st == nil {
		return st, err
	}
	if filepath.Clean("/"+st.Root) != filepath.Clean("/"+e.Root) {
		fs := make(map[string]*journal.File, len(st.Files))
		for p, f := range st.Files {
			fs[e.rebase(st.Root, p)] = f
		}
		st.Files = fs
		for i, d := range st.Dirs {
			st.Dirs[i] = e.rebase(st.Root, d)
		}
		st.Root = e.Root
	}
	return st, nil
}

func (e Env) stateFile() string {
	if e.StateFile != "" {
		return e.StateFile
	}
	return e.path(journal.DefaultPath)
}

// checkStateFile refuses a --state that names a configuration file: one
// ending in .conf (every sysctl.d, limits.d, modules-load.d and systemd
// file boot reads, /etc/sysctl.conf and limits.conf included) or one of
// hostprep's own files. The journal written there would replace that
// file with JSON. Errors: exitcode.BadInput.
func (e Env) checkStateFile() error {
	p := e.StateFile
	if p == "" {
		return nil
	}
	owned := []string{e.sysctlConf(), files.LimitsConf, files.ModulesLoad, files.SystemConf}
	if strings.HasSuffix(p, ".conf") || slices.Contains(owned, e.relPath(p)) {
		return exitcode.BadInputf("--state %s: a configuration file, which the journal (JSON) would replace; name a file of its own, e.g. %s", p, e.path(journal.DefaultPath))
	}
	return nil
}

func (e Env) lockFile() string {
	if e.LockFile != "" {
		return e.LockFile
	}
	if e.ImageMode() && e.Root != "" {
		// The image tree itself is flocked: no root needed, no file left
		// in it. A tree apply is about to create: its nearest existing
		// parent.
		d := filepath.Clean(e.Root)
		for !isDir(d) && d != filepath.Dir(d) {
			d = filepath.Dir(d)
		}
		return d
	}
	return lock.DefaultPath
}

// NoWait as Env.LockWait makes apply/rollback fail at once when another
// run holds the lock (`--lock-wait 0`).
const NoWait time.Duration = -1

func (e Env) lockWait() time.Duration {
	switch {
	case e.LockWait < 0:
		return 0
	case e.LockWait > 0:
		return e.LockWait
	}
	return lock.DefaultWait
}

func (e Env) backend() (sysctl.Backend, error) {
	if e.Backend != nil {
		return e.Backend, nil
	}
	return sysctl.New(e.procSys())
}

// SystemdDecision says whether systemd drop-ins are written, and why.
//
// They are written when systemd runs (SystemdRunDir exists), in image
// mode (--root: the image may boot systemd), or when ROOT/etc/systemd is a
// directory (systemd installed, e.g. not running in this container). A
// host with none of these gets no drop-ins and the plan says why.
func (e Env) SystemdDecision() (bool, string) {
	run := e.SystemdRunDir
	if run == "" {
		run = "/run/systemd/system"
	}
	if e.ImageMode() {
		return true, "image mode (--root): drop-ins are written for the image's systemd"
	}
	if isDir(run) {
		return true, "systemd is running (" + run + ")"
	}
	if isDir(e.path("/etc/systemd")) {
		return true, "systemd is installed (" + e.path("/etc/systemd") + ") though not running as PID 1 (no " + run + ")"
	}
	return false, "systemd is not here (no " + run + ", no " + e.path("/etc/systemd") + ")"
}

func (e Env) systemdRunning() bool { return isDir(e.systemdRunDir()) }

// systemdRunDir is the directory that exists when systemd runs as PID 1.
func (e Env) systemdRunDir() string { return cmp.Or(e.SystemdRunDir, "/run/systemd/system") }

// foreignNetNS reports whether this process runs in a network namespace
// other than the host's initial one (unshare --net, a container): either
// PROC/self/ns/net differs from PROC/1/ns/net (when both are readable), or
// /proc/sys lacks net.core.dev_weight, a key the kernel registers only in
// the initial namespace, while it has the per-namespace net.core.somaxconn
// (this also catches a container, whose PID 1 shares its namespace).
func (e Env) foreignNetNS() bool {
	self, err1 := os.Readlink(filepath.Join(e.proc(), "self", "ns", "net"))
	init, err2 := os.Readlink(filepath.Join(e.proc(), "1", "ns", "net"))
	if err1 == nil && err2 == nil && self != init {
		return true
	}
	_, errDev := os.Stat(filepath.Join(e.procSys(), "net", "core", "dev_weight"))
	_, errSom := os.Stat(filepath.Join(e.procSys(), "net", "core", "somaxconn"))
	return errDev != nil && errSom == nil
}

// checkRoot refuses (exitcode.BadInput, exit 2) an image-mode Root that
// is not an existing directory: --root names an image tree that is
// already there (an unpacked rootfs); a mistyped path must not become a
// new tree. verb names the command for the message.
func (e Env) checkRoot(verb string) error {
	if !e.ImageMode() || e.Root == "" {
		return nil
	}
	st, err := os.Stat(e.Root)
	if real, rerr := filepath.EvalSymlinks(e.Root); rerr == nil && real == "/" {
		return exitcode.BadInputf("tune %s: --root %s is the live host's own root: drop --root to tune this host (--root names an image tree, an unpacked rootfs, of which only the files are written)", verb, e.Root)
	}
	switch {
	case err != nil && errors.Is(err, fs.ErrNotExist):
		return exitcode.BadInputf("tune %s: --root %s: no such directory; --root names an existing image tree (an unpacked rootfs): create or unpack it first, or leave --root out to tune this host", verb, e.Root)
	case err != nil:
		return exitcode.BadInputf("tune %s: --root %s: %v; --root must name a readable image tree", verb, e.Root, err)
	case !st.IsDir():
		return exitcode.BadInputf("tune %s: --root %s: not a directory; --root names an image tree (an unpacked rootfs)", verb, e.Root)
	}
	return nil
}

// insideRoot refuses (exitcode.BadInput), in image mode, a file whose
// directories leave the image through a symbolic link: an absolute link
// (etc/security/limits.d -> /tmp/x) or one whose .. climbs above Root.
// Written from the build host it would land outside the image (a link
// to /etc would change the build host's own /etc), and the image would
// not have it. nil otherwise, and when Root cannot be resolved (checkRoot
// reports that).
func (e Env) insideRoot(p string) error {
	if !e.ImageMode() || e.Root == "" {
		return nil
	}
	root, err := filepath.EvalSymlinks(e.Root)
	if err != nil {
		return nil
	}
	d := filepath.Dir(p)
	for { // the deepest directory that exists, resolved as this host does
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		d = filepath.Dir(d)
	}
	real, err := filepath.EvalSymlinks(d)
	if err != nil || real == root || strings.HasPrefix(real, root+string(filepath.Separator)) {
		return nil
	}
	return exitcode.BadInputf("--root %s: %s leads out of the image through a symbolic link (on this host it is %s), and hostprep writes only inside the image; nothing was changed: make that link relative to the image, or a directory", e.Root, e.relPath(d), real)
}

// lockFor readies a change of the host by verb (apply or rollback): it
// refuses a --root that is no directory (checkRoot, exit 2) and a process
// without the privileges to change the host (checkPrivileges, exit 3),
// then takes the lock, waiting up to LockWait (exitcode.Environment, exit
// 3, when another apply or rollback holds it). The caller releases it.
func (e Env) lockFor(verb string) (*lock.Lock, error) {
	if err := e.checkRoot(verb); err != nil {
		return nil, err
	}
	if err := e.checkStateFile(); err != nil {
		return nil, err
	}
	if err := checkPrivileges(e, verb); err != nil {
		return nil, err
	}
	lk, err := lock.Acquire(e.lockFile(), e.lockWait())
	if errors.Is(err, lock.ErrHeld) {
		return nil, exitcode.Environmentf("tune %s: %w; wait for the other apply or rollback to finish and run this again, or wait longer for it: --lock-wait 30s", verb, err)
	}
	if err != nil {
		return nil, exitcode.Environmentf("tune %s: %w", verb, err)
	}
	return lk, nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// Options are Apply's inputs besides the profile.
type Options struct {
	Env
	// PIDs are running processes whose RLIMIT_NOFILE is raised to the
	// profile's nofile (prlimit).
	PIDs []int
	// Services are systemd units whose main process is raised like PIDs.
	Services []string
	// VerifyAtBoot, when set, also installs hostprep-verify.service and
	// its timer (layer_verifyunit.go).
	VerifyAtBoot *journal.VerifyUnit
}

// suggest is a hostprep command to tell the user to run, in backquotes:
// "`hostprep tune VERB ARGS...`", repeating --root DIR (shell-quoted) in
// image mode, so that copying the advice of an image-mode run never tunes
// the live host, and --state, --proc-sys and --proc when they were given
// (a journal elsewhere than the default is the one the advice is about).
// Every message that suggests a tune command builds it here.
func (e Env) suggest(verb string, args ...string) string {
	cmd := []string{"hostprep", "tune", verb}
	for _, a := range args {
		cmd = append(cmd, shellquote.Quote(a))
	}
	if e.Image && e.Root != "" {
		cmd = append(cmd, "--root", shellquote.Quote(e.Root))
	}
	for _, f := range [][2]string{{"--state", e.StateFile}, {"--proc-sys", e.ProcSys}, {"--proc", e.Proc}} {
		if f[1] != "" {
			cmd = append(cmd, f[0], shellquote.Quote(f[1]))
		}
	}
	return "`" + strings.Join(cmd, " ") + "`"
}

// Suggest is the command `hostprep tune VERB ARGS...` as a message
// suggests it, runnable as printed: in backquotes, every argument
// shell-quoted, with the --root, --state, --proc-sys and --proc e has.
func (e Env) Suggest(verb string, args ...string) string { return e.suggest(verb, args...) }

// ProfileArgs are the flags that load p again as it was loaded:
// --profile with its Source (a file's path, a built-in's name; its Name
// for a profile built in code) and each --set.
func ProfileArgs(p *profiles.Profile) []string {
	return profileArgs(cmp.Or(p.Source, p.Name), p.Sets)
}

// reapply is the suggested command that applies the profile again
// (suggest "apply --profile REF ARGS..."), naming it as --profile takes
// it; PROFILE when unknown (a profile built in code).
func (e Env) reapply(args ...string) string {
	return e.suggest("apply", append(profileArgs(cmp.Or(e.profileRef, "PROFILE"), e.profileSets), args...)...)
}

// profileArgs are the flags that name a profile as it was applied:
// --profile REF and each --set it was given.
func profileArgs(ref string, sets []string) []string {
	out := []string{"--profile", ref}
	for _, s := range sets {
		out = append(out, "--set", s)
	}
	return out
}

// withLastApply is e with profileRef set from the journal's last apply.
func (e Env) withLastApply(st *journal.State) Env {
	if st != nil && len(st.Applies) > 0 {
		last := st.Applies[len(st.Applies)-1]
		e.profileRef, e.profileSets = last.Source, last.Sets
	}
	return e
}
