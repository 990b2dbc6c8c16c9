package tune

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/sysctl"
	"github.com/hostprep/hostprep/tune/sysval"
)

// Layers of a change.
const (
	// Runtime is the live kernel value under /proc/sys.
	Runtime = "runtime"
	// Persistent is a file hostprep owns, read at boot or login.
	Persistent = "persistent"
	// Process is the RLIMIT_NOFILE of a running process (--pid/--service).
	Process = "process"
)

// Keys with a place in the order of changes.
const (
	keyNrOpen        = "fs.nr_open"
	keyFileMax       = "fs.file-max"
	keyPortRange     = "net.ipv4.ip_local_port_range"
	keyReservedPorts = "net.ipv4.ip_local_reserved_ports"
	keyUnprivStart   = "net.ipv4.ip_unprivileged_port_start"
)

// Kernel defaults used in image mode, where the host is not read.
const (
	defaultNrOpen      = 1048576
	defaultUnprivStart = 1024
	defaultPortRange   = "32768 60999"
)

// Change is one thing Apply changes (or changed). Exactly one of Key,
// File, PID is set.
type Change struct {
	// Key is a sysctl key (runtime layer).
	Key string `json:"key,omitempty"`
	// File is an owned file's path, including any --root (persistent layer).
	File string `json:"file,omitempty"`
	// PID is a running process whose RLIMIT_NOFILE is raised (process layer).
	PID int `json:"pid,omitempty"`
	// Layer is runtime, persistent or process.
	Layer string `json:"layer"`
	// From is the value now: a sysctl value, "absent" or "N bytes" for a
	// file, "soft:hard" for a process.
	From string `json:"from"`
	// To is the value after the change, in the same form.
	To string `json:"to"`
	// Reason says why (mode, derived key, limit that needs it).
	Reason string `json:"reason,omitempty"`
	// Boot is what a sysctl key will be after the next boot once this
	// plan is applied, and the file:line that sets it then.
	Boot *BootValue `json:"boot,omitempty"`
}

// Target names what a change is about (key, file or "pid N").
func (c Change) Target() string {
	switch {
	case c.Key != "":
		return c.Key
	case c.File != "":
		return c.File
	default:
		return "pid " + strconv.Itoa(c.PID)
	}
}

// Skip is something the profile names that Apply leaves alone, and why.
type Skip struct {
	Key   string `json:"key,omitempty"`
	File  string `json:"file,omitempty"`
	PID   int    `json:"pid,omitempty"`
	Layer string `json:"layer"`
	// Current is the value the host has (empty when absent).
	Current string `json:"current,omitempty"`
	Reason  string `json:"reason"`
	// Boot is the key's value after the next boot (see Change.Boot).
	Boot *BootValue `json:"boot,omitempty"`
}

// Target names what a skip is about.
func (s Skip) Target() string {
	return Change{Key: s.Key, File: s.File, PID: s.PID}.Target()
}

// Result is what a plan would do or an apply did; it is the JSON of
// `hostprep tune plan|apply --output json`:
//
//	{"profile": "sys-tune", "mode": "host", "changed": true,
//	 "changes": [{"key": "fs.nr_open", "layer": "runtime", "from": "1048576", "to": "2097152"}, ...],
//	 "skipped": [{"key": "...", "layer": "runtime", "current": "...", "reason": "..."}],
//	 "warnings": [...], "restart": ["emqx.service"], "notes": [...]}
type Result struct {
	// Profile is the profile's name.
	Profile string `json:"profile"`
	// Mode is "host" (runtime and persistent) or "image" (--root: files only).
	Mode string `json:"mode"`
	// Changed is true when at least one change is (or was) made.
	Changed bool `json:"changed"`
	// Changes in the order Apply makes them.
	Changes []Change `json:"changes"`
	// Skipped lists what the profile names but needs no change, or cannot
	// be changed here, with the reason.
	Skipped []Skip `json:"skipped"`
	// Warnings are findings that do not stop the apply (port range parity).
	Warnings []string `json:"warnings,omitempty"`
	// Restart lists systemd units that must be restarted to pick up new
	// limits (their drop-in changed).
	Restart []string `json:"restart"`
	// Notes say what else must happen for limits to take effect (new login
	// sessions, daemon-reexec).
	Notes []string `json:"notes,omitempty"`
	// Processes reports each --pid/--service prlimit outcome (apply only).
	Processes []ProcessResult `json:"processes,omitempty"`
	// Boot compares every key and limit hostprep persists with what the
	// host will have after its next boot, once this plan is applied; an
	// item that is not OK is also a warning.
	Boot []BootItem `json:"boot_check,omitempty"`
	// Kernel says how each planned sysctl value was checked against the
	// running kernel: by a trial in a scratch network namespace or by
	// hostprep's table of bounds.
	Kernel *KernelCheck `json:"kernel_check,omitempty"`
}

