package tune

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
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

// key undoes one runtime key (rollback), keeping fs.nr_open and
// fs.file-max where a left-behind file needs them.
func (r *rollbackRun) key(key string) {
	if r.backendErr != nil {
		r.failures = append(r.failures, fmt.Sprintf("%s: %v", key, r.backendErr))
		return
	}
	k := r.st.Keys[key]
	if kept := keepForNofile(r.b, key, k, r.need, r.needFile); kept != nil {
		r.res.Kept = append(r.res.Kept, *kept)
		return
	}
	ch, left, err := rollbackKey(r.b, key, k)
	switch {
	case err != nil:
		r.failures = append(r.failures, fmt.Sprintf("%s back to %q: %v", key, k.Original, err))
		return
	case left != nil:
		r.res.Left = append(r.res.Left, *left)
	case ch != nil:
		r.res.Changes = append(r.res.Changes, *ch)
	}
	delete(r.remaining.Keys, key)
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

// rollbackKey puts key back to its original unless someone else changed
// it since hostprep set it.
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
