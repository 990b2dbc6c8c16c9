package tune

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/lock"
	"github.com/hostprep/hostprep/tune/sysval"
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
	// Kept are fs.nr_open / fs.file-max not lowered because a limits file
	// or systemd drop-in left behind (in Left) sets a hard nofile above
	// the original value: lowering them would make logins and services
	// fail to set that limit. They and that file stay in the journal, so
	// `hostprep tune rollback` finishes once the file is fixed or removed.
	Kept []Skip `json:"kept"`
	// JournalKept is true when the journal was kept for what is in Kept.
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
	if err := checkPrivileges(env, "rollback"); err != nil {
		return nil, err
	}
	lk, err := lock.Acquire(env.lockFile(), env.lockWait())
	if err != nil {
		return nil, exitcode.Environmentf("tune rollback: %v", err)
	}
	defer lk.Release()
	res := &RollbackResult{Changes: []Change{}, Left: []Skip{}, Kept: []Skip{}, Profiles: []string{}}
	statePath := env.stateFile()
	st, err := env.loadJournal()
	if err != nil {
		return nil, exitcode.Environmentf("tune rollback: %v", err)
	}
	if st == nil {
		res.Notes = append(res.Notes, "nothing applied: no journal at "+statePath)
		return res, nil
	}
	res.Profiles = st.Profiles()

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
	// Running processes, then files (a limits file must go before
	// fs.nr_open is lowered), then keys, each in reverse order of first
	// change.
	sort.Slice(items, func(i, j int) bool {
		ki, kj := items[i].kind(), items[j].kind()
		if ki != kj {
			return ki < kj
		}
		return items[i].seq > items[j].seq
	})

	remaining := st.Clone()
	var failures []string
	if len(st.Keys) > 0 && readOnly(env.procSys()) {
		return nil, exitcode.Environmentf("tune rollback: %s is read-only (a container?); run rollback where hostprep applied the profile; nothing was changed", env.procSys())
	}
	var backendErr error
	b, backendErr := env.backend()
	// need is the highest hard nofile of an owned file left behind, and
	// the file that sets it; fs.nr_open and fs.file-max are not lowered
	// below it.
	var need uint64
	var needFile string
	keepFiles := map[string]uint64{}
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			failures = append(failures, err.Error())
			break
		}
		if it.pid != "" {
			p := st.Processes[it.pid]
			ch, left, note, err := rollbackProcess(p)
			switch {
			case err != nil:
				failures = append(failures, fmt.Sprintf("pid %d: %v", p.PID, err))
				continue
			case left != nil:
				res.Left = append(res.Left, *left)
			case ch != nil:
				res.Changes = append(res.Changes, *ch)
			case note != "":
				res.Notes = append(res.Notes, note)
			}
			delete(remaining.Processes, it.pid)
			continue
		}
		if it.file != "" {
			ch, left, err := rollbackFile(it.file, st.Files[it.file])
			switch {
			case err != nil:
				failures = append(failures, fmt.Sprintf("%s: %v", it.file, err))
				continue
			case left != nil:
				res.Left = append(res.Left, *left)
				if cur, ok, err := files.Read(it.file); err == nil && ok {
					if n, ok := files.HardNofile(cur); ok {
						keepFiles[it.file] = n
						if n > need {
							need, needFile = n, it.file
						}
					}
				}
			case ch != nil:
				res.Changes = append(res.Changes, *ch)
			}
			delete(remaining.Files, it.file)
			continue
		}
		if backendErr != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", it.key, backendErr))
			continue
		}
		k := st.Keys[it.key]
		if kept := keepForNofile(b, it.key, k, need, needFile); kept != nil {
			res.Kept = append(res.Kept, *kept)
			continue
		}
		ch, left, err := rollbackKey(b, it.key, k)
		switch {
		case err != nil:
			failures = append(failures, fmt.Sprintf("%s back to %q: %v", it.key, k.Original, err))
			continue
		case left != nil:
			res.Left = append(res.Left, *left)
		case ch != nil:
			res.Changes = append(res.Changes, *ch)
		}
		delete(remaining.Keys, it.key)
	}
	remaining.Dirs = nil
	res.Changed = len(res.Changes) > 0
	if len(failures) > 0 {
		if err := journal.Save(statePath, remaining); err != nil {
			failures = append(failures, "journal: "+err.Error())
		}
		return res, exitcode.Environmentf("tune rollback: %d item(s) could not be restored: %v; the journal keeps them, fix the cause and run rollback again", len(failures), failures)
	}
	if len(res.Kept) > 0 {
		// Keep what the left-behind file needs, and the file itself.
		// Keep what the left-behind files need, and those files.
		for f, n := range keepFiles {
			for _, k := range res.Kept {
				if orig, err := strconv.ParseUint(strings.TrimSpace(st.Keys[k.Key].Original), 10, 64); err == nil && n > orig {
					remaining.Files[f] = st.Files[f]
				}
			}
		}
		for i, l := range res.Left {
			if _, ok := remaining.Files[l.File]; ok && l.File != "" {
				res.Left[i].Reason = fmt.Sprintf("changed by someone else after hostprep wrote it; left in place, and kept in the journal because it sets hard nofile %d, which %s needs", keepFiles[l.File], keptKeys(res.Kept))
			}
		}
		res.JournalKept = true
	} else if err := journal.Remove(statePath); err != nil {
		return res, exitcode.Environmentf("tune rollback: removing the journal %s: %v", statePath, err)
	}
	// Directories hostprep created (drop-in dirs, the journal's), innermost
	// first; one that holds someone else's files now stays.
	dirs := append([]string(nil), st.Dirs...)
	if res.JournalKept {
		dirs = nil // the next rollback removes them, with the journal's own
	}
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if err := os.Remove(d); err == nil {
			res.Changes = append(res.Changes, Change{File: d + "/", Layer: Persistent, From: "directory", To: "absent", Reason: "created by hostprep"})
		} else if !os.IsNotExist(err) {
			res.Left = append(res.Left, Skip{File: d + "/", Layer: Persistent, Reason: "created by hostprep but not empty now; left in place"})
		}
	}
	res.Changed = len(res.Changes) > 0
	if res.JournalKept {
		remaining.Dirs = st.Dirs
		if err := journal.Save(statePath, remaining); err != nil {
			return res, exitcode.Environmentf("tune rollback: keeping the journal %s for %s: %v", statePath, res.Kept[0].Key, err)
		}
		res.Notes = append(res.Notes, fmt.Sprintf("the journal %s keeps %s and %s: fix or remove that file, then run `hostprep tune rollback` again to finish", statePath, keptKeys(res.Kept), needFile))
	}
	return res, nil
}

