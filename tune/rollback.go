package tune

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/sysctl"
)

// RollbackResult is what `hostprep tune rollback` did; its JSON:
//
//	{"changed": true,
//	 "changes": [{"key": "fs.nr_open", "layer": "runtime", "from": "2097152", "to": "1048576"}, ...],
//	 "left": [{"key": "net.core.somaxconn", "layer": "runtime", "current": "8192", "reason": "..."}],
//	 "kept": [{"key": "fs.nr_open", "layer": "runtime", "current": "2097152", "reason": "kept because ..."}],
//	 "journal_kept": false,
//	 "profiles": ["sys-tune"]}
type RollbackResult struct {
	// Changed is true when anything was restored or removed.
	Changed bool `json:"changed"`
	// Changes are the restores, in the order made (reverse of apply).
	Changes []Change `json:"changes"`
	// Left are keys and files someone else changed after hostprep set
	// them; rollback leaves them as they are (exit 0) and lists them here.
	Left []Skip `json:"left"`
	// Kept are fs.nr_open / fs.file-max not lowered, and hostprep's
	// sysctl.d file not removed when without it fs.nr_open at the next
	// boot would be too low, because a limits file or systemd drop-in left
	// behind (in Left) sets a hard nofile above the original value:
	// lowering them would make logins and services fail to set that limit. They and that file stay in the journal, so
	// `hostprep tune rollback` finishes once the file is fixed or removed.
	Kept []Skip `json:"kept"`
	// Failed are the items that could not be restored, one message each
	// (naming the key, file or process and the cause); rollback then
	// exits 3 and the journal keeps just them.
	Failed []string `json:"failed,omitempty"`
	// JournalKept is true when the journal was kept: for what is in Kept,
	// or for what is in Failed.
	JournalKept bool `json:"journal_kept"`
	// Profiles are the profiles whose applies were undone.
	Profiles []string `json:"profiles"`
	// Notes explain a no-op ("nothing applied").
	Notes []string `json:"notes,omitempty"`
}

type undoItem struct {
	seq  int
	key  string
	file string
	pid  string // journal.State.Processes key
}

// kind orders rollback: processes, then files, then keys.
func (u undoItem) kind() int {
	switch {
	case u.pid != "":
		return 0
	case u.file != "":
		return 1
	}
	return 2
}

// Rollback puts the host back to what it was before the first hostprep
// apply, however many applies and profiles came since: owned files are
// restored byte for byte (or removed), then runtime values are restored in
// reverse order of first change (so nofile limits go before fs.nr_open is
// lowered), created drop-in directories are removed when empty, and the
// journal is deleted.
//
// A key or file whose live value is neither what hostprep last set nor the
// original was changed by someone else: it is left alone and listed in
// Left, and Rollback still succeeds. With no journal it is a no-op.
//
// Never a nofile limit above fs.nr_open: when a limits file or systemd
// drop-in left behind sets a hard nofile above the original fs.nr_open
// (or fs.file-max), that key keeps its current value and is listed in
// Kept with the file that needs it; the key and the file stay in the
// journal (JournalKept), so rollback can be run again once the file is
// fixed or removed.
//
// Errors: exitcode.Environment when not privileged, the lock is held or a
// restore fails (the journal then keeps only what is still to undo, so
// rollback can be run again).
func Rollback(ctx context.Context, env Env) (*RollbackResult, error) {
	lk, err := env.lockFor("rollback")
	if err != nil {
		return nil, err
	}
	defer lk.Release()
	res := &RollbackResult{Changes: []Change{}, Left: []Skip{}, Kept: []Skip{}, Profiles: []string{}}
	st, err := env.loadJournal()
	if err != nil {
		return nil, exitcode.Environmentf("tune rollback: %w", err)
	}
	if st == nil {
		res.Notes = append(res.Notes, "nothing applied: no journal at "+env.stateFile())
		return res, nil
	}
	res.Profiles = st.Profiles()
	if len(st.Keys) > 0 && readOnly(env.procSys()) {
		return nil, exitcode.Environmentf("tune rollback: %s is read-only (a container?); run rollback where hostprep applied the profile; nothing was changed", env.procSys())
	}
	if err := startRollback(env, st); err != nil {
		return nil, err
	}
	r := &rollbackRun{env: env, st: st, remaining: st.Clone(), res: res, keepFiles: map[string]uint64{}}
	r.b, r.backendErr = env.backend()
	r.scanLeft()
	r.scanForeign()
	if r.backendErr == nil {
		r.compBefore = reread(r.b, maps.Keys(st.Companions))
	}
	for _, it := range undoOrder(st) {
		if err := ctx.Err(); err != nil {
			r.failures = append(r.failures, err.Error())
			break
		}
		switch {
		case it.pid != "":
			r.process(it.pid)
		case it.file != "":
			r.file(it.file)
		default:
			r.key(it.key)
		}
	}
	r.companions()
	return r.finish()
}

