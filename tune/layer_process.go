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

// process undoes one journaled process (rollback).
func (r *rollbackRun) process(id string) {
	p := r.st.Processes[id]
	ch, left, note, err := rollbackProcess(p)
	switch {
	case err != nil:
		r.failures = append(r.failures, fmt.Sprintf("pid %d: %v", p.PID, err))
		return
	case left != nil:
		r.res.Left = append(r.res.Left, *left)
	case ch != nil:
		r.res.Changes = append(r.res.Changes, *ch)
	case note != "":
		r.res.Notes = append(r.res.Notes, note)
	}
	delete(r.remaining.Processes, id)
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

// processStatuses compares every raised process's RLIMIT_NOFILE with what
// hostprep set, while it is the same process.
func processStatuses(st *journal.State, pending string) []ItemStatus {
	var items []ItemStatus
	for _, id := range bySeq(st.Processes, func(p *journal.Process) int { return p.Seq }) {
		j := st.Processes[id]
		it := ItemStatus{PID: j.PID, Layer: Process, Original: fmtLimit(j.Original.Soft, j.Original.Hard), Set: fmtLimit(j.Set.Soft, j.Set.Hard)}
		var cur unix.Rlimit
		if stt, err := procStartTime(j.PID); err != nil || stt != j.StartTime {
			it.Live, it.OK = "exited", true // nothing left to check or restore
		} else if err := unix.Prlimit(j.PID, unix.RLIMIT_NOFILE, nil, &cur); err != nil {
			it.Live, it.Drift = "unreadable", err.Error()
		} else {
			it.Live = fmtLimit(cur.Cur, cur.Max)
			switch {
			case cur.Cur >= j.Set.Soft && cur.Max >= j.Set.Hard:
				it.OK = true
			case pending != "" && cur.Cur == j.Original.Soft && cur.Max == j.Original.Hard:
				it.Drift = pending
			default:
				it.Drift = fmt.Sprintf("RLIMIT_NOFILE %s is below the %s hostprep set", it.Live, it.Set)
			}
		}
		items = append(items, it)
	}
	return items
}