// ProcessResult is the outcome of raising one process's RLIMIT_NOFILE.
type ProcessResult struct {
	PID     int    `json:"pid"`
	Service string `json:"service,omitempty"`
	From    string `json:"from"`
	To      string `json:"to"`
	// Now is the limit after the attempt ("soft:hard").
	Now string `json:"now"`
	// Error explains a failure, with the ceiling the process can reach.
	Error string `json:"error,omitempty"`
}

// Plan is the value tune plan prints and tune apply executes.
type Plan struct {
	Result

	env     Env
	backend sysctl.Backend
	runtime []keyStep
	// held are the profile's keys the host already holds (no write
	// planned), with their targets: apply writes one back if another
	// key's write moves it (companions.go).
	held      map[string]string
	files     []fileStep
	procs     []procStep
	persisted journal.Persisted
	profiles  []string // header of the owned files
	// startFirst: the plan lowers net.ipv4.ip_unprivileged_port_start,
	// which is written before the port range (writeOrder)
	startFirst bool
}

// PlanReport is a plan as `tune plan -o json` and `ready --dry-run`
// report it: Changed is false (a plan changes nothing), the planned
// changes are listed in Changes and counted in WouldChange.
type PlanReport struct {
	Result
	WouldChange int `json:"would_change"`
}

// Report returns pl as a PlanReport.
func (pl *Plan) Report() PlanReport {
	r := pl.Result
	r.Changed = false
	return PlanReport{Result: r, WouldChange: len(pl.Changes)}
}

type keyStep struct {
	key, from, to, mode, want string
}

type fileStep struct {
	layer   string // the file layer that planned it (fileWant.layer)
	path    string // absolute, including Root
	existed bool
	from    []byte
	perm    fs.FileMode
	owner   *journal.Owner // of the existing file
	foreign bool           // existed and hostprep never wrote it
	to      []byte
	dirs    []string // directories to create, outermost first
	link    string   // the symbolic link that was there (its target), "" for none
	// retire is the journal entry of an owned file this apply takes back
	// (hostprep's sysctl.d file under a former --persist-name): it is
	// restored to its original (to; removed when it did not exist) and
	// leaves the journal once the apply is complete.
	retire *journal.File
}

type procStep struct {
	pid                int
	startTime          uint64 // field 22 of /proc/PID/stat
	service            string
	curSoft, curHard   uint64
	wantSoft, wantHard uint64
}

// NewPlan computes every change profile p makes on the host env describes,
// touching nothing. It reads /proc/sys (not in image mode), the owned
// files, the journal and the listening ports; it works without root.
//
// Errors: exitcode.BadInput when the profile does not fit this host (a
// key unknown to the kernel and not optional, nofile above fs.nr_open,
// fs.file-max below nofile, a port range below
// net.ipv4.ip_unprivileged_port_start), each naming the key, the value,
// the rule and the fix; exitcode.Environment when the host cannot be read.
func NewPlan(p *profiles.Profile, env Env) (*Plan, error) {
	return PlanFor(p, Options{Env: env})
}

// PlanFor is NewPlan with Apply's options: it also plans the RLIMIT_NOFILE of
// opts.PIDs and opts.Services.
func PlanFor(p *profiles.Profile, opts Options) (*Plan, error) {
	pl, err := planFor(p, opts)
	return pl, opts.Env.loopIsBadInput(err)
}

func planFor(p *profiles.Profile, opts Options) (*Plan, error) {
	if p == nil {
		return nil, exitcode.BadInputf("tune: no profile given")
	}
	env := opts.Env
	env.verifyAtBoot = opts.VerifyAtBoot
	pl := &Plan{env: env}
	if err := env.checkRoot("plan"); err != nil {
		return nil, err
	}
	pl.Profile = p.Name
	pl.Mode = "host"
	if env.ImageMode() {
		pl.Mode = "image"
	}
	p, err := validCopy(p)
	if err != nil {
		return nil, err
	}
	st, err := pl.journalForPlan()
	if err != nil {
		return nil, err
	}
	env = env.keepPersistName(st)
	env.profileRef, env.profileSets = p.Source, p.Sets
	pl.env = env
	if !env.ImageMode() {
		b, err := env.backend()
		if err != nil {
			return nil, exitcode.Environmentf("tune: %w", err)
		}
		pl.backend = b
	}

	targets, err := pl.planSysctl(p)
	if err != nil {
		return nil, err
	}
	if err := pl.checkLimits(p, targets); err != nil {
		return nil, err
	}
	if err := pl.planFiles(p, st, targets); err != nil {
		return nil, err
	}
	if err := pl.checkNrOpenInvariant(p, targets); err != nil {
		return nil, err
	}
	if err := pl.checkFileMaxInvariant(p, targets); err != nil {
		return nil, err
	}
	for _, f := range pl.files {
		if err := env.insideRoot(f.path); err != nil {
			return nil, err
		}
	}
	if err := pl.planProcs(p, opts); err != nil {
		return nil, err
	}
	pl.Changed = len(pl.Changes) > 0
	if pl.Changes == nil {
		pl.Changes = []Change{}
	}
	if pl.Skipped == nil {
		pl.Skipped = []Skip{}
	}
	if pl.Restart == nil {
		pl.Restart = []string{}
	}
	return pl, nil
}