// rollbackRun is one rollback in progress: each layer's undo (process in
// layer_process.go, file in ownedfile.go, key in layer_runtime.go)
// records its outcome here.
type rollbackRun struct {
	env        Env
	st         *journal.State
	remaining  *journal.State // what is still to undo
	res        *RollbackResult
	b          sysctl.Backend
	backendErr error
	failures   []string
	// compBefore are the journal's companions before the rollback's
	// writes (companions.go).
	compBefore map[string]string
	// need is the highest hard nofile of an owned file left behind, and
	// needFile the file that sets it: fs.nr_open and fs.file-max are not
	// lowered below it. keepFiles are those files with their hard nofile.
	need      uint64
	needFile  string
	needWhy   string // why needFile matters: "left behind, ..." or "not hostprep's, ..."
	keepFiles map[string]uint64
}

// record adds one undo's outcome to the result: a failure (err, which
// names the key or file), something left as someone else changed it, or
// a restore. It reports whether the item is done with, so it leaves the
// journal; a failed one stays for the next rollback.
func (r *rollbackRun) record(ch *Change, left *Skip, err error) bool {
	switch {
	case err != nil:
		r.failures = append(r.failures, err.Error())
		return false
	case left != nil:
		r.res.Left = append(r.res.Left, *left)
	case ch != nil:
		r.res.Changes = append(r.res.Changes, *ch)
	}
	return true
}

// undoOrder lists what the journal holds in the order rollback undoes it:
// running processes, then files (a limits file must go before fs.nr_open
// is lowered), then keys, each in reverse order of first change.
func undoOrder(st *journal.State) []undoItem {
	var items []undoItem
	for k, v := range st.Keys {
		items = append(items, undoItem{seq: v.Seq, key: k})
	}
	for f, v := range st.Files {
		items = append(items, undoItem{seq: v.Seq, file: f})
	}
	for id, v := range st.Processes {
		items = append(items, undoItem{seq: v.Seq, pid: id})
	}
	sort.Slice(items, func(i, j int) bool {
		ki, kj := items[i].kind(), items[j].kind()
		if ki != kj {
			return ki < kj
		}
		return items[i].seq > items[j].seq
	})
	return items
}

// finish writes or removes the journal, removes the directories hostprep
// created and builds the result.
func (r *rollbackRun) finish() (*RollbackResult, error) {
	res, st, statePath := r.res, r.st, r.env.stateFile()
	r.remaining.Dirs = nil
	r.remaining.RollbackIncomplete = nil
	res.Changed = len(res.Changes) > 0
	if len(r.failures) > 0 {
		return res, r.keepFailed()
	}
	if len(res.Kept) > 0 {
		r.keepNeededFiles()
	} else if err := journal.Remove(statePath); err != nil {
		return res, exitcode.Environmentf("tune rollback: removing the journal %s: %w", statePath, err)
	}
	if !res.JournalKept { // else the next rollback removes them, with the journal's own
		r.removeDirs(st.Dirs)
	}
	res.Changed = len(res.Changes) > 0
	if res.JournalKept {
		r.remaining.Dirs = st.Dirs
		r.remaining.RollbackStarted = nil // finished: what is kept is kept on purpose
		pruneRestored(r.env, r.remaining)
		if err := journal.Save(statePath, r.remaining); err != nil {
			return res, exitcode.Environmentf("tune rollback: keeping the journal %s for %s: %w", statePath, keptKeys(res.Kept), err)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("the journal %s keeps %s and %s: fix or remove that file, then run %s again to finish", statePath, keptKeys(res.Kept), r.needFile, r.env.suggest("rollback")))
	}
	return res, nil
}

