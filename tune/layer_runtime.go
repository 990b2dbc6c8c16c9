package tune

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/sysval"
)

// runtimeLayer is the live kernel values under /proc/sys: planned here
// (sysctlTargets, planRuntime), applied in plan order (fs.nr_open before
// fs.file-max before the rest), each write read back, and rolled back by
// rollbackKey; verified now by StatusOf (verify.go).
type runtimeLayer struct {
	pl   *Plan
	done []keyStep
	// before are the companions' values before this run's writes
	// (companions.go), st the journal the run records them in.
	before map[string]string
	st     *journal.State
}

// modeOf is a key's mode, exact when the profile gives none.
func modeOf(s profiles.Sysctl) string {
	if s.Mode == "" {
		return sysval.Exact
	}
	return string(s.Mode)
}

// sysctlTargets computes the value every profile key will have after the
// apply (by its mode, from the host's value; in image mode from the image's
// sysctl configuration, imageTarget)
// and the host's current values. Errors: exitcode.BadInput naming every
// key unknown to the kernel or out of the kernel's bounds for this
// kernel version; exitcode.Environment when /proc/sys cannot be read.
func (pl *Plan) sysctlTargets(p *profiles.Profile) (map[string]target, map[string]string, error) {
	keys := make([]string, 0, len(p.Sysctl))
	for k := range p.Sysctl {
		keys = append(keys, k)
	}
	sortKeys(keys)
	targets, current := map[string]target{}, map[string]string{}
	var errs []string
	kernel := ""
	if !pl.env.ImageMode() {
		kernel = pl.kernelRelease()
	}
	var image *hostconf.Sysctl // the image's sysctl configuration, in image mode
	if pl.env.ImageMode() && len(keys) > 0 {
		var err error
		if image, err = hostconf.ReadSysctl(pl.env.bootRoot()); err != nil {
			return nil, nil, exitcode.Environmentf("tune: boot configuration: %w", err)
		}
	}
	var plan []planned
	for _, k := range keys {
		s := p.Sysctl[k]
		if image != nil {
			t := pl.imageTarget(image, k, s)
			targets[k] = t
			plan = append(plan, planned{key: k, s: s, to: t.value})
			continue
		}
		if pl.isSecret(k, s) {
			errs = append(errs, pl.secretRefusal(p, k))
			continue
		}
		cur, ok, err := pl.current(k)
		var unreadable *unreadableError
		if errors.As(err, &unreadable) {
			errs = append(errs, p.Where("sysctl", k)+unreadable.Error())
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			if msg := pl.missingKey(k, s); msg != "" {
				errs = append(errs, p.Where("sysctl", k)+msg)
			}
			continue
		}
		current[k] = cur
		to, err := sysval.TargetOf(cur, s.Parsed, modeOf(s))
		if err != nil {
			errs = append(errs, fmt.Sprintf("%ssysctl %s = %q: %v", p.Where("sysctl", k, "value"), k, s.Value, err))
			continue
		}
		targets[k] = target{value: to, optional: s.Optional, comment: s.Comment, present: true}
		plan = append(plan, planned{key: k, s: s, to: to})
	}
	if len(errs) > 0 {
		return nil, nil, exitcode.BadInputf("%s", strings.Join(errs, "; ")) // one line
	}
	start, startFrom, err := pl.unprivStart(p)
	if err != nil {
		return nil, nil, err
	}
	// the trial writes in the order apply will
	pl.startFirst = orderWrites(plan, current[keyUnprivStart])
	if err := pl.settleTargets(p, plan, targets, pl.judgeKernel(plan, kernel, start, startFrom), kernel); err != nil {
		return nil, nil, err
	}
	return targets, current, nil
}

