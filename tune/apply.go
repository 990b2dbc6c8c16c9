package tune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/lock"
	"github.com/hostprep/hostprep/tune/sysval"
)

// Apply makes the host match profile p: it checks privileges, takes the
// lock, computes the Plan and executes it in order (runtime sysctls
// fs.nr_open -> fs.file-max -> the rest, then the owned files, then
// --pid/--service prlimit), recording originals in the journal before the
// first write. A second Apply of the same profile writes nothing and
// returns Changed false.
//
// Errors: exitcode.BadInput when the profile does not fit the host (nothing
// touched); exitcode.Environment when not privileged, /proc/sys is
// read-only (container), the lock is held, or a write failed — then every
// change made in this run has been undone and the error names the key or
// file and the kernel's errno (EINVAL). A --pid/--service prlimit the
// kernel would refuse (raising a hard limit without CAP_SYS_RESOURCE) is
// refused before any change, naming the process's real ceiling; one that
// fails anyway undoes the whole run, processes already raised included.
// Raised processes are journaled (pid and start time), so Rollback puts
// their limit back while they run.
func Apply(ctx context.Context, p *profiles.Profile, opts Options) (*Result, error) {
	env := opts.Env
	if err := checkPrivileges(env, "apply"); err != nil {
		return nil, err
	}
	lk, err := lock.Acquire(env.lockFile(), env.lockWait())
	if err != nil {
		return nil, exitcode.Environmentf("tune apply: %v", err)
	}
	defer lk.Release()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pl, err := PlanFor(p, opts)
	if err != nil {
		return nil, err
	}
	return pl.execute(ctx)
}

