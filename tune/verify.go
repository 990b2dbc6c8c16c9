package tune

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sort"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/journal"
)

// notReached is the Drift of an item an interrupted apply had not yet
// changed (it still holds its original value).
const notReached = "not reached: the interrupted apply stopped before it"

// ItemStatus is one key or file hostprep applied, compared with the live
// host.
type ItemStatus struct {
	Key  string `json:"key,omitempty"`
	File string `json:"file,omitempty"`
	// PID is a running process whose RLIMIT_NOFILE hostprep raised
	// (process layer; values are "soft:hard" file descriptors).
	PID   int    `json:"pid,omitempty"`
	Layer string `json:"layer"`
	// Original is the value before the first apply ("absent" / "N bytes"
	// for files).
	Original string `json:"original"`
	// Set is what hostprep last set (for files "N bytes" is not kept; the
	// SHA-256 prefix is shown).
	Set string `json:"set"`
	// Live is the value now.
	Live string `json:"live"`
	// Mode is the profile's mode for a key.
	Mode string `json:"mode,omitempty"`
	// OK says whether Live still satisfies what hostprep applied.
	OK bool `json:"ok"`
	// Drift explains a mismatch.
	Drift string `json:"drift,omitempty"`
	// Boot is a key's value after the next boot and the file:line that
	// sets it (hostconf's simulation of systemd-sysctl or sysctl --system).
	Boot *BootValue `json:"boot,omitempty"`
}

// Status is what `hostprep tune status|verify` report; its JSON:
//
//	{"changed": false, "applied": true, "profiles": ["sys-tune"], "applies": [{"profile": "sys-tune", "at": "..."}],
//	 "items": [{"key": "fs.nr_open", "layer": "runtime", "original": "1048576", "set": "2097152", "live": "2097152", "ok": true}],
//	 "drift": 0}
type Status struct {
	// Changed is always false: status and verify only read the host.
	Changed  bool            `json:"changed"`
	Applied  bool            `json:"applied"`
	Profiles []string        `json:"profiles"`
	Applies  []journal.Apply `json:"applies"`
	Items    []ItemStatus    `json:"items"`
	// Drift counts items whose live value no longer matches.
	Drift int `json:"drift"`
	// Journal is the state file read.
	Journal string `json:"journal"`
	// Boot compares every persisted key and limit with its value after the
	// next boot (as `tune verify --boot`); it does not count in Drift.
	Boot []BootItem `json:"boot_check,omitempty"`
	// BootNotes and BootWarnings say which units of Boot are not
	// installed (their items are marked not_installed), as verify
	// --boot's notes and warnings do.
	BootNotes    []string `json:"boot_notes,omitempty"`
	BootWarnings []string `json:"boot_warnings,omitempty"`
	// BootError says why Boot is missing: a configuration file the boot
	// check reads cannot be read (an unreadable unit file, when not run
	// as root). verify --boot fails with it (exit 3).
	BootError string `json:"boot_error,omitempty"`
	// Interrupted says the last apply was killed part way (its completion
	// marker was never written), or a rollback was (RollbackInterrupted)
	// or could not restore every item (RollbackIncomplete), and what to
	// run; items an interrupted apply had not reached yet show their
	// original value and are not counted in Drift.
	Interrupted string `json:"interrupted,omitempty"`
	// RollbackInterrupted says Interrupted is about a rollback killed part
	// way: status fails too (Err).
	RollbackInterrupted bool `json:"rollback_interrupted,omitempty"`
	// RollbackIncomplete says Interrupted is about a rollback that ran to
	// its end but could not restore the items the journal still holds
	// (not a kill): status fails too (Err).
	RollbackIncomplete bool `json:"rollback_incomplete,omitempty"`
	// LastVerify is the last `tune verify --textfile` run's result
	// (hostprep-verify.service), nil when none ran.
	LastVerify *VerifyRecord `json:"last_verify,omitempty"`
}

// bySeq returns the names of m, a journal's keys, files or processes, in
// the order hostprep first changed them (seq of each entry, ascending).
func bySeq[V any](m map[string]V, seq func(V) int) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return seq(m[names[i]]) < seq(m[names[j]]) })
	return names
}