// settleTargets sets each planned key's target from the kernel's verdict
// on it (settle). Errors: exitcode.BadInput naming every value refused.
func (pl *Plan) settleTargets(p *profiles.Profile, plan []planned, targets map[string]target, verdicts map[string]verdict, kernel string) error {
	var errs []string
	for _, q := range plan {
		to, adjusted, msg := pl.settle(q, verdicts[q.key], kernel)
		if msg != "" {
			errs = append(errs, p.Where("sysctl", q.key, "value")+msg)
			continue
		}
		t := targets[q.key]
		t.value, t.adjusted = to, adjusted
		if !sysval.Equal(to, q.to) {
			// The kernel's value stands for the profile's: verify and a
			// second apply compare with it.
			t.want = to
		}
		targets[q.key] = t
	}
	if len(errs) > 0 {
		return exitcode.BadInputf("%s", strings.Join(errs, "; ")) // one line
	}
	return nil
}

// unprivStart is net.ipv4.ip_unprivileged_port_start after the apply and
// where it comes from: the profile's, else this host's, else (image mode,
// or a kernel without it) the kernel default.
func (pl *Plan) unprivStart(p *profiles.Profile) (int64, string, error) {
	if s, ok := p.Sysctl[keyUnprivStart]; ok {
		if n, ok := s.Parsed.Number(); ok {
			return n, "the profile", nil
		}
	}
	if !pl.env.ImageMode() {
		v, ok, err := pl.current(keyUnprivStart)
		if err != nil {
			return 0, "", err
		}
		if n, err := strconv.ParseInt(v, 10, 64); ok && err == nil {
			return n, "this host", nil
		}
	}
	return defaultUnprivStart, "the kernel default", nil
}

// imageTarget is key k's target in image mode, where nothing is live: the
// value the image's own sysctl configuration gives k at boot stands in for
// the live value, so at-least and at-most keep an image value that
// already satisfies the profile (hostprep's file, read later, would
// otherwise lower it); with no file setting k, the profile's value.
func (pl *Plan) imageTarget(image *hostconf.Sysctl, k string, s profiles.Sysctl) target {
	t := target{value: s.Parsed.Normal, optional: s.Optional, comment: s.Comment, present: true}
	set, ok := image.Lookup(k)
	if !ok || modeOf(s) == sysval.Exact {
		return t
	}
	if why := kernelRefuses(k, set.Value, s.Value); why != "" {
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("sysctl %s: the image's %s sets %s, which the kernel refuses (%s): it is not kept; hostprep writes the profile's %s", k, set.Where(), sysval.Normalize(set.Value), why, t.value))
		return t
	}
	set.Value, _ = kernelKeeps(k, set.Value, s.Value) // "32768 # keep" is 32768
	if to, err := sysval.TargetOf(set.Value, s.Parsed, modeOf(s)); err == nil && to != t.value {
		t.value = to
		pl.Skipped = append(pl.Skipped, Skip{Key: k, Layer: Persistent, Current: sysval.Normalize(set.Value),
			Reason: fmt.Sprintf("kept at %s: the image's %s sets it, which satisfies the profile's %s %s; hostprep's file repeats it instead of lowering it", to, set.Where(), modeOf(s), s.Parsed.Normal)})
	}
	return t
}

