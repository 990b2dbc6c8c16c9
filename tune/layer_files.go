package tune

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

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
		j := st.Files[f.path]
		if j == nil {
			j = &journal.File{Existed: f.existed, Original: f.from, Mode: uint32(f.perm), Owner: f.owner, Seq: st.NextSeq}
			st.NextSeq++
			st.Files[f.path] = j
		}
		j.SetSHA256 = journal.SHA256(f.to)
		for _, d := range f.dirs {
			if !contains(st.Dirs, d) {
				st.Dirs = append(st.Dirs, d)
			}
		}
	}
}

func (l *fileLayer) apply(context.Context) error {
	for _, f := range l.pl.files {
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

func (l *fileLayer) undo() []string {
	var problems []string
	for i := len(l.written) - 1; i >= 0; i-- {
		f := l.written[i]
		var err error
		if f.existed {
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
