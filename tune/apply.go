package tune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/journal"
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
	lk, err := env.lockFor("apply")
	if err != nil {
		return nil, err
	}
	defer lk.Release()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	pl, err := PlanFor(p, opts)
	if err != nil {
		return nil, err
	}
	removed, err := pl.removeStaleTemps()
	if err != nil {
		return nil, exitcode.Environmentf("tune apply: removing hostprep's temporary files: %w; nothing was changed", err)
	}
	res, err := pl.execute(ctx)
	for _, t := range removed {
		if res != nil {
			res.Warnings = append(res.Warnings, fmt.Sprintf("removed %s, hostprep's temporary file left by an interrupted write", t))
		}
	}
	return res, err
}

// layer is one kind of setting an apply changes. Apply journals every
// layer's originals before the first change, then applies the layers in
// order (runtime sysctls, each file layer's owned files, running
// processes); when one fails, the layers applied so far are undone in
// reverse. Each layer lives in its own file (layer_runtime.go,
// layer_sysctld.go, layer_modules.go, layer_limitsd.go,
// layer_verifyunit.go, layer_systemd.go, layer_process.go) with its
// rollback; the file layers write, undo and check their files through
// the owned-file mechanism (ownedfile.go).
type layer interface {
	// record puts the originals and the values about to be set into st.
	record(st *journal.State)
	// apply makes the layer's changes in plan order, remembering what it
	// did; a failure is a *stepError.
	apply(ctx context.Context) error
	// undo puts back what apply did, returning what could not be undone.
	undo() []string
}

// stepError is a failed change: what was being done and the kernel's or
// file system's error; final, when set, is returned as is after the undo
// (a read-only /proc/sys names the container fix instead).
type stepError struct {
	what  string
	cause error
	final error
}

func (e *stepError) Error() string { return fmt.Sprintf("%s: %v", e.what, e.cause) }

// execute carries out the plan; Apply calls it under the lock right after
// planning, so the host cannot change in between.
func (pl *Plan) execute(ctx context.Context) (*Result, error) {
	res := pl.Result
	if !pl.Changed {
		return &res, nil
	}
	if len(pl.runtime) > 0 && readOnly(pl.env.procSys()) {
		return nil, containerError(pl)
	}
	// A prlimit the kernel would refuse is refused now, before any change.
	if err := checkProcs(pl.procs); err != nil {
		return nil, err
	}
	fileLayers := pl.fileLayers()
	layers := []layer{&runtimeLayer{pl: pl}}
	for _, fl := range fileLayers {
		layers = append(layers, fl)
	}
	layers = append(layers, &processLayer{pl: pl, res: &res})
	j, err := pl.openJournal(layers)
	if err != nil {
		return nil, err
	}
	for i, l := range layers {
		if err := l.apply(ctx); err != nil {
			var problems []string
			for k := i; k >= 0; k-- { // files before keys: no limits file outlives its fs.nr_open
				problems = append(problems, layers[k].undo()...)
			}
			return nil, pl.fail(problems, j.restore(), err)
		}
	}
	// Completion marker: every change of this run is made.
	for _, fl := range fileLayers {
		fl.dropRetired(j.st)
	}
	j.st.Applies[len(j.st.Applies)-1].InProgress = false
	if err := journal.Save(j.path, j.st); err != nil {
		res.Warnings = append(res.Warnings, fmt.Sprintf("every change was made, but marking the apply complete in the journal %s failed (%v); `tune status` will call it interrupted until the next apply", j.path, err))
	}
	return &res, nil
}

// applyJournal is the journal of one apply: the state written before the
// first change, and how to put back the one that was there.
type applyJournal struct {
	path string
	prev *journal.State
	st   *journal.State
	dirs []string // directories created for the journal itself
}

// openJournal records every layer's originals and writes the journal,
// marked in progress, before any change.
func (pl *Plan) openJournal(layers []layer) (*applyJournal, error) {
	j := &applyJournal{path: pl.env.stateFile()}
	prev, err := pl.env.loadJournal()
	if err != nil {
		return nil, exitcode.Environmentf("tune apply: %w", err)
	}
	j.prev, j.st = prev, journal.New()
	if prev != nil {
		j.st = prev.Clone()
	}
	for _, l := range layers {
		l.record(j.st)
	}
	if j.dirs, err = missingDirs(filepath.Dir(j.path)); err != nil {
		return nil, exitcode.Environmentf("tune apply: journal %s: %w", j.path, err)
	}
	for _, d := range j.dirs {
		if !slices.Contains(j.st.Dirs, d) {
			j.st.Dirs = append(j.st.Dirs, d)
		}
	}
	j.st.Root = pl.env.Root
	j.st.RollbackStarted, j.st.RollbackIncomplete = nil, nil // this apply makes the host match the journal again
	j.st.Persisted = pl.persisted
	j.st.PersistName = filepath.Base(pl.env.sysctlConf())
	root := ""
	if pl.env.ImageMode() {
		root = pl.env.Root
	}
	j.st.Applies = append(j.st.Applies, journal.Apply{Profile: pl.Profile, Source: pl.env.profileRef, Sets: pl.env.profileSets, At: time.Now().UTC(), Root: root, InProgress: true})
	if err := journal.Save(j.path, j.st); err != nil {
		return nil, exitcode.Environmentf("tune apply: writing the journal %s: %w; nothing was changed", j.path, err)
	}
	return j, nil
}

// restore puts back the journal that was there before this apply.
func (j *applyJournal) restore() error {
	if j.prev == nil {
		err := journal.Remove(j.path)
		for i := len(j.dirs) - 1; i >= 0; i-- {
			os.Remove(j.dirs[i])
		}
		return err
	}
	return journal.Save(j.path, j.prev)
}

// fail builds the error of a failed apply after this run was undone.
func (pl *Plan) fail(problems []string, jerr error, err error) error {
	var se *stepError
	if !errors.As(err, &se) {
		se = &stepError{what: "tune apply", cause: err}
	}
	if se.final != nil {
		return se.final
	}
	msg := fmt.Sprintf("%s: %v; every change made in this run was undone, the host is as before", se.what, se.cause)
	if len(problems) > 0 || jerr != nil {
		msg = fmt.Sprintf("%s: %v; undoing this run also failed for %v (journal: %v): run %s", se.what, se.cause, problems, jerr, pl.env.suggest("rollback"))
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