// StatusOf reads the journal and compares each key and file hostprep
// applied with the live host. It needs read access to the journal (root
// on a host). With no journal, Applied is false and Items empty.
func StatusOf(env Env) (*Status, error) {
	if err := env.checkRoot("status"); err != nil {
		return nil, err
	}
	s := &Status{Profiles: []string{}, Applies: []journal.Apply{}, Items: []ItemStatus{}, Journal: env.stateFile()}
	st, err := env.loadJournal()
	if errors.Is(err, fs.ErrPermission) {
		return nil, exitcode.Environmentf("tune status: cannot read the journal %s: %w; run as root (the journal is 0600, it holds the original bytes of the files hostprep replaced)", env.stateFile(), err)
	}
	if err != nil {
		return nil, exitcode.Environmentf("tune status: %w", err)
	}
	if st == nil {
		return s, nil
	}
	env = env.keepPersistName(st).withLastApply(st)
	s.Applied, s.Profiles, s.Applies = true, st.Profiles(), st.Applies
	s.LastVerify = lastVerify(env)
	intr := st.Interrupted()
	pending := ""
	if intr != nil {
		s.Interrupted = fmt.Sprintf("apply of profile %s interrupted at %s (killed part way); run %s again to finish it or %s to undo it", intr.Profile, intr.At.Format("2006-01-02 15:04:05Z"), env.suggest("apply", applyArgs(*intr)...), env.suggest("rollback"))
		pending = notReached
	}
	if msg := rollbackInterrupted(env, st); msg != "" {
		s.Interrupted, s.RollbackInterrupted, pending = msg, true, ""
	} else if msg := rollbackIncomplete(env, st); msg != "" {
		s.Interrupted, s.RollbackIncomplete, pending = msg, true, ""
	}
	keys, err := keyStatuses(env, st, pending)
	if err != nil {
		return nil, err
	}
	s.Items = append(s.Items, keys...)
	s.Items = append(s.Items, fileStatuses(st, pending)...)
	s.Items = append(s.Items, processStatuses(st, pending)...)
	for _, it := range s.Items {
		if !it.OK && (pending == "" || it.Drift != pending) {
			s.Drift++
		}
	}
	s.attachBoot(env, st)
	return s, nil
}

// attachBoot adds the boot value of every persisted key and limit; a
// configuration file that cannot be read leaves them out, and BootError
// says so (verify --boot fails with that error).
func (s *Status) attachBoot(env Env, st *journal.State) {
	modes := map[string]string{}
	for k, j := range st.Keys {
		modes[k] = j.Mode
	}
	items, err := bootItems(env, st.Persisted, modes, nil, ownedFiles(env, st))
	if err != nil {
		s.BootError = fmt.Sprintf("not known: %v; run as root (tune verify --boot fails with this)", err)
		return
	}
	s.Boot = items
	s.BootNotes, s.BootWarnings = installNotes(env, items)
	for i, it := range s.Items {
		for j, b := range items {
			if it.Key != "" && b.Key == it.Key {
				s.Items[i].Boot = &items[j].Boot
			}
		}
	}
}

// Verify is StatusOf that fails (exitcode.Failed, exit 1) when any applied
// key or file drifted. With a profile it also requires that the profile
// plans no change (the host matches it now, journal or not).
func Verify(p *profiles.Profile, env Env) (*Status, *Plan, error) {
	if err := env.checkRoot("verify"); err != nil {
		return nil, nil, err
	}
	s, err := StatusOf(env)
	if err != nil {
		return nil, nil, err
	}
	var pl *Plan
	if p != nil {
		pl, err = NewPlan(p, env)
		if err != nil {
			return s, nil, err
		}
	}
	switch {
	case s.Interrupted != "":
		return s, pl, exitcode.Failedf("tune verify: %s", s.Interrupted)
	case s.Drift > 0:
		return s, pl, exitcode.Failedf("tune verify: %s drifted from what hostprep applied (see above); %s sets %s again", plural.N(s.Drift, "item"), env.suggest("apply", driftProfile(s)...), plural.Them(s.Drift))
	case pl != nil && pl.Changed:
		return s, pl, exitcode.Failedf("tune verify: the host does not match profile %s: %s pending; %s lists %s", p.Name, plural.N(len(pl.Changes), "change"), env.suggest("plan", ProfileArgs(p)...), plural.Them(len(pl.Changes)))
	}
	return s, pl, nil
}

// driftProfile is the flags naming the profile to apply again to undo
// drift (--profile and its --set overrides): the last one
// the journal records, as --profile named it, or a placeholder.
func driftProfile(s *Status) []string {
	if n := len(s.Applies); n > 0 {
		return applyArgs(s.Applies[n-1])
	}
	return profileArgs("PROFILE", nil)
}

// applyArgs are the flags that apply a's profile again as it was applied:
// its --profile (the name for a journal from before sources were kept)
// and --set overrides.
func applyArgs(a journal.Apply) []string {
	return profileArgs(cmp.Or(a.Source, a.Profile), a.Sets)
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
