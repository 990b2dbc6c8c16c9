package tune

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// The owned-file mechanism every file layer (layer_sysctld.go,
// layer_modules.go, layer_limitsd.go, layer_systemd.go,
// layer_verifyunit.go) shares: each layer plans the bytes of its own
// files (fileWant, with the layer's name) and its items after the next
// boot; the files are then written atomically, journaled (original
// bytes, mode and owner, or the symbolic link), undone, rolled back and
// checked the same way for every layer, here. Nothing here knows what a
// file holds; a layer's own rule at rollback (keeping hostprep's
// sysctl.d file for a limits file left behind) lives in the layer's file.

// fileLayer is one file layer at apply time: its files in plan order
// (Plan.fileLayers), written atomically, and undone in reverse.
type fileLayer struct {
	name     string // the layer's (fileWant.layer)
	steps    []fileStep
	written  []fileStep
	madeDirs []string
}

// fileLayers are the plan's file steps as one layer per file layer, in
// the order the layers planned them.
func (pl *Plan) fileLayers() []*fileLayer {
	var out []*fileLayer
	by := map[string]*fileLayer{}
	for _, f := range pl.files {
		l := by[f.layer]
		if l == nil {
			l = &fileLayer{name: f.layer}
			by[f.layer] = l
			out = append(out, l)
		}
		l.steps = append(l.steps, f)
	}
	return out
}

func (l *fileLayer) record(st *journal.State) {
	for _, f := range l.steps {
		if f.retire != nil {
			continue // stays journaled until the apply is complete (dropRetired)
		}
		j := st.Files[f.path]
		if j == nil {
			j = &journal.File{Existed: f.existed, Original: f.from, Mode: uint32(f.perm), Owner: f.owner, Seq: st.NextSeq, Link: f.link}
			st.NextSeq++
			st.Files[f.path] = j
		}
		j.SetSHA256 = journal.SHA256(f.to)
		for _, d := range f.dirs {
			if !slices.Contains(st.Dirs, d) {
				st.Dirs = append(st.Dirs, d)
			}
		}
	}
}

func (l *fileLayer) apply(context.Context) error {
	for _, f := range l.steps {
		if f.retire != nil {
			if _, left, err := rollbackFile(f.path, f.retire); err != nil || left != nil {
				if err == nil {
					err = fmt.Errorf("%s", left.Reason)
				}
				return &stepError{what: fmt.Sprintf("tune apply: taking back %s", f.path), cause: err}
			}
			l.written = append(l.written, f)
			continue
		}
		made, err := files.MkdirAll(filepath.Dir(f.path))
		l.madeDirs = append(l.madeDirs, made...)
		if err == nil {
			err = files.WriteAtomic(f.path, f.to, f.perm)
		}
		if err != nil {
			return &stepError{what: fmt.Sprintf("tune apply: writing %s", f.path), cause: err}
		}
		l.written = append(l.written, f)
	}
	return nil
}

// dropRetired removes the files this apply took back from the journal;
// execute calls it once every change is made.
func (l *fileLayer) dropRetired(st *journal.State) {
	for _, f := range l.steps {
		if f.retire != nil {
			delete(st.Files, f.path)
		}
	}
}

func (l *fileLayer) undo() []string {
	var problems []string
	for i := len(l.written) - 1; i >= 0; i-- {
		f := l.written[i]
		var err error
		if f.link != "" && f.retire == nil {
			err = files.RestoreLink(f.path, f.link)
		} else if f.existed {
			uid, gid := f.owner.IDs()
			err = files.WriteAtomicOwned(f.path, f.from, f.perm, uid, gid)
		} else {
			err = files.Remove(f.path)
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", f.path, err))
		}
	}
	for i := len(l.madeDirs) - 1; i >= 0; i-- {
		os.Remove(l.madeDirs[i])
	}
	return problems
}

// file undoes one owned file (rollback); a file someone else changed is
// left. The one layer rule that can keep a file hostprep still owns is
// the sysctl.d layer's (keepForBootNofile, layer_sysctld.go): a file
// left behind (found by the limits.d layer's scanLeft and scanForeign)
// may need its fs.nr_open at boot.
func (r *rollbackRun) file(path string) {
	// hostprep's own temporary files, left by a killed apply, go too, so
	// the directories hostprep created can be removed.
	tmps, err := files.RemoveStaleTemps(path)
	for _, t := range tmps {
		r.res.Changes = append(r.res.Changes, Change{File: t, Layer: Persistent, From: "present", To: "absent", Reason: "temporary file of an interrupted hostprep write"})
	}
	if err != nil {
		r.failures = append(r.failures, fmt.Sprintf("%s: removing hostprep's temporary files: %v", path, err))
		return
	}
	if kept := r.keepForBootNofile(path); kept != nil {
		r.res.Kept = append(r.res.Kept, *kept)
		return
	}
	ch, left, err := rollbackFile(path, r.st.Files[path])
	if err != nil {
		err = fmt.Errorf("%s: %w", path, err)
	}
	if r.record(ch, left, err) {
		delete(r.remaining.Files, path)
	}
}