// missingKey handles a key this kernel does not show: skipped when
// optional or hidden in this network namespace, else the error message.
// An interface's key is never hidden: it lives in every namespace that
// has the interface, so where it is absent the interface is.
func (pl *Plan) missingKey(k string, s profiles.Sysctl) string {
	path := sysctlkey.File(pl.env.procSys(), k)
	dir, interfaceGone := missingInterface(pl.env.procSys(), k)
	switch {
	case isDir(path):
		return fmt.Sprintf("sysctl %s: %s is a directory of keys, not a key: name one key under it", k, path)
	case s.Optional && interfaceGone:
		pl.Skipped = append(pl.Skipped, Skip{Key: k, Layer: Runtime, Reason: "optional key of an interface not here (" + dir + " is absent); not set, not persisted"})
	case s.Optional:
		pl.Skipped = append(pl.Skipped, Skip{Key: k, Layer: Runtime, Reason: "optional key not on this kernel (" + path + " is absent; a module may not be loaded); not set, not persisted"})
	case strings.HasPrefix(k, "net.") && pl.env.foreignNetNS() && !inEveryNamespace(k):
		pl.Skipped = append(pl.Skipped, Skip{Key: k, Layer: Runtime, Reason: "not visible in this network namespace (a global net.* key lives only in the host's initial namespace, and a misspelled key looks the same from here): set it on the host; not set, not persisted here"})
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("sysctl %s: this process runs in its own network namespace (container or unshare), where %s does not exist; only namespaced net.* keys are set here, set this one on the host (hostprep cannot tell a global key from a misspelled one from here: check the spelling)", k, k))
	default:
		hint := dottedNameHint(pl.env.procSys(), k)
		if interfaceGone {
			return fmt.Sprintf("sysctl %s: this network namespace has no interface %q (no %s)%s: fix the spelling, remove it, or mark it `optional: true` if the interface comes later", k, filepath.Base(dir), dir, hint)
		}
		return fmt.Sprintf("sysctl %s: this kernel has no such key (no %s)%s: fix the spelling, remove it, or mark it `optional: true` if it needs a module", k, path, hint)
	}
	return ""
}

// inEveryNamespace reports whether key lies in a tree every network
// namespace has whole (conf, and neigh but for its default entry, which
// the initial namespace alone has): absent there is absent everywhere,
// not a global key of the host's.
func inEveryNamespace(key string) bool {
	p := sysctlkey.Path(key)
	return sysctlkey.InInterfaceTree(key) && !strings.HasPrefix(p, "net/ipv4/neigh/default/") && !strings.HasPrefix(p, "net/ipv6/neigh/default/")
}

// missingInterface is the directory of k's interface under procSys, and
// whether it is absent; false for a key of no interface.
func missingInterface(procSys, k string) (dir string, missing bool) {
	tree, dev, _, ok := sysctlkey.Interface(k)
	if !ok {
		return "", false
	}
	dir = filepath.Join(procSys, tree, dev)
	st, err := os.Stat(dir)
	return dir, err != nil || !st.IsDir()
}

// dottedNameHint names k's right spelling when k spelled with dots an
// interface whose name has one (net.ipv4.conf.eth0.100.rp_filter for the
// VLAN eth0.100, which is here); "" otherwise.
func dottedNameHint(procSys, k string) string {
	tree, dev, rest, ok := sysctlkey.Interface(k)
	if !ok {
		return ""
	}
	parts := strings.Split(rest, "/")
	for n := 1; n < len(parts); n++ {
		name := dev + "." + strings.Join(parts[:n], ".")
		if st, err := os.Stat(filepath.Join(procSys, tree, name)); err == nil && st.IsDir() {
			return fmt.Sprintf("; the interface %s is here, and its key is spelled %s (a dot in an interface's name is a slash in the key)", name, sysctlkey.Dotted(tree+name+"/"+strings.Join(parts[n:], "/")))
		}
	}
	return ""
}