// validCopy is a copy of p that planning may add derived keys to (the
// caller's profile is never changed), validated by its own package
// (file:line:col for a loaded profile; the same rules for one built in
// code), which also parses each sysctl value it had not parsed yet
// (Sysctl.Parsed): tune reads typed values, it does not parse the
// profile's text again.
func validCopy(p *profiles.Profile) (*profiles.Profile, error) {
	cp := *p
	cp.Sysctl = make(map[string]profiles.Sysctl, len(p.Sysctl)+1)
	for k, v := range p.Sysctl {
		cp.Sysctl[k] = v
	}
	if err := cp.Validate(); err != nil {
		return nil, err
	}
	return &cp, nil
}

// journalForPlan is what earlier applies journaled, for planning on top of
// it: an empty journal when there is none, or (with a warning) when it
// cannot be read for want of root. Errors: exitcode.Environment.
func (pl *Plan) journalForPlan() (*journal.State, error) {
	st, err := pl.env.loadJournal()
	switch {
	case errors.Is(err, fs.ErrPermission):
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("cannot read the journal %s (%v): the plan assumes no earlier apply; run as root for an exact plan", pl.env.stateFile(), err))
		st = nil
	case err != nil:
		return nil, exitcode.Environmentf("tune: %w", err)
	}
	if st == nil {
		st = journal.New()
	}
	return st, nil
}

// target is the value a key will have after apply, for persistence and
// cross-key checks.
type target struct {
	value    string
	optional bool
	comment  string
	present  bool // the key exists on this kernel (always true in image mode)
	// adjusted says why value is not the profile's (the kernel refuses
	// it and the entry says if_refused: nearest), "" when it is.
	adjusted string
	// want replaces the profile's value as what the key must satisfy
	// when the kernel's verdict changed it ("" when it did not).
	want string
}

// rank orders runtime changes: fs.nr_open before fs.file-max before
// everything else (nofile limits are written after all sysctls), and
// reserved ports before the port range that may widen over them.
func rank(key string) int {
	switch key {
	case keyNrOpen:
		return 0
	case keyFileMax:
		return 1
	case keyReservedPorts:
		return 2
	}
	return 3
}

// sortKeys sorts keys by rank, then by name: the order of the sysctl.d
// file and of the boot check.
func sortKeys(keys []string) { slices.SortFunc(keys, writeOrder(false)) }

// writeOrder compares two keys in the order apply writes them, which the
// kernel trial follows too (sysctlTargets, planRuntime, JudgeProfile): by
// rank, then by name, except that with startFirst
// net.ipv4.ip_unprivileged_port_start goes right before
// net.ipv4.ip_local_port_range. The kernel refuses a port range whose low
// end is below the start on a write of either key, so a start the plan
// lowers must be in place before a range that reaches below the old one
// (startFirst), and a start it raises must wait for the range that makes
// room for it (by name, the range comes first).
func writeOrder(startFirst bool) func(a, b string) int {
	name := func(k string) string {
		if startFirst && k == keyUnprivStart {
			return keyPortRange
		}
		return k
	}
	isStart := func(k string) int {
		if k == keyUnprivStart {
			return 0
		}
		return 1
	}
	return func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(name(a), name(b)), cmp.Compare(isStart(a), isStart(b)))
	}
}

// lowersStart reports whether to, the planned
// net.ipv4.ip_unprivileged_port_start, is below cur, its value now (""
// where nothing is live: the kernel default); false when either is not
// a number.
func lowersStart(to, cur string) bool {
	t, ok := sysval.Uint(to)
	if !ok {
		return false
	}
	c := uint64(defaultUnprivStart)
	if cur != "" {
		if c, ok = sysval.Uint(cur); !ok {
			return false
		}
	}
	return t < c
}