// rollbackFile restores an owned file byte for byte (or removes it)
// unless someone else changed it since hostprep wrote it.
func rollbackFile(path string, f *journal.File) (*Change, *Skip, error) {
	if f.Link != "" {
		return rollbackLink(path, f)
	}
	cur, exists, err := files.Read(path)
	if err != nil {
		return nil, nil, err
	}
	if exists == f.Existed && (!exists || string(cur) == string(f.Original)) {
		return nil, nil, nil // already original
	}
	if !exists || journal.SHA256(cur) != f.SetSHA256 {
		return nil, leftFile(path, f, cur, exists), nil
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

// rollbackLink puts back the symbolic link that was at path (f.Link)
// unless someone else changed the file since hostprep wrote it.
func rollbackLink(path string, f *journal.File) (*Change, *Skip, error) {
	if t, ok := files.Link(path); ok && t == f.Link {
		return nil, nil, nil // already original
	}
	cur, exists, err := files.Read(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, err
	}
	if _, isLink := files.Link(path); isLink || !exists || journal.SHA256(cur) != f.SetSHA256 {
		return nil, leftFile(path, f, cur, exists), nil
	}
	if err := files.RestoreLink(path, f.Link); err != nil {
		return nil, nil, err
	}
	return &Change{File: path, Layer: Persistent, From: describe(cur, true), To: "symlink to " + f.Link, Reason: "original symbolic link restored"}, nil, nil
}

// leftFile is the Skip for an owned file someone else changed after
// hostprep wrote it: it stays as it is, and when hostprep had replaced a
// file (or symbolic link) there, that original is saved next to it as
// PATH.hostprep-original (a name no loader reads: sysctl.d, limits.d and
// systemd read only *.conf) and the reason names it; dropping it with the
// journal would lose it for good.
func leftFile(path string, f *journal.File, cur []byte, exists bool) *Skip {
	sk := &Skip{File: path, Layer: Persistent, Current: describe(cur, exists), Reason: leftReason(path, cur, exists)}
	if !f.Existed && f.Link == "" {
		return sk
	}
	saved, err := saveOriginal(path, f)
	if err != nil {
		sk.Reason += fmt.Sprintf("; the file hostprep replaced there could not be saved (%v): it was %s", err, describe(f.Original, true))
		return sk
	}
	what := describe(f.Original, true)
	if f.Link != "" {
		what = "a symlink to " + f.Link
	}
	sk.Reason += fmt.Sprintf("; the file hostprep replaced there (%s) is saved as %s", what, saved)
	return sk
}

// saveOriginal writes f's original (bytes with their mode and owner, or
// the symbolic link) to PATH.hostprep-original, or .2, .3... when that
// name holds something else, and returns the name used.
func saveOriginal(path string, f *journal.File) (string, error) {
	for i := 1; ; i++ {
		name := path + ".hostprep-original"
		if i > 1 {
			name += fmt.Sprintf(".%d", i)
		}
		if t, ok := files.Link(name); ok {
			if t == f.Link {
				return name, nil // saved by an earlier rollback
			}
			continue
		}
		if _, err := os.Lstat(name); err == nil {
			if f.Link == "" && files.Same(name, f.Original) {
				return name, nil
			}
			continue
		}
		if f.Link != "" {
			return name, files.RestoreLink(name, f.Link)
		}
		uid, gid := f.Owner.IDs()
		return name, files.WriteAtomicOwned(name, f.Original, fs.FileMode(f.Mode).Perm(), uid, gid)
	}
}

// leftReason says why rollback leaves an owned file someone else changed,
// describing what is there now: removed, replaced by a symlink (to
// /dev/null: masked), or edited (with or without hostprep's header).
func leftReason(path string, cur []byte, exists bool) string {
	const tail = "; left in place and no longer tracked by hostprep: it is yours now, remove or keep it"
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		what := "replaced by a symlink to " + target
		if target == "/dev/null" {
			what += " (masked)"
		}
		return what + " after hostprep wrote it" + tail
	}
	if !exists {
		return "removed by someone else after hostprep wrote it; left absent and no longer tracked by hostprep"
	}
	if strings.Contains(string(cur), "# Written by hostprep") {
		return "changed by someone else after hostprep wrote it (its header still names hostprep)" + tail
	}
	return "replaced by someone else after hostprep wrote it (hostprep's header is gone)" + tail
}

// fileStatuses compares every owned file with the bytes hostprep wrote.
func fileStatuses(st *journal.State, pending string) []ItemStatus {
	var items []ItemStatus
	for _, p := range bySeq(st.Files, func(f *journal.File) int { return f.Seq }) {
		j := st.Files[p]
		it := ItemStatus{File: p, Layer: Persistent, Original: describe(j.Original, j.Existed), Set: "sha256:" + j.SetSHA256[:12]}
		cur, ok, err := files.Read(p)
		switch {
		case err != nil:
			it.Live, it.Drift = "unreadable", err.Error()
		case !ok && pending != "" && !j.Existed:
			it.Live, it.Drift = "absent", pending
		case !ok:
			it.Live, it.Drift = "absent", "removed since hostprep wrote it"
		default:
			it.Live = "sha256:" + journal.SHA256(cur)[:12]
			if journal.SHA256(cur) == j.SetSHA256 {
				it.OK = true
			} else if pending != "" && j.Existed && string(cur) == string(j.Original) {
				it.Drift = pending
			} else {
				it.Drift = "content changed since hostprep wrote it"
			}
		}
		items = append(items, it)
	}
	return items
}

// removeStaleTemps removes hostprep's own temporary files (see
// files.RemoveStaleTemps) that a killed apply left next to any file the
// journal owns or this plan writes; apply calls it under the lock.
func (pl *Plan) removeStaleTemps() ([]string, error) {
	paths := map[string]bool{pl.env.stateFile(): true} // the journal's own (journal.Save)
	for _, f := range pl.files {
		paths[f.path] = true
	}
	if st, err := pl.env.loadJournal(); err == nil && st != nil {
		for p := range st.Files {
			paths[p] = true
		}
	}
	list := make([]string, 0, len(paths))
	for p := range paths {
		list = append(list, p)
	}
	sort.Strings(list)
	var removed []string
	for _, p := range list {
		r, err := files.RemoveStaleTemps(p)
		removed = append(removed, r...)
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}