// planRuntime plans a /proc/sys write for every target the host does not
// have yet, and says why the others are skipped.
func (pl *Plan) planRuntime(p *profiles.Profile, targets map[string]target, current map[string]string) error {
	keys := make([]string, 0, len(targets))
	for k := range targets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, writeOrder(pl.startFirst))
	for _, k := range keys {
		t, cur, s := targets[k], current[k], p.Sysctl[k]
		mode := modeOf(s)
		// In a network namespace of its own the kernel shows a global
		// net.* key read-only, mirroring the host's; an interface
		// tree's key lives in each namespace, so read-only there is
		// read-only everywhere.
		foreign := strings.HasPrefix(k, "net.") && pl.env.foreignNetNS() && !sysctlkey.InInterfaceTree(k)
		if !pl.backend.Writable(k) && !foreign {
			// Held or not: its line in hostprep's sysctl.d file would
			// fail at every boot.
			return exitcode.BadInputf("%ssysctl %s: the kernel shows it read-only (%s has no write permission), so no writer can set it, at boot neither; remove it from the profile", p.Where("sysctl", k), k, sysctlkey.File(pl.env.procSys(), k))
		}
		if sysval.EqualKey(k, cur, t.value) {
			pl.Skipped = append(pl.Skipped, Skip{Key: k, Layer: Runtime, Current: sysval.Normalize(cur), Reason: alreadyReason(k, cur, s, mode)})
			if pl.held == nil {
				pl.held = map[string]string{}
			}
			pl.held[k] = t.value
			continue
		}
		if foreign && !pl.backend.Writable(k) {
			pl.Skipped = append(pl.Skipped, Skip{Key: k, Layer: Runtime, Current: sysval.Normalize(cur), Reason: "read-only in this network namespace (the kernel mirrors the host's global value): set it on the host; not set, not persisted here"})
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("sysctl %s: read-only in this network namespace (container or unshare); set %s=%s on the host", k, k, t.value))
			delete(targets, k)
			continue
		}
		reason := "exact"
		switch {
		case k == keyReservedPorts && s.Value == "":
			reason = t.comment
		case mode != sysval.Exact:
			reason = mode + " " + s.Parsed.Normal
		}
		pl.runtime = append(pl.runtime, keyStep{key: k, from: cur, to: t.value, mode: mode, want: cmp.Or(t.want, s.Parsed.Normal)})
		pl.Changes = append(pl.Changes, Change{Key: k, Layer: Runtime, From: sysval.Normalize(cur), To: t.value, Reason: reason + t.adjusted})
	}
	return nil
}

// alreadyReason says why a key the host already has is skipped.
func alreadyReason(k, cur string, s profiles.Sysctl, mode string) string {
	switch {
	case k == keyReservedPorts && s.Value == "":
		return "already reserves every port to keep out of the ephemeral range"
	case mode == sysval.AtLeast && !sysval.Equal(cur, s.Parsed.Normal):
		return fmt.Sprintf("at-least %s: host already has %s, never lowered", s.Parsed.Normal, sysval.Normalize(cur))
	case mode == sysval.AtMost && !sysval.Equal(cur, s.Parsed.Normal):
		return fmt.Sprintf("at-most %s: host already has %s, never raised", s.Parsed.Normal, sysval.Normalize(cur))
	}
	return "already " + sysval.Normalize(cur)
}

func (l *runtimeLayer) record(st *journal.State) {
	for _, s := range l.pl.runtime {
		k := st.Keys[s.key]
		if k == nil {
			// A companion an earlier apply moved holds its original.
			k = &journal.Key{Original: originalOf(st, s.key, s.from), Seq: st.NextSeq}
			delete(st.Companions, s.key)
			st.NextSeq++
			st.Keys[s.key] = k
		}
		k.Set, k.Mode, k.Want = s.to, s.mode, s.want
	}
	if len(l.pl.runtime) == 0 || l.pl.backend == nil {
		return
	}
	keys := make([]string, 0, len(l.pl.runtime))
	for _, s := range l.pl.runtime {
		keys = append(keys, s.key)
	}
	l.before = companionValues(l.pl.env.procSys(), l.pl.backend, keys, func(k string) bool { return st.Keys[k] != nil })
	recordCompanions(st, l.before)
	l.st = st
}

func (l *runtimeLayer) apply(ctx context.Context) error {
	pl := l.pl
	for _, s := range pl.runtime {
		if err := ctx.Err(); err != nil {
			return &stepError{what: "tune apply interrupted", cause: err}
		}
		werr := pl.backend.Set(s.key, s.to)
		if werr == nil {
			if got, err := pl.backend.Get(s.key); err != nil {
				werr = err
			} else if !sysval.EqualKey(s.key, got, s.to) {
				werr = fmt.Errorf("the kernel accepted %q but reads back %q", s.to, got)
			}
			l.done = append(l.done, s) // undo even a write that read back wrong
		}
		if werr != nil {
			if errors.Is(werr, syscall.EROFS) {
				return &stepError{final: containerError(pl)}
			}
			return &stepError{what: fmt.Sprintf("tune apply: writing %s = %q", s.key, s.to), cause: kernelErr(werr)}
		}
	}
	return l.settleCompanions()
}