func keptKeys(ks []Skip) string {
	var names []string
	for _, k := range ks {
		names = append(names, k.Key)
	}
	return strings.Join(names, " and ")
}

// keepForNofile returns a Kept entry when key is fs.nr_open or fs.file-max
// and restoring its original would put it below need, the hard nofile a
// left-behind file (needFile) sets; nil otherwise.
func keepForNofile(b interface{ Get(string) (string, error) }, key string, k *journal.Key, need uint64, needFile string) *Skip {
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
		Reason: fmt.Sprintf("kept because %s (left behind, edited after hostprep wrote it) sets hard nofile %d, above the original %s %d: lowering it would make logins and services fail to set that limit; fix or remove that file and run `hostprep tune rollback` again", needFile, need, key, orig)}
}

// rollbackProcess puts a raised process's RLIMIT_NOFILE back while it is
// the same process (pid and start time) and still has the limit hostprep
// set; a process that exited gives a note, one whose limit someone else
// changed is left alone.
func rollbackProcess(p *journal.Process) (*Change, *Skip, string, error) {
	orig := unix.Rlimit{Cur: p.Original.Soft, Max: p.Original.Hard}
	set := unix.Rlimit{Cur: p.Set.Soft, Max: p.Set.Hard}
	what, live, err := restoreProc(p.PID, p.StartTime, orig, set)
	if err != nil {
		return nil, nil, "", err
	}
	switch what {
	case "gone":
		return nil, nil, fmt.Sprintf("pid %d has exited (or its pid was reused): its RLIMIT_NOFILE went with it, nothing to restore", p.PID), nil
	case "changed":
		return nil, &Skip{PID: p.PID, Layer: Process, Current: live,
			Reason: fmt.Sprintf("RLIMIT_NOFILE changed by someone else after hostprep set %s (original %s); left alone", fmtLimit(set.Cur, set.Max), fmtLimit(orig.Cur, orig.Max))}, "", nil
	case "restored":
		return &Change{PID: p.PID, Layer: Process, From: live, To: fmtLimit(orig.Cur, orig.Max), Reason: "original"}, nil, "", nil
	}
	return nil, nil, "", nil
}

func rollbackKey(b interface {
	Get(string) (string, error)
	Set(string, string) error
}, key string, k *journal.Key) (*Change, *Skip, error) {
	live, err := b.Get(key)
	if err != nil {
		return nil, nil, err
	}
	if sysval.Equal(live, k.Original) {
		return nil, nil, nil
	}
	if !sysval.Equal(live, k.Set) {
		return nil, &Skip{Key: key, Layer: Runtime, Current: sysval.Normalize(live),
			Reason: fmt.Sprintf("changed by someone else after hostprep set %q (original %q); left alone", k.Set, sysval.Normalize(k.Original))}, nil
	}
	if err := b.Set(key, k.Original); err != nil {
		return nil, nil, kernelErr(err)
	}
	return &Change{Key: key, Layer: Runtime, From: sysval.Normalize(live), To: sysval.Normalize(k.Original), Reason: "original"}, nil, nil
}

func rollbackFile(path string, f *journal.File) (*Change, *Skip, error) {
	cur, exists, err := files.Read(path)
	if err != nil {
		return nil, nil, err
	}
	if exists == f.Existed && (!exists || string(cur) == string(f.Original)) {
		return nil, nil, nil // already original
	}
	if !exists || journal.SHA256(cur) != f.SetSHA256 {
		return nil, &Skip{File: path, Layer: Persistent, Current: describe(cur, exists),
			Reason: "changed by someone else after hostprep wrote it; left in place and no longer tracked by hostprep (its header still names hostprep): it is yours now, remove or keep it"}, nil
	}
	if f.Existed {
		uid, gid := f.Owner.IDs()
		if err := files.WriteAtomicOwned(path, f.Original, fs.FileMode(f.Mode).Perm(), uid, gid); err != nil {
			return nil, nil, err
		}
		return &Change{File: path, Layer: Persistent, From: describe(cur, true), To: describe(f.Original, true), Reason: "original restored"}, nil, nil
	}
	if err := files.Remove(path); err != nil {
		return nil, nil, err
	}
	return &Change{File: path, Layer: Persistent, From: describe(cur, true), To: "absent", Reason: "created by hostprep; removed"}, nil, nil
}
