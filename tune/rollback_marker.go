package tune

import (
	"fmt"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// A rollback, like an apply, marks itself in the journal before its first
// change (journal.State.RollbackStarted), so that one killed part way is
// told apart from drift: `tune status` and `tune verify` say "rollback
// interrupted" and fail until rollback is run again. Temporary files a
// kill left next to the journal (journal.Save writes it atomically) are
// removed under the lock by the next apply or rollback.

// startRollback removes the journal's stale temporary files and writes the
// journal marked as being rolled back; Rollback calls it under the lock
// before the first undo. Errors: exitcode.Environment (nothing changed).
func startRollback(env Env, st *journal.State) error {
	if _, err := files.RemoveStaleTemps(env.stateFile()); err != nil {
		return exitcode.Environmentf("tune rollback: removing hostprep's temporary files next to the journal %s: %w; nothing was changed", env.stateFile(), err)
	}
	now := time.Now().UTC()
	st.RollbackStarted = &now
	if err := journal.Save(env.stateFile(), st); err != nil {
		return exitcode.Environmentf("tune rollback: writing the journal %s: %w; nothing was changed", env.stateFile(), err)
	}
	return nil
}

// rollbackInterrupted is the Status.Interrupted text for a journal whose
// rollback never finished, "" when none did.
func rollbackInterrupted(env Env, st *journal.State) string {
	if st.RollbackStarted == nil {
		return ""
	}
	return fmt.Sprintf("rollback interrupted at %s (killed part way): run %s again", st.RollbackStarted.Format("2006-01-02 15:04:05Z"), env.suggest("rollback"))
}

// rollbackIncomplete is the Status.Interrupted text for a journal kept
// by a rollback that ran to its end but could not restore every item
// (journal.State.RollbackIncomplete), "" when none did.
func rollbackIncomplete(env Env, st *journal.State) string {
	if st.RollbackIncomplete == nil {
		return ""
	}
	return fmt.Sprintf("rollback at %s could not restore every item: the journal keeps only those it could not (below); fix the cause and run %s again", st.RollbackIncomplete.Format("2006-01-02 15:04:05Z"), env.suggest("rollback"))
}

// Err is the error status exits with: exitcode.Failed (exit 1) when a
// rollback was interrupted or incomplete (the host is half restored),
// else nil. An interrupted apply is shown, but only verify fails on it.
func (s *Status) Err() error {
	if s.RollbackInterrupted || s.RollbackIncomplete {
		return exitcode.Failedf("tune status: %s", s.Interrupted)
	}
	return nil
}
