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

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// fileLayer is the owned files (sysctl.d, modules-load.d, limits.d,
// systemd manager and unit drop-ins): planned by planFiles (plan.go),
// written here atomically in plan order, rolled back by rollbackFile.
type fileLayer struct {
	pl       *Plan
	written  []fileStep
	madeDirs []string
}

func (l *fileLayer) record(st *journal.State) {
	for _, f := range l.pl.files {
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
	for _, f := range l.pl.files {
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
	for _, f := range l.pl.files {
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
// left, and its hard nofile remembered so fs.nr_open is not lowered
// below it.
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

// scanLeft finds, before anything is undone, the owned files rollback
// will leave (changed by someone else since hostprep wrote them) and the
// hard nofile each sets, so that r.need is known whatever order the files
// are undone in: a limits file written before hostprep's sysctl.d file is
// undone after it.
func (r *rollbackRun) scanLeft() {
	for path, j := range r.st.Files {
		cur, exists, err := files.Read(path)
		if err != nil || !exists || journal.SHA256(cur) == j.SetSHA256 || (j.Existed && string(cur) == string(j.Original)) {
			continue
		}
		if n, ok := files.HardNofile(cur); ok {
			r.keepFiles[path] = n
			if n > r.need || (n == r.need && path < r.needFile) {
				r.need, r.needFile, r.needWhy = n, path, "left behind, edited after hostprep wrote it"
			}
		}
	}
}

// scanForeign adds the limits files hostprep does not own
// (/etc/security/limits.conf and limits.d/*.conf, as pam_limits reads
// them) to what rollback must not lower fs.nr_open below: one written
// after apply, relying on hostprep's fs.nr_open, would make every login
// fail to set its hard nofile once rollback lowered fs.nr_open below it
// (pam_limits' setrlimit gets EPERM and the session fails).
func (r *rollbackRun) scanForeign() {
	for _, f := range hostconf.LimitsFiles(r.env.bootRoot()) {
		p := r.env.path(f.Path)
		if _, owned := r.st.Files[p]; owned || f.Masked {
			continue
		}
		cur, exists, err := files.Read(r.env.path(f.Target))
		if err != nil || !exists {
			continue
		}
		if n, ok := files.HardNofile(cur); ok && (n > r.need || (n == r.need && p < r.needFile)) {
			r.need, r.needFile, r.needWhy = n, p, "not hostprep's"
		}
	}
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