// orderWrites sorts keys in the order apply writes them (writeOrder),
// the start first when the plan lowers it from cur, its value now, and
// returns whether it does.
func orderWrites(keys []planned, cur string) bool {
	startFirst := false
	for _, p := range keys {
		if p.key == keyUnprivStart {
			startFirst = lowersStart(p.to, cur)
		}
	}
	less := writeOrder(startFirst)
	slices.SortFunc(keys, func(a, b planned) int { return less(a.key, b.key) })
	return startFirst
}

func (pl *Plan) current(key string) (string, bool, error) {
	if pl.backend == nil {
		return "", false, nil
	}
	if !pl.backend.Exists(key) {
		return "", false, nil
	}
	v, err := pl.backend.Get(key)
	if err != nil {
		if why := unreadableWhy(err, pl.backend.Readable(key)); why != "" {
			return "", false, &unreadableError{key: key, why: why}
		}
		return "", false, exitcode.Environmentf("tune: reading %s: %w", key, err)
	}
	return v, true, nil
}

// unreadableError is a key the kernel shows but gives no value to read:
// hostprep could neither verify it nor put its value back, so a profile
// may not hold it (sysctlTargets refuses it as bad input).
type unreadableError struct{ key, why string }

func (e *unreadableError) Error() string {
	return fmt.Sprintf("sysctl %s: %s, so hostprep could neither verify it nor roll it back: remove it from the profile and set it outside hostprep", e.key, e.why)
}

// secretError is a key the kernel keeps secret: it shows the key's file
// readable by root only (mode 0600) and the value is a key or an address,
// not numbers (net.ipv4.tcp_fastopen_key, net.ipv6.conf.*.stable_secret;
// isSecret). hostprep prints every value in its plan and journal and
// persists it in a sysctl.d file anyone can read, so a profile may not
// hold such a key (sysctlTargets and JudgeProfile refuse it as bad input,
// before its value is read, tried or printed).
type secretError struct{ key, file string }

func (e *secretError) Error() string {
	return fmt.Sprintf("sysctl %s: the kernel keeps its value secret (%s is readable by root only, mode 0600), and hostprep prints the values it sets and writes them to a sysctl.d file anyone can read: remove it from the profile and set it outside hostprep", e.key, e.file)
}

// secretKeys are the messages of p's keys the running kernel keeps
// secret (secretError), in key order; none without a backend.
func (pl *Plan) secretKeys(p *profiles.Profile) []string {
	if pl.backend == nil {
		return nil
	}
	var msgs []string
	for _, k := range slices.Sorted(maps.Keys(p.Sysctl)) {
		if pl.isSecret(k, p.Sysctl[k]) {
			msgs = append(msgs, pl.secretRefusal(p, k))
		}
	}
	return msgs
}

// secretRefusal is the refusal of p's key k, which the kernel keeps
// secret, naming where the profile sets it.
func (pl *Plan) secretRefusal(p *profiles.Profile, k string) string {
	return p.Where("sysctl", k) + (&secretError{key: k, file: sysctlkey.File(pl.backend.Root(), k)}).Error()
}

// isSecret tells a secret (secretError) from a root-only setting: the
// kernel also shows numeric settings mode 0600 (net.core.bpf_jit_harden,
// vm.mmap_rnd_bits), which hardening profiles set and which are no
// secret. Numbers are judged by the profile's value, so the secret is
// never read.
func (pl *Plan) isSecret(k string, s profiles.Sysctl) bool {
	return pl.backend != nil && pl.backend.Secret(k) && s.Parsed.Fields == nil
}

// unreadableWhy says why reading a present key failed when the kernel,
// not the caller's privilege, is the reason: EIO (the kernel keeps no
// value yet: net.ipv6.conf.*.stable_secret until a secret is set, which
// cannot be unset again), or a file with no read bit (a write-only
// trigger such as net.ipv4.route.flush or vm.drop_caches, which keeps no
// value). "" for any other error.
func unreadableWhy(err error, readable bool) string {
	switch {
	case errors.Is(err, syscall.EIO):
		return "the kernel has no value to read (input/output error; a stable_secret has none until one is set, and a set one cannot be unset)"
	case errors.Is(err, fs.ErrPermission) && !readable:
		return "the kernel lets it be written but not read (no read permission: a trigger that keeps no value)"
	}
	return ""
}

func (pl *Plan) planSysctl(p *profiles.Profile) (map[string]target, error) {
	targets, current, err := pl.sysctlTargets(p)
	if err != nil {
		return nil, err
	}
	// Port range: the host's rule and the reserved ports it widens over.
	if err := pl.planPorts(p, targets, current); err != nil {
		return nil, err
	}
	if pl.env.ImageMode() {
		return targets, nil
	}
	pl.memoryWarnings(targets)
	return targets, pl.planRuntime(p, targets, current)
}