// settleCompanions runs after the run's writes: a key of the profile the
// host already held that another write moved is written back, every
// planned key must still read its value (else two keys of the profile
// are one to the kernel and disagree: a *stepError, and the run is
// undone), and the companions' values now go into the journal.
func (l *runtimeLayer) settleCompanions() error {
	pl := l.pl
	moved := map[string]string{}
	for k, v := range pl.held {
		if got, err := pl.backend.Get(k); err == nil && !sysval.EqualKey(k, got, v) {
			moved[k] = v
		}
	}
	if p := putBack(pl.backend, moved); len(p) > 0 {
		return &stepError{what: "tune apply: writing back a key another write moved", cause: errors.New(strings.Join(p, "; "))}
	}
	for _, s := range pl.runtime {
		if got, err := pl.backend.Get(s.key); err == nil && !sysval.EqualKey(s.key, got, s.to) {
			return &stepError{what: "tune apply: the kernel ties keys of this profile together", cause: fmt.Errorf("%s reads %q after the run's other writes, not %q: the kernel changed it when another key of the profile was written (an alias such as net.ipv4.ip_forward and net.ipv4.conf.all.forwarding, or an all or default entry); give them values that agree", s.key, got, s.to)}
		}
	}
	if l.st == nil {
		return nil // nothing recorded: no companions
	}
	after := reread(pl.backend, maps.Keys(l.before))
	for k, c := range l.st.Companions {
		v, ours := after[k]
		if !ours {
			continue // another apply's companion, not this run's
		}
		c.Pending = false
		if !sysval.EqualKey(k, v, l.before[k]) {
			c.Set = v // moved by this run's writes
		}
	}
	return nil
}

func (l *runtimeLayer) undo() []string {
	var problems []string
	for i := len(l.done) - 1; i >= 0; i-- {
		s := l.done[i]
		err := l.pl.backend.Set(s.key, s.from)
		if err != nil && goneInterface(l.pl.env.procSys(), s.key, err) == "" { // a gone interface's key went with it
			problems = append(problems, fmt.Sprintf("%s back to %q: %v", s.key, s.from, err))
		}
	}
	return append(problems, putBack(l.pl.backend, l.before)...)
}

// key undoes one runtime key (rollback), keeping fs.nr_open and
// fs.file-max where a left-behind file needs them.
func (r *rollbackRun) key(key string) {
	if r.backendErr != nil {
		r.failures = append(r.failures, fmt.Sprintf("%s: %v", key, r.backendErr))
		return
	}
	k := r.st.Keys[key]
	if kept := keepForNofile(r.env, r.b, key, k, r.need, fmt.Sprintf("%s (%s)", r.needFile, r.needWhy)); kept != nil {
		r.res.Kept = append(r.res.Kept, *kept)
		return
	}
	ch, left, err := rollbackKey(r.b, key, k)
	if gone := goneInterface(r.env.procSys(), key, err); gone != "" {
		r.res.Notes = append(r.res.Notes, fmt.Sprintf("%s: %s, nothing to restore", key, gone))
		delete(r.remaining.Keys, key) // done: the kernel holds nothing of it
		return
	}
	if err != nil {
		err = fmt.Errorf("%s back to %q: %w", key, sysval.Normalize(k.Original), err)
	}
	if r.record(ch, left, err) {
		delete(r.remaining.Keys, key)
	}
}

// goneInterface says, when reading or writing key failed (err), that the
// network interface the key belongs to is gone: its directory under
// procSys (/proc/sys/net/ipv4/conf/a0) no longer exists, and with it
// every key of the interface, so the kernel holds no value there to
// check or restore. "" when err is nil, key is no interface's or the
// interface is there.
func goneInterface(procSys, key string, err error) string {
	if err == nil {
		return ""
	}
	dir, missing := missingInterface(procSys, key)
	if !missing {
		return ""
	}
	return fmt.Sprintf("interface %s is gone (no %s)", filepath.Base(dir), dir)
}

