package tune

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/tune/journal"
)

// processLayer is the RLIMIT_NOFILE of running processes (--pid,
// --service): planned by planProcs (process.go), raised here with
// prlimit, rolled back by rollbackProcess. Processes are journaled with
// their start time, so a reused pid is never touched.
type processLayer struct {
	pl     *Plan
	res    *Result
	raised []procStep
}

func (l *processLayer) record(st *journal.State) {
	for _, s := range l.pl.procs {
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
}

// apply raises each process; a refusal fails the whole run, processes
// already raised included.
func (l *processLayer) apply(context.Context) error {
	for _, s := range l.pl.procs {
		r := raise(s)
		if r.Error != "" {
			return &stepError{what: "tune apply: raising RLIMIT_NOFILE", cause: errors.New(r.Error)}
		}
		l.raised = append(l.raised, s)
		l.res.Processes = append(l.res.Processes, r)
	}
	return nil
}

func (l *processLayer) undo() []string {
	var problems []string
	for i := len(l.raised) - 1; i >= 0; i-- {
		p := l.raised[i]
		if err := unix.Prlimit(p.pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: p.curSoft, Max: p.curHard}, nil); err != nil {
			problems = append(problems, fmt.Sprintf("pid %d back to %s: %v", p.pid, fmtLimit(p.curSoft, p.curHard), err))
		}
	}
	l.res.Processes = nil
	return problems
}