func parity(n int) string {
	if n%2 == 0 {
		return "even"
	}
	return "odd"
}

// checkLimits enforces: nofile soft <= hard; every hard nofile (limits,
// systemd) <= fs.nr_open in force after the sysctls; fs.file-max >= every
// nofile.
func (pl *Plan) checkLimits(p *profiles.Profile, targets map[string]target) error {
	type lim struct {
		name string
		l    *profiles.Limit
	}
	var ls []lim
	if p.Limits.Nofile != nil {
		ls = append(ls, lim{"limits.nofile", p.Limits.Nofile})
	}
	if p.Systemd.DefaultLimitNOFILE != nil {
		ls = append(ls, lim{"systemd.default_limit_nofile", p.Systemd.DefaultLimitNOFILE})
	}
	if p.Systemd.LimitNOFILE != nil {
		ls = append(ls, lim{"systemd.limit_nofile", p.Systemd.LimitNOFILE})
	}
	if len(p.Systemd.Services) > 0 && p.Systemd.LimitNOFILE == nil && p.Limits.Nofile == nil {
		return exitcode.BadInputf("systemd.services %v: no LimitNOFILE to write; set systemd.limit_nofile or limits.nofile", p.Systemd.Services)
	}
	if len(ls) == 0 {
		return nil
	}
	// where is the profile position of field (soft, hard) of the limit
	// named name (limits.nofile): "file:line:col: ".
	where := func(name, field string) string { return p.Where(append(strings.Split(name, "."), field)...) }
	for _, l := range ls {
		if l.l.Soft > l.l.Hard {
			return exitcode.BadInputf("%s%s: soft %d is above hard %d; the soft limit can only be raised up to the hard one: set soft <= hard", where(l.name, "soft"), l.name, l.l.Soft, l.l.Hard)
		}
	}
	nrOpen, nrFrom, err := pl.effective(keyNrOpen, targets, defaultNrOpen)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if l.l.Hard > nrOpen {
			return exitcode.BadInputf("%s%s: hard %d is above fs.nr_open %d (%s); a nofile limit above fs.nr_open cannot be set (logins fail with \"Could not set limit\"): add `fs.nr_open: {value: \"%d\", mode: at-least}` to the profile (hostprep raises it before writing any limit) or lower the limit", where(l.name, "hard"), l.name, l.l.Hard, nrOpen, nrFrom, l.l.Hard)
		}
	}
	fileMax, fmFrom, err := pl.effective(keyFileMax, targets, 0)
	if err != nil {
		return err
	}
	if fileMax > 0 {
		for _, l := range ls {
			if l.l.Hard > fileMax {
				return exitcode.BadInputf("%s%s: hard %d is above fs.file-max %d (%s), the system-wide limit of open files; add `fs.file-max: {value: \"%d\", mode: at-least}` to the profile or lower the limit", where(l.name, "hard"), l.name, l.l.Hard, fileMax, fmFrom, l.l.Hard)
			}
		}
	}
	return nil
}

// effective is the value of key (fs.nr_open, fs.file-max: a whole
// number) that a nofile limit hostprep writes must fit under, now and
// after the next boot, and where it comes from: the profile's target when
// the profile sets the key (the boot check of the key itself catches a
// later file that overrides it); else the lower of the live value (host
// mode) and the value at boot, which is the one the sysctl configuration
// sets (hostconf.ReadSysctl, under the image in image mode) or, with no file
// setting it, the kernel default def (0: none known, fs.file-max is sized
// from RAM at boot). A hand-raised fs.nr_open that no file persists goes
// back to 1048576 at reboot, and logins then fail to set a hard nofile
// above it. Errors: exitcode.BadInput for a profile value that is not a
// number; exitcode.Environment when the sysctl configuration cannot be read.
func (pl *Plan) effective(key string, targets map[string]target, def uint64) (uint64, string, error) {
	if t, ok := targets[key]; ok {
		n, err := strconv.ParseUint(t.value, 10, 64)
		if err != nil {
			return 0, "", exitcode.BadInputf("sysctl %s = %q: want a whole number", key, t.value)
		}
		return n, "set by the profile", nil
	}
	bootN, bootFrom, err := pl.atBoot(key, def)
	if err != nil {
		return 0, "", err
	}
	if pl.env.ImageMode() {
		return bootN, bootFrom, nil
	}
	v, ok, err := pl.current(key)
	if err != nil || !ok {
		return bootN, "unknown on this host; " + bootFrom, err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return bootN, "unreadable on this host; " + bootFrom, nil
	}
	if bootN > 0 && bootN < n {
		return bootN, fmt.Sprintf("%s; live %d until then", bootFrom, n), nil
	}
	return n, "this host; the profile does not set it", nil
}