// keepFailed keeps in the journal what could not be restored (and,
// with them, what Kept holds), marked as a rollback that ran to its end
// rather than one killed part way, and returns the error that lists
// them, one item after another.
func (r *rollbackRun) keepFailed() error {
	res, statePath := r.res, r.env.stateFile()
	res.Failed = r.failures
	r.remaining.RollbackIncomplete, r.remaining.RollbackStarted = r.st.RollbackStarted, nil
	pruneRestored(r.env, r.remaining)
	if err := journal.Save(statePath, r.remaining); err != nil {
		return exitcode.Environmentf("tune rollback: %s could not be restored: %s; writing the journal %s that keeps %s failed too: %v", plural.N(len(r.failures), "item"), strings.Join(r.failures, "; "), statePath, plural.Them(len(r.failures)), err)
	}
	res.JournalKept = true
	return exitcode.Environmentf("tune rollback: %s could not be restored: %s; the journal %s keeps %s: fix the cause and run %s again", plural.N(len(r.failures), "item"), strings.Join(r.failures, "; "), statePath, plural.Them(len(r.failures)), r.env.suggest("rollback"))
}

// pruneRestored drops from st.Persisted what the owned files rolled back
// held: it says what hostprep's files set at boot, and a file no longer
// in the journal sets nothing of hostprep's (status would otherwise show
// a restored key as applied and differing at boot).
func pruneRestored(env Env, st *journal.State) {
	per, has := &st.Persisted, func(p string) bool { _, ok := st.Files[env.path(p)]; return ok }
	sysctlD := false // hostprep's sysctl.d file, under whichever --persist-name
	for f := range st.Files {
		sysctlD = sysctlD || filepath.Dir(f) == env.path("/etc/sysctl.d")
	}
	if !sysctlD {
		per.Sysctl = nil
	}
	if !has(files.LimitsConf) {
		per.Nofile, per.NofileUsers = nil, nil
	}
	if !has(files.SystemConf) {
		per.DefaultLimitNOFILE = nil
	}
	for u := range per.Services {
		if !has(files.ServiceDropIn(u)) {
			delete(per.Services, u)
			delete(per.TasksMax, u)
		}
	}
	if !has(VerifyService) {
		per.VerifyAtBoot = nil
	}
}

// keepNeededFiles keeps in the journal the left-behind files whose hard
// nofile a kept key protects, and says so in their Left entry.
func (r *rollbackRun) keepNeededFiles() {
	res, st := r.res, r.st
	for f, n := range r.keepFiles {
		for _, k := range res.Kept {
			if k.Key == "" { // hostprep's sysctl.d file, kept for the boot's fs.nr_open
				r.remaining.Files[f] = st.Files[f]
				continue
			}
			if orig, err := strconv.ParseUint(strings.TrimSpace(st.Keys[k.Key].Original), 10, 64); err == nil && n > orig {
				r.remaining.Files[f] = st.Files[f]
			}
		}
	}
	for i, l := range res.Left {
		if _, ok := r.remaining.Files[l.File]; ok && l.File != "" {
			res.Left[i].Reason = fmt.Sprintf("changed by someone else after hostprep wrote it; left in place, and kept in the journal because it sets hard nofile %d, which %s needs", r.keepFiles[l.File], keptKeys(res.Kept))
		}
	}
	res.JournalKept = true
}

// removeDirs removes the directories hostprep created (drop-in dirs, the
// journal's), innermost first; one that holds someone else's files now
// stays and is listed.
func (r *rollbackRun) removeDirs(created []string) {
	dirs := append([]string(nil), created...)
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if err := os.Remove(d); err == nil {
			r.res.Changes = append(r.res.Changes, Change{File: d + "/", Layer: Persistent, From: "directory", To: "absent", Reason: "created by hostprep"})
		} else if !os.IsNotExist(err) {
			r.res.Left = append(r.res.Left, leftDir(d, err))
		}
	}
}

// leftDir is the row for directory d, created by hostprep, that
// os.Remove could not remove (err): what it holds now, and why it stays.
func leftDir(d string, err error) Skip {
	now, why := "directory", fmt.Sprintf("created by hostprep; could not remove it (%v); left in place", err)
	if entries, rerr := os.ReadDir(d); rerr == nil {
		now = "directory of " + plural.N(len(entries), "entry")
		if len(entries) > 0 {
			why = "created by hostprep but not empty now; left in place"
		}
	}
	return Skip{File: d + "/", Layer: Persistent, Current: now, Reason: why}
}

func keptKeys(ks []Skip) string {
	var names []string
	for _, k := range ks {
		names = append(names, cmp.Or(k.Key, k.File))
	}
	return strings.Join(names, " and ")
}