// execute carries out the plan; Apply calls it under the lock right after
// planning, so the host cannot change in between.
func (pl *Plan) execute(ctx context.Context) (*Result, error) {
	res := pl.Result
	if !pl.Changed {
		return &res, nil
	}
	if len(pl.runtime) > 0 && readOnly(pl.env.procSys()) {
		return nil, containerError(pl.env.procSys(), pl.runtime)
	}
	// A prlimit the kernel would refuse is refused now, before any change.
	if err := checkProcs(pl.procs); err != nil {
		return nil, err
	}

	// Journal first: originals of everything this run touches.
	statePath := pl.env.stateFile()
	prev, err := pl.env.loadJournal()
	if err != nil {
		return nil, exitcode.Environmentf("tune apply: %v", err)
	}
	st := journal.New()
	if prev != nil {
		st = prev.Clone()
	}
	for _, s := range pl.runtime {
		k := st.Keys[s.key]
		if k == nil {
			k = &journal.Key{Original: s.from, Seq: st.NextSeq}
			st.NextSeq++
			st.Keys[s.key] = k
		}
		k.Set, k.Mode, k.Want = s.to, s.mode, s.want
	}
	for _, f := range pl.files {
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
	for _, s := range pl.procs {
		id := strconv.Itoa(s.pid)
		j := st.Processes[id]
		if j == nil || j.StartTime != s.startTime {
			j = &journal.Process{PID: s.pid, StartTime: s.startTime, Service: s.service,
				Original: journal.Limit{Soft: s.curSoft, Hard: s.curHard}, Seq: st.NextSeq}
			st.NextSeq++
			st.Processes[id] = j
		}
		j.Set = journal.Limit{Soft: s.wantSoft, Hard: s.wantHard}
	}
	journalDirs, err := missingDirs(filepath.Dir(statePath))
	if err != nil {
		return nil, exitcode.Environmentf("tune apply: journal %s: %v", statePath, err)
	}
	for _, d := range journalDirs {
		if !contains(st.Dirs, d) {
			st.Dirs = append(st.Dirs, d)
		}
	}
	if len(pl.runtime) > 0 || len(pl.files) > 0 || len(pl.procs) > 0 {
		st.Root = pl.env.Root
		st.Persisted = pl.persisted
		root := ""
		if pl.env.ImageMode() {
			root = pl.env.Root
		}
		st.Applies = append(st.Applies, journal.Apply{Profile: pl.Profile, At: time.Now().UTC(), Root: root, InProgress: true})
		if err := journal.Save(statePath, st); err != nil {
			return nil, exitcode.Environmentf("tune apply: writing the journal %s: %v; nothing was changed", statePath, err)
		}
	}
	restoreJournal := func() error {
		if prev == nil {
			err := journal.Remove(statePath)
			for i := len(journalDirs) - 1; i >= 0; i-- {
				os.Remove(journalDirs[i])
			}
			return err
		}
		return journal.Save(statePath, prev)
	}

	// Runtime, in plan order.
	var done []keyStep
	undo := func() []string {
		var problems []string
		for i := len(done) - 1; i >= 0; i-- {
			s := done[i]
			if err := pl.backend.Set(s.key, s.from); err != nil {
				problems = append(problems, fmt.Sprintf("%s back to %q: %v", s.key, s.from, err))
			}
		}
		return problems
	}
	for _, s := range pl.runtime {
		if err := ctx.Err(); err != nil {
			return nil, pl.fail(undo(), nil, restoreJournal, "tune apply interrupted", err)
		}
		werr := pl.backend.Set(s.key, s.to)
		if werr == nil {
			if got, err := pl.backend.Get(s.key); err != nil {
				werr = err
			} else if !sysval.Equal(got, s.to) {
				werr = fmt.Errorf("the kernel accepted %q but reads back %q", s.to, got)
			}
			done = append(done, s) // undo even a write that read back wrong
		}
		if werr != nil {
			if errors.Is(werr, syscall.EROFS) {
				pl.fail(undo(), nil, restoreJournal, "", nil)
				return nil, containerError(pl.env.procSys(), pl.runtime)
			}
			return nil, pl.fail(undo(), nil, restoreJournal,
				fmt.Sprintf("tune apply: writing %s = %q", s.key, s.to), kernelErr(werr))
		}
	}

	// Persistent files, in plan order.
	var written []fileStep
	var madeDirs []string
	undoFiles := func() []string {
		var problems []string
		for i := len(written) - 1; i >= 0; i-- {
			f := written[i]
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
		for i := len(madeDirs) - 1; i >= 0; i-- {
			os.Remove(madeDirs[i])
		}
		return problems
	}
	for _, f := range pl.files {
		made, err := files.MkdirAll(filepath.Dir(f.path))
		madeDirs = append(madeDirs, made...)
		if err == nil {
			err = files.WriteAtomic(f.path, f.to, f.perm)
		}
		if err != nil {
			// Files first, so no limits file outlives the fs.nr_open it needs.
			fileProblems := undoFiles()
			return nil, pl.fail(undo(), fileProblems, restoreJournal,
				fmt.Sprintf("tune apply: writing %s", f.path), err)
		}
		written = append(written, f)
	}

	// Running processes (journaled above): a refusal undoes the whole run,
	// processes already raised included.
	var raised []procStep
	for _, s := range pl.procs {
		r := raise(s)
		if r.Error != "" {
			var problems []string
			for i := len(raised) - 1; i >= 0; i-- {
				p := raised[i]
				if err := unix.Prlimit(p.pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: p.curSoft, Max: p.curHard}, nil); err != nil {
					problems = append(problems, fmt.Sprintf("pid %d back to %s: %v", p.pid, fmtLimit(p.curSoft, p.curHard), err))
				}
			}
			problems = append(problems, undoFiles()...)
			return nil, pl.fail(undo(), problems, restoreJournal, "tune apply: raising RLIMIT_NOFILE", errors.New(r.Error))
		}
		raised = append(raised, s)
		res.Processes = append(res.Processes, r)
	}

	// Completion marker: every change of this run is made.
	if len(pl.runtime) > 0 || len(pl.files) > 0 || len(pl.procs) > 0 {
		st.Applies[len(st.Applies)-1].InProgress = false
		if err := journal.Save(statePath, st); err != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("every change was made, but marking the apply complete in the journal %s failed (%v); `tune status` will call it interrupted until the next apply", statePath, err))
		}
	}
	return &res, nil
}

// fail builds the error of a failed apply after undoing this run.
func (pl *Plan) fail(keyProblems, fileProblems []string, restoreJournal func() error, what string, cause error) error {
	problems := append(keyProblems, fileProblems...)
	jerr := restoreJournal()
	if what == "" {
		return nil
	}
	msg := fmt.Sprintf("%s: %v; every change made in this run was undone, the host is as before", what, cause)
	if len(problems) > 0 || jerr != nil {
		msg = fmt.Sprintf("%s: %v; undoing this run also failed for %v (journal: %v): run `hostprep tune rollback`", what, cause, problems, jerr)
	}
	return exitcode.Environmentf("%s", msg)
}

// kernelErr names the errno of a refused /proc/sys write: "invalid
// argument (EINVAL)".
func kernelErr(err error) error {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return fmt.Errorf("the kernel refused it: %v (%s)", errno, errnoName(errno))
	}
	return err
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