// atBoot is key's value after the next boot as the sysctl configuration
// under the root says (numberAtBoot), with "; the profile does not set it".
func (pl *Plan) atBoot(key string, def uint64) (uint64, string, error) {
	n, from, err := lowestAtBoot(pl.env.bootRoot(), nil, key, def)
	if err != nil || from == "" {
		return n, from, err
	}
	return n, from + "; the profile does not set it", nil
}

// planFiles merges the profile's persistent settings into what earlier
// applies persisted, renders the owned files and compares them with disk.
func (pl *Plan) planFiles(p *profiles.Profile, st *journal.State, targets map[string]target) error {
	per := mergePersisted(p, st, targets)
	per.VerifyAtBoot = cmp.Or(pl.env.verifyAtBoot, per.VerifyAtBoot)
	systemdOK, why := pl.env.SystemdDecision()
	nrOpen, _, err := pl.effective(keyNrOpen, targets, defaultNrOpen)
	if err != nil {
		return err
	}
	if err := pl.neverLower(&per, systemdOK, nrOpen); err != nil {
		return err
	}
	if systemdOK {
		if err := pl.keepTasksMax(&per, targets); err != nil {
			return err
		}
	}
	pl.persisted = per
	pl.profiles = st.Profiles()
	if !slices.Contains(pl.profiles, p.Name) {
		pl.profiles = append(pl.profiles, p.Name)
	}
	// One want per owned file, from the layer that owns it.
	wants := pl.sysctlDWants(per)
	wants = append(wants, pl.modulesWants(per)...)
	wants = append(wants, pl.limitsDWants(per)...)
	wants = append(wants, pl.verifyUnitWants(per, systemdOK, why)...)
	if per.DefaultLimitNOFILE != nil || len(per.Services) > 0 {
		if systemdOK {
			wants = append(wants, pl.systemdWants(per)...)
		} else {
			pl.Skipped = append(pl.Skipped, Skip{File: pl.env.path("/etc/systemd"), Layer: Persistent, Reason: "systemd drop-ins not written: " + why + "; services started otherwise need their own nofile limit"})
		}
	}
	for _, w := range wants {
		pl.warnHidden(w.path)
		if err := pl.planFile(w, st); err != nil {
			return err
		}
	}
	if len(per.Sysctl) > 0 {
		if err := pl.retireSysctlD(st); err != nil {
			return err
		}
	}
	return pl.checkBoot(p, st)
}

// fileWant is an owned file's planned bytes, from its layer.
type fileWant struct {
	layer string // the layer's name (layerSysctlD, ...): one apply layer each
	path  string // relative to the root
	data  []byte
	note  string // what else must happen for it to take effect
	unit  string // a unit to restart
	// systemd marks a file systemd reads (the manager's or a unit's
	// drop-in): it takes effect through systemd (takeEffect).
	systemd bool
	why     string // the reason shown for the change
}

// mergePersisted merges the profile's persistent settings into what
// earlier applies persisted (the later apply wins).
func mergePersisted(p *profiles.Profile, st *journal.State, targets map[string]target) journal.Persisted {
	per := clonePersisted(st.Persisted)
	if per.Sysctl == nil {
		per.Sysctl = map[string]journal.PersistedKey{}
	}
	for k, t := range targets {
		if t.present {
			per.Sysctl[k] = journal.PersistedKey{Value: t.value, Optional: t.optional, Comment: t.comment, Mode: string(p.Sysctl[k].Mode)}
		}
	}
	if n := p.Limits.Nofile; n != nil {
		per.Nofile = &journal.Limit{Soft: n.Soft, Hard: n.Hard}
		per.NofileUsers = p.Limits.Users
		if len(per.NofileUsers) == 0 {
			per.NofileUsers = []string{"*", "root"}
		}
	}
	if d := p.Systemd.DefaultLimitNOFILE; d != nil {
		per.DefaultLimitNOFILE = &journal.Limit{Soft: d.Soft, Hard: d.Hard}
	}
	if len(p.Systemd.Services) > 0 {
		l := p.Systemd.LimitNOFILE
		if l == nil {
			l = p.Limits.Nofile
		}
		if per.Services == nil {
			per.Services = map[string]journal.Limit{}
		}
		for _, s := range p.Systemd.Services {
			per.Services[files.UnitName(s)] = journal.Limit{Soft: l.Soft, Hard: l.Hard}
		}
	}
	if m := p.Systemd.TasksMax; m != nil && len(p.Systemd.Services) > 0 {
		if per.TasksMax == nil {
			per.TasksMax = map[string]uint64{}
		}
		for _, s := range p.Systemd.Services {
			per.TasksMax[files.UnitName(s)] = uint64(*m)
		}
	}
	return per
}