// keepForNofile returns a Kept entry when key is fs.nr_open or fs.file-max
// and restoring its original would put it below need, the hard nofile a
// limits file (needFile, named with why it stays) sets; nil otherwise.
func keepForNofile(env Env, b interface{ Get(string) (string, error) }, key string, k *journal.Key, need uint64, needFile string) *Skip {
	if need == 0 || (key != keyNrOpen && key != keyFileMax) {
		return nil
	}
	orig, err := strconv.ParseUint(strings.TrimSpace(k.Original), 10, 64)
	if err != nil || orig >= need {
		return nil
	}
	live, err := b.Get(key)
	if err != nil {
		return nil
	}
	cur, err := strconv.ParseUint(strings.TrimSpace(live), 10, 64)
	if err != nil || cur < need {
		return nil // already below: nothing to protect by keeping it
	}
	return &Skip{Key: key, Layer: Runtime, Current: sysval.Normalize(live),
		Reason: fmt.Sprintf("kept because %s sets hard nofile %d, above the original %s %d: lowering it would make logins and services fail to set that limit; fix or remove that file and run %s again", needFile, need, key, orig, env.suggest("rollback"))}
}

// rollbackKey puts key back to its original unless someone else changed
// it since hostprep set it.
func rollbackKey(b interface {
	Get(string) (string, error)
	Set(string, string) error
}, key string, k *journal.Key) (*Change, *Skip, error) {
	live, err := b.Get(key)
	if err != nil {
		return nil, nil, err
	}
	if sysval.EqualKey(key, live, k.Original) {
		return nil, nil, nil
	}
	if !sysval.EqualKey(key, live, k.Set) {
		return nil, &Skip{Key: key, Layer: Runtime, Current: sysval.Normalize(live),
			Reason: fmt.Sprintf("changed by someone else after hostprep set %q (original %q); left alone", k.Set, sysval.Normalize(k.Original))}, nil
	}
	if err := b.Set(key, k.Original); err != nil {
		return nil, nil, kernelErr(err)
	}
	return &Change{Key: key, Layer: Runtime, From: sysval.Normalize(live), To: sysval.Normalize(k.Original), Reason: "original"}, nil, nil
}

// keyStatuses compares every journaled key with /proc/sys (tune status);
// pending marks an item an interrupted apply had not reached.
func keyStatuses(env Env, st *journal.State, pending string) ([]ItemStatus, error) {
	var items []ItemStatus
	keys := bySeq(st.Keys, func(k *journal.Key) int { return k.Seq })
	var b interface{ Get(string) (string, error) }
	if len(keys) > 0 {
		be, err := env.backend()
		if err != nil {
			return nil, exitcode.Environmentf("tune status: %w", err)
		}
		b = be
	}
	for _, k := range keys {
		j := st.Keys[k]
		it := ItemStatus{Key: k, Layer: Runtime, Original: sysval.Normalize(j.Original), Set: j.Set, Mode: j.Mode}
		live, err := b.Get(k)
		if gone := goneInterface(env.procSys(), k, err); gone != "" {
			it.Live, it.Drift = "absent", gone+": the value hostprep set went with it"
		} else if err != nil {
			it.Live, it.Drift = "unreadable", err.Error()
		} else {
			it.Live = sysval.Normalize(live)
			want, mode := j.Want, j.Mode
			if want == "" || k == keyReservedPorts {
				want, mode = j.Set, sysval.Exact
			}
			if sysval.SatisfiesKey(k, live, want, mode) {
				it.OK = true
			} else if pending != "" && sysval.EqualKey(k, live, j.Original) {
				it.Drift = pending
			} else {
				it.Drift = fmt.Sprintf("live %q no longer satisfies %s %q set by hostprep", it.Live, mode, want)
			}
		}
		items = append(items, it)
	}
	return items, nil
}
