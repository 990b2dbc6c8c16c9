package tune

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/sysval"
)

// runtimeLayer is the live kernel values under /proc/sys: planned by
// planSysctl (plan.go), applied here in plan order (fs.nr_open before
// fs.file-max before the rest), each write read back; rolled back by
// rollbackKey.
type runtimeLayer struct {
	pl   *Plan
	done []keyStep
}

func (l *runtimeLayer) record(st *journal.State) {
	for _, s := range l.pl.runtime {
		k := st.Keys[s.key]
		if k == nil {
			k = &journal.Key{Original: s.from, Seq: st.NextSeq}
			st.NextSeq++
			st.Keys[s.key] = k
		}
		k.Set, k.Mode, k.Want = s.to, s.mode, s.want
	}
}

func (l *runtimeLayer) apply(ctx context.Context) error {
	pl := l.pl
	for _, s := range pl.runtime {
		if err := ctx.Err(); err != nil {
			return &stepError{what: "tune apply interrupted", cause: err}
		}
		werr := pl.backend.Set(s.key, s.to)
		if werr == nil {
			if got, err := pl.backend.Get(s.key); err != nil {
				werr = err
			} else if !sysval.Equal(got, s.to) {
				werr = fmt.Errorf("the kernel accepted %q but reads back %q", s.to, got)
			}
			l.done = append(l.done, s) // undo even a write that read back wrong
		}
		if werr != nil {
			if errors.Is(werr, syscall.EROFS) {
				return &stepError{final: containerError(pl.env.procSys(), pl.runtime)}
			}
			return &stepError{what: fmt.Sprintf("tune apply: writing %s = %q", s.key, s.to), cause: kernelErr(werr)}
		}
	}
	return nil
}

func (l *runtimeLayer) undo() []string {
	var problems []string
	for i := len(l.done) - 1; i >= 0; i-- {
		s := l.done[i]
		if err := l.pl.backend.Set(s.key, s.from); err != nil {
			problems = append(problems, fmt.Sprintf("%s back to %q: %v", s.key, s.from, err))
		}
	}
	return problems
}