// planFile compares one wanted file with disk and plans its write (or
// says it already has these bytes).
func (pl *Plan) planFile(w fileWant, st *journal.State) error {
	path := pl.env.path(w.path)
	link, isLink := files.Link(path)
	cur, existed, err := files.Read(path)
	if isLink {
		// Read through the link only within the root (an image's absolute
		// link names the image's file, not the build host's); a link that
		// leads nowhere, or outside, counts as empty. Rollback puts the
		// link itself back.
		cur, existed, err = pl.readLinked(w.path)
	}
	if err != nil {
		return ownedReadError(path, err)
	}
	if existed && string(cur) == string(w.data) {
		pl.Skipped = append(pl.Skipped, Skip{File: path, Layer: Persistent, Current: describe(cur, true), Reason: "already has these exact bytes; not rewritten"})
		return nil
	}
	perm, owner := fs.FileMode(0o644), (*journal.Owner)(nil)
	if existed {
		perm, owner = permOwner(path)
	}
	_, journaled := st.Files[path]
	foreign := existed && !journaled
	dirs, err := missingDirs(filepath.Dir(path))
	if err != nil {
		return exitcode.Environmentf("tune: %w", err)
	}
	pl.files = append(pl.files, fileStep{layer: w.layer, path: path, existed: existed, from: cur, perm: perm, owner: owner, foreign: foreign, to: w.data, dirs: dirs, link: link})
	reason := "owned by hostprep"
	switch {
	case foreign:
		reason = "exists but was not written by hostprep: replaced; its bytes, owner and mode are saved in the journal and rollback restores them"
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s exists and hostprep did not write it (%s): apply replaces it with hostprep's own; the original bytes, owner and mode are saved in the journal (%s) and %s restores them", path, describe(cur, true), pl.env.stateFile(), pl.env.suggest("rollback")))
	case existed:
		reason = "owned by hostprep; content differs"
	}
	if w.why != "" {
		reason = w.why + "; " + reason
	}
	pl.Changes = append(pl.Changes, Change{File: path, Layer: Persistent, From: describe(cur, existed), To: describe(w.data, true), Reason: reason})
	if pl.env.ImageMode() {
		return nil // nothing runs in an image yet: no restarts, no sessions
	}
	pl.takeEffect(w)
	return nil
}

// takeEffect says what must happen for the changed file w to take effect:
// its note, and its unit to restart. With systemd not running (no
// /run/systemd/system: a container, a chroot) no systemctl command works,
// and a drop-in takes effect when systemd starts the units, at the next
// boot under systemd: one note says so, and nothing is to be restarted.
func (pl *Plan) takeEffect(w fileWant) {
	if w.systemd && !pl.env.systemdRunning() {
		note := fmt.Sprintf("systemd is not running (no %s): its drop-ins take effect when systemd starts the units, at the next boot under systemd; nothing to restart now", pl.env.systemdRunDir())
		if !slices.Contains(pl.Notes, note) {
			pl.Notes = append(pl.Notes, note)
		}
		return
	}
	if w.note != "" {
		pl.Notes = append(pl.Notes, w.note)
	}
	if w.unit != "" {
		pl.Restart = append(pl.Restart, restartName(w.unit))
	}
}

// restartName is how `systemctl try-restart` names unit u: u itself, or
// for a template (worker@.service, whose drop-in every instance reads)
// the pattern of its instances, worker@*.service, which systemctl
// matches against the units loaded now: systemd refuses the template's
// own name ("Unit name worker@.service is missing the instance name":
// manager_load_unit_prepare), so no running instance was restarted.
func restartName(u string) string {
	if at := strings.LastIndex(u, "@"); at >= 0 && strings.HasPrefix(u[at+1:], ".") {
		return u[:at+1] + "*" + u[at+1:]
	}
	return u
}

// readLinked reads rel (a path relative to the root that is a symbolic
// link) the way boot does, resolving the link within the root: its bytes,
// and existed true even when the link leads nowhere (the link exists).
func (pl *Plan) readLinked(rel string) ([]byte, bool, error) {
	target := pl.env.path(hostconf.Resolve(pl.env.bootRoot(), rel))
	b, _, err := files.Read(target)
	if errors.Is(err, syscall.EISDIR) {
		err = nil
	}
	return b, true, err
}

