package tune

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"sort"

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
//	 "profiles": ["sys-tune"]}
type RollbackResult struct {
	// Changed is true when anything was restored or removed.
	Changed bool `json:"changed"`
	// Changes are the restores, in the order made (reverse of apply).
	Changes []Change `json:"changes"`
	// Left are keys and files someone else changed after hostprep set
	// them; rollback leaves them as they are (exit 0) and lists them here.
	Left []Skip `json:"left"`
	// Profiles are the profiles whose applies were undone.
	Profiles []string `json:"profiles"`
	// Notes explain a no-op ("nothing applied").
	Notes []string `json:"notes,omitempty"`
}

type undoItem struct {
	seq  int
	key  string
	file string
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
	res := &RollbackResult{Changes: []Change{}, Left: []Skip{}, Profiles: []string{}}
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
	// Files first (a limits file must go before fs.nr_open is lowered),
	// then keys, each in reverse order of first change.
	sort.Slice(items, func(i, j int) bool {
		fi, fj := items[i].file != "", items[j].file != ""
		if fi != fj {
			return fi
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
	for _, it := range items {
		if err := ctx.Err(); err != nil {
			failures = append(failures, err.Error())
			break
		}
		if it.file != "" {
			ch, left, err := rollbackFile(it.file, st.Files[it.file])
			switch {
			case err != nil:
				failures = append(failures, fmt.Sprintf("%s: %v", it.file, err))
				continue
			case left != nil:
				res.Left = append(res.Left, *left)
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
	if err := journal.Remove(statePath); err != nil {
		return res, exitcode.Environmentf("tune rollback: removing the journal %s: %v", statePath, err)
	}
	// Directories hostprep created (drop-in dirs, the journal's), innermost
	// first; one that holds someone else's files now stays.
	dirs := append([]string(nil), st.Dirs...)
	sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
	for _, d := range dirs {
		if err := os.Remove(d); err == nil {
			res.Changes = append(res.Changes, Change{File: d + "/", Layer: Persistent, From: "directory", To: "absent", Reason: "created by hostprep"})
		} else if !os.IsNotExist(err) {
			res.Left = append(res.Left, Skip{File: d + "/", Layer: Persistent, Reason: "created by hostprep but not empty now; left in place"})
		}
	}
	res.Changed = len(res.Changes) > 0
	return res, nil
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
			Reason: "changed by someone else after hostprep wrote it; left alone"}, nil
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