// permOwner is an existing regular file's permission bits and owner, to
// keep them when hostprep replaces it; 0644 and nil (root's) for anything
// else. A symbolic link is not followed: a file masked with a link to
// /dev/null (0666) would otherwise be replaced by a world-writable file
// that any user could fill with sysctl lines for the next boot.
func permOwner(path string) (fs.FileMode, *journal.Owner) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return 0o644, nil
	}
	var owner *journal.Owner
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		owner = &journal.Owner{UID: int(sys.Uid), GID: int(sys.Gid)}
	}
	return fi.Mode().Perm(), owner
}

// checkBoot simulates the boot that follows this plan (the owned files
// with their new bytes) and records, per key and limit, the value after a
// reboot; a key or limit another file wins is a warning naming it.
func (pl *Plan) checkBoot(p *profiles.Profile, st *journal.State) error {
	modes := map[string]string{}
	for k, j := range st.Keys {
		modes[k] = j.Mode
	}
	for k, s := range p.Sysctl {
		modes[k] = string(s.Mode)
	}
	owned := ownedFiles(pl.env, st)
	for _, f := range pl.files {
		if f.retire != nil { // restored to its original: no longer hostprep's at boot
			delete(owned, pl.env.relPath(f.path))
		}
	}
	owned[pl.env.sysctlConf()] = true
	items, err := bootItems(pl.env, pl.persisted, modes, overlayOf(pl.env, pl.files), owned)
	if err != nil {
		return err
	}
	pl.Boot = items
	byKey := map[string]*BootValue{}
	for i, it := range items {
		if it.Key != "" {
			byKey[it.Key] = &items[i].Boot
		}
		if !it.OK {
			pl.Warnings = append(pl.Warnings, it.Problem)
		}
	}
	notes, warnings := installNotes(pl.env, items)
	pl.Notes, pl.Warnings = append(pl.Notes, notes...), append(pl.Warnings, warnings...)
	// A unit that is not installed has nothing to restart (`systemctl
	// try-restart` fails on it: "Unit not found"), and systemd refuses
	// every job but stop on a masked one ("Unit is masked"), also one
	// masked only until the reboot; their notes and problems say so.
	pl.Restart = slices.DeleteFunc(pl.Restart, func(u string) bool {
		return slices.ContainsFunc(items, func(it BootItem) bool {
			return restartName(it.unit) == u && (it.NotInstalled || it.mask != "" || it.runtimeMask)
		})
	})
	for i, c := range pl.Changes {
		if c.Key != "" {
			pl.Changes[i].Boot = byKey[c.Key]
		}
	}
	for i, s := range pl.Skipped {
		if s.Key != "" {
			pl.Skipped[i].Boot = byKey[s.Key]
		}
	}
	return nil
}

func describe(b []byte, existed bool) string {
	if !existed {
		return "absent"
	}
	return fmt.Sprintf("%s", plural.N(len(b), "byte"))
}

// missingDirs lists the directories that must be created for dir,
// outermost first.
func missingDirs(dir string) ([]string, error) {
	var missing []string
	for d := filepath.Clean(dir); d != filepath.Dir(d); d = filepath.Dir(d) {
		st, err := os.Stat(d)
		if err == nil {
			if !st.IsDir() {
				return nil, fmt.Errorf("%s is not a directory", d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		missing = append(missing, d)
	}
	slices.Reverse(missing)
	return missing, nil
}

func clonePersisted(p journal.Persisted) journal.Persisted {
	out := p
	if p.Sysctl != nil {
		out.Sysctl = make(map[string]journal.PersistedKey, len(p.Sysctl))
		for k, v := range p.Sysctl {
			out.Sysctl[k] = v
		}
	}
	if p.Services != nil {
		out.Services = make(map[string]journal.Limit, len(p.Services))
		for k, v := range p.Services {
			out.Services[k] = v
		}
	}
	out.TasksMax = maps.Clone(p.TasksMax)
	out.NofileUsers = slices.Clone(p.NofileUsers)
	return out
}

// ownedReadError is the error (exitcode.Environment) for a path where
// hostprep keeps a file of its own that cannot be read; where a
// directory stands at it, or a file at a directory it needs
// (EISDIR/ENOTDIR), it names the fix: hostprep never removes what it does
// not own.
func ownedReadError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.EISDIR):
		return exitcode.Environmentf("tune: %s is a directory, where hostprep keeps a file of its own: move it away (hostprep never removes what it did not write), then run the command again", path)
	case errors.Is(err, syscall.ENOTDIR):
		return exitcode.Environmentf("tune: %s: a file stands where hostprep needs a directory on that path (%w): move it away (hostprep never removes what it did not write), then run the command again", path, err)
	}
	return exitcode.Environmentf("tune: reading %s: %w", path, err)
}
