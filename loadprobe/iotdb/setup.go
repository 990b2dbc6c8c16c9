package iotdb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/apache/iotdb-client-go/client"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
)

// TSStatus codes of a refused login (IoTDB's TSStatusCode
// WRONG_LOGIN_PASSWORD and NOT_LOGIN).
const (
	statusWrongLogin = 801
	statusNotLogin   = 802
	// DATABASE_ALREADY_EXISTS, DATABASE_NOT_EXIST and PATH_NOT_EXIST
	// (IoTDB 2.0.10).
	statusDatabaseExists   = 501
	statusDatabaseNotExist = 500
	statusPathNotExist     = 508
)

// seriesChunk is how many time series one create or delete call names.
const seriesChunk = 1000

// AdminCallTimeout is the shortest deadline of a setup or clean-up call
// (server version, SHOW DATABASES, CREATE DATABASE, creating and deleting
// the time series, seeding, DELETE DATABASE) and of its wait for a
// session. These calls are not load operations: they run under
// max(--call-timeout, AdminCallTimeout), so a --call-timeout chosen for
// the load (300ms, or 3ms) neither fails the setup nor leaves the probe's
// database on the server.
const AdminCallTimeout = 30 * time.Second

// admin runs one setup/clean-up call on a pooled session under the pool's
// admin deadline (p.adminTimeout: max(--call-timeout, AdminCallTimeout)),
// for both the wait for a session and the call. ctx's end cuts the call.
func admin(ctx context.Context, p *sessionPool, op func(s *session) error) error {
	s, err := p.getWithin(ctx, "", p.adminTimeout)
	if err != nil {
		return err
	}
	_, err = p.callWithin(ctx, s, p.adminTimeout, func(s *session) (int64, error) {
		stop := context.AfterFunc(ctx, s.w.interrupt)
		defer stop()
		return 0, op(s)
	})
	return err
}

// mayHaveRun tells whether a call that failed with err may have been
// carried out by the server: it was sent, and no answer came (deadline,
// lost connection, cancelled). An answer (a status) or a failure to get a
// session (nothing was sent) says it was not.
func mayHaveRun(err error) bool {
	var (
		ee *client.ExecutionError
		we *waitTimeoutError
		ce *connectError
	)
	return err != nil && !errors.As(err, &ee) && !errors.Is(err, errNoStatus) && !errors.As(err, &we) && !errors.As(err, &ce)
}

// setup reads the server version, makes the place the devices go (a new
// database root.hostprep_<id>, or the prefix <database>.hostprep_<id>
// under the existing cfg.Database) and creates the series. Failures are
// Environment errors naming the step, with the status code explained.
func setup(ctx context.Context, p *sessionPool, cfg *Config, w *workload, res *Result) error {
	v, err := serverVersion(ctx, p)
	if err != nil {
		class, code := classify(err)
		if class == ClassStatus && (code == statusWrongLogin || code == statusNotLogin) {
			return exitcode.Environmentf("iotdb probe: %s refused the login of user %q (status %d): check %s", res.Target, cfg.User, code, loginFix(cfg))
		}
		if class == ClassConnect || class == ClassWaitTimeout || class == ClassDeadline || class == ClassPanic {
			return exitcode.Environmentf("iotdb probe: cannot open a session to %s: %v (%s)", res.Target, err, openHint(err, cfg))
		}
		res.Notes = append(res.Notes, "server version not read: "+err.Error())
	} else if v == "" {
		res.Notes = append(res.Notes, "server version not read: show version returned no row")
	}
	res.ServerVersion = v

	if cfg.Database == "" {
		if err := createDatabase(ctx, p, cfg, w, res, v); err != nil {
			return err
		}
	} else if err := databaseExists(ctx, p, cfg.Database, cfg.User); err != nil {
		return exitcode.Environmentf("iotdb probe: %s %s on %s: %v%s", cfg.name("database"), cfg.Database, res.Target, err, cfg.explain(err, v))
	}
	paths := w.seriesPaths()
	for i := 0; i < len(paths); i += seriesChunk {
		chunk := paths[i:min(i+seriesChunk, len(paths))]
		if err := admin(ctx, p, func(s *session) error { return s.createSeries(chunk) }); err != nil {
			res.Series = i
			made := i
			if mayHaveRun(err) {
				made += len(chunk) // the server may have created them: delete what may exist
			}
			left := dropProbeData(cfg.cleanupStop(), p, w, res, paths[:made])
			return exitcode.Environmentf("iotdb probe: creating %d time series under %s failed: %v%s%s", len(paths), w.prefix, err, cfg.explain(err, v), left)
		}
	}
	res.Series = len(paths)
	if w.scenario == ScenarioMixed {
		if err := seed(ctx, p, w); err != nil {
			left := dropProbeData(cfg.cleanupStop(), p, w, res, paths)
			return exitcode.Environmentf("iotdb probe: seeding %s for reads failed: %v%s%s", w.prefix, err, cfg.explain(err, v), left)
		}
	}
	return nil
}

// createDatabase makes the run's own database w.prefix (CREATE DATABASE),
// shared by the shards of a fleet run. It looks first, so that a CREATE
// whose answer is lost deletes only a database it may have made, never
// one an earlier run kept under the same run id. Errors are Environment
// errors naming the database and what was left; v is the server version
// for the status explanations.
func createDatabase(ctx context.Context, p *sessionPool, cfg *Config, w *workload, res *Result, v string) error {
	exists := func() error {
		return exitcode.Environmentf("iotdb probe: database %s already exists on %s (an earlier run with run id %q kept it): delete it (DELETE DATABASE %s) or choose another run id; nothing was changed",
			w.prefix, res.Target, cfg.RunID, w.prefix)
	}
	// Whether it is there before the CREATE: a CREATE whose answer
	// is lost may only delete a database it may have made, never one
	// an earlier run kept (--keep, and the same --run-id).
	absent := false
	if !cfg.Shard.On() {
		found, err := listed(ctx, p, w.prefix)
		if err == nil && found {
			return exists()
		}
		absent = err == nil
	}
	err := admin(ctx, p, func(s *session) error { return s.exec("CREATE DATABASE " + w.prefix) })
	if cfg.Shard.On() && statusCode(err) == statusDatabaseExists {
		err = nil // another shard of the fleet run created it
	}
	if statusCode(err) == statusDatabaseExists {
		return exists()
	}
	if mayHaveRun(err) && !absent && !cfg.Shard.On() {
		return exitcode.Environmentf("iotdb probe: CREATE DATABASE %s on %s got no answer: %v; whether it existed before is not known, so it was left: check with SHOW DATABASES %s and delete it (DELETE DATABASE %s) if this run made it",
			w.prefix, res.Target, err, w.prefix, w.prefix)
	}
	if mayHaveRun(err) {
		// The server may have created it: delete what may exist.
		res.CreatedDatabase, w.shared = !cfg.Shard.On(), cfg.Shard.On()
		left := dropProbeData(cfg.cleanupStop(), p, w, res, nil)
		if left == "" {
			left = "; the probe deleted " + w.prefix + " in case the server had created it"
		}
		return exitcode.Environmentf("iotdb probe: CREATE DATABASE %s on %s got no answer: %v%s", w.prefix, res.Target, err, left)
	}
	if err != nil {
		return exitcode.Environmentf("iotdb probe: CREATE DATABASE %s on %s failed: %v%s", w.prefix, res.Target, err, cfg.explainOr(err, v,
			" (check the user may create databases, or use "+cfg.name("database")+" with an existing one)"))
	}
	res.CreatedDatabase = !cfg.Shard.On()
	w.shared = cfg.Shard.On()
	return nil
}

// openHint is what to check when no session could be opened with err: a
// connection that was made but whose OpenSession handshake did not answer
// points at the port's service, the DataNode's load and the connect
// timeout (which bounds the handshake); anything else at whether IoTDB
// runs there. Settings are named by cfg.name.
func openHint(err error, cfg *Config) string {
	var oe *openError
	if errors.As(err, &oe) && oe.connected && isTimeout(oe.err) {
		ct := cfg.name("connect_timeout")
		return fmt.Sprintf("something accepted the connection but did not answer the handshake within %s %v: is %s a DataNode's client RPC address, port 6667 by default, and is the DataNode overloaded? a longer %s gives it more time", ct, cfg.ConnectTimeout, cfg.name("address"), ct)
	}
	return fmt.Sprintf("is IoTDB running there, and is %s a DataNode's client RPC address, port 6667 by default?", cfg.name("address"))
}

// explainOr is explain's line, or otherwise when the status is unknown.
func (c *Config) explainOr(err error, serverVersion, otherwise string) string {
	if e := c.explain(err, serverVersion); e != "" {
		return e
	}
	return otherwise
}

// loginFix is what to check when the server refuses the login, naming
// the caller's user and password settings (Config.name): "--user and the
// password (--password-file or $HOSTPREP_IOTDB_PASSWORD)" for `hostprep
// probe iotdb`.
func loginFix(cfg *Config) string {
	return fmt.Sprintf("%s and the password (%s)", cfg.name("user"), cfg.name("password"))
}

// listed tells whether SHOW DATABASES db lists db (for this user: IoTDB
// hides what a user may not read). Errors: the query's.
func listed(ctx context.Context, p *sessionPool, db string) (bool, error) {
	found := false
	err := queryRows(ctx, p, "SHOW DATABASES "+db, func(ds *client.SessionDataSet) error {
		name, err := ds.GetString("Database")
		found = found || name == db
		return err
	})
	return found, err
}

// databaseExists checks that db is a database on the server; without the
// check, IoTDB's schema auto-creation would quietly create one. IoTDB
// hides from SHOW DATABASES what user may not read, so an empty answer is
// told apart (notVisible): the database does not exist, or the user has
// no privilege to see it.
func databaseExists(ctx context.Context, p *sessionPool, db, user string) error {
	found, err := listed(ctx, p, db)
	if err != nil {
		return err
	}
	if !found {
		return notVisible(ctx, p, db, user)
	}
	return nil
}

// notVisible is the error for a database SHOW DATABASES did not list:
// for root (who sees every database) it does not exist; for a user with
// no privileges at all (LIST PRIVILEGES OF USER is empty) it is hidden
// whether or not it exists; otherwise it is one or the other.
func notVisible(ctx context.Context, p *sessionPool, db, user string) error {
	if user == Defaults.User {
		return fmt.Errorf("database %s does not exist (SHOW DATABASES %s returned nothing): create it (CREATE DATABASE %s), or leave the database out to let the probe create its own", db, db, db)
	}
	grant := fmt.Sprintf("GRANT READ_SCHEMA, WRITE_SCHEMA, WRITE_DATA ON %s.** TO USER %s", db, user)
	n, err := privilegeRows(ctx, p, user)
	if err == nil && n == 0 {
		return fmt.Errorf("user %q has no privileges (LIST PRIVILEGES OF USER %s is empty) and IoTDB hides from SHOW DATABASES what a user may not read, so %s cannot be seen whether or not it exists: %s, or run as a user that has them", user, user, db, grant)
	}
	return fmt.Errorf("user %q cannot see database %s (SHOW DATABASES %s returned nothing): it does not exist (CREATE DATABASE %s), or the user lacks privileges on it (%s)", user, db, db, db, grant)
}

// privilegeRows counts the rows of LIST PRIVILEGES OF USER user.
func privilegeRows(ctx context.Context, p *sessionPool, user string) (int, error) {
	n := 0
	err := queryRows(ctx, p, "LIST PRIVILEGES OF USER "+user, func(*client.SessionDataSet) error { n++; return nil })
	return n, err
}

// queryRows runs the admin query sql and calls row for each row it
// returns, stopping at the first error.
func queryRows(ctx context.Context, p *sessionPool, sql string, row func(*client.SessionDataSet) error) error {
	return admin(ctx, p, func(s *session) error {
		ds, err := s.query(sql)
		if err != nil {
			return err
		}
		defer closeData(s, ds)
		for {
			ok, err := ds.Next()
			if err != nil || !ok {
				return err
			}
			if err := row(ds); err != nil {
				return err
			}
		}
	})
}

// closeData closes ds, the result set of an admin query on s. A close
// that failed (CloseOperation without an answer) leaves s's stream
// mid-frame: s is marked stale, to be closed rather than put back, where
// the next call would read the stale answer ("wrong method name"). The
// rows read stand.
func closeData(s *session, ds *client.SessionDataSet) {
	if err := ds.Close(); err != nil {
		s.stale = true
	}
}

// seed writes one mixed write per device, so that reads have rows.
func seed(ctx context.Context, p *sessionPool, w *workload) error {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, d := range w.own {
		req := w.tabletReq(w.device(d), mixedWrite)
		putColumns(rng, req.Values, req.Timestamps, mixedWrite, w.ts(mixedWrite))
		if err := admin(ctx, p, func(s *session) error { return s.insertTablet(&req) }); err != nil {
			return fmt.Errorf("%s: %w", w.device(d), err)
		}
	}
	return nil
}

// serverVersion answers `show version`.
func serverVersion(ctx context.Context, p *sessionPool) (string, error) {
	var v string
	err := admin(ctx, p, func(s *session) error {
		ds, err := s.query("show version")
		if err != nil {
			return err
		}
		defer closeData(s, ds)
		ok, err := ds.Next()
		if err != nil || !ok {
			return err
		}
		v, err = ds.GetString("Version")
		return err
	})
	return v, err
}

// teardown deletes what the probe created (unless cfg.Keep): its database,
// or, under an existing --database, only its own time series. It runs
// when ctx (the run's) has ended too: an interrupt after the last step
// does not stop the clean-up, whose waits on the server are logged (info)
// with how long they may take; cfg.StopCleanup ending (a second
// interrupt) stops them, and what was to be deleted is reported as
// possibly left (Result.CleanupStopped).
func teardown(ctx context.Context, p *sessionPool, cfg *Config, w *workload, res *Result) {
	if cfg.Keep {
		res.Kept = true
		res.Notes = append(res.Notes, cfg.name("keep")+": "+w.prefix+" left in place; delete it with: "+deleteStatement(w, res))
		return
	}
	// Said when the interrupt comes, before the clean-up or during it.
	stmt := deleteStatement(w, res)
	stopLog := context.AfterFunc(ctx, func() {
		slog.Info("iotdb probe: interrupted; the clean-up goes on (interrupt again to stop waiting for the server; "+w.prefix+" may then be left)", "delete", stmt)
	})
	defer stopLog()
	dropProbeData(cfg.cleanupStop(), p, w, res, w.seriesPaths())
}

// deleteStatement is the statement that removes what the probe created.
func deleteStatement(w *workload, res *Result) string {
	if res.CreatedDatabase || w.shared {
		return "DELETE DATABASE " + w.prefix
	}
	return "DELETE TIMESERIES " + w.prefix + ".**"
}

// dropProbeData deletes the probe's database (when it created it) or the
// time series at paths (under an existing database); it runs even when the
// run's context is cancelled, each call under the admin deadline
// (AdminCallTimeout). What is already gone (DATABASE_NOT_EXIST,
// PATH_NOT_EXIST: a create whose answer was lost and that did not happen)
// counts as deleted, and so does a delete whose answer was lost
// (mayHaveRun) when a re-check on a new session finds nothing left
// (recheck; it is deleted again once if it is still there, and a re-check
// that gets no answer either leaves the warning, saying so). A failure is
// recorded in res (LeftBehind, DeleteError, a note; Run adds the warning check
// CheckCleanup) and returned as
// "; <what> was left on <target> (...): delete it with: <statement>" for
// an error message ("" when deleted). Each wait on the server is logged
// (info) with its bound; stop ending (a second interrupt) ends the wait,
// and what was to be deleted is then reported as possibly left
// (Result.CleanupStopped, DeleteUnknown).
func dropProbeData(stop context.Context, p *sessionPool, w *workload, res *Result, paths []string) string {
	del := func() error {
		var err error
		if res.CreatedDatabase {
			err = admin(stop, p, func(s *session) error { return s.exec("DELETE DATABASE " + w.prefix) })
		} else {
			for i := 0; i < len(paths) && (err == nil || gone(err)); i += seriesChunk {
				chunk := paths[i:min(i+seriesChunk, len(paths))]
				err = admin(stop, p, func(s *session) error { return s.deleteSeries(chunk) })
			}
		}
		if gone(err) {
			return nil
		}
		return err
	}
	slog.Info("iotdb probe: clean-up: deleting "+w.prefix+", waiting for the server's answer", "at_most", p.adminTimeout)
	err := del()
	// A server that hangs for a while (GC, an interrupt mid-stall) may
	// not open a session within --connect-timeout: the clean-up keeps
	// trying for the admin deadline, as its calls have. One that refuses
	// the connection is gone: no retry.
	if connectTimedOut(err) && stop.Err() == nil {
		slog.Info("iotdb probe: clean-up: no session opened; trying again", "at_most", p.adminTimeout, "error", err)
	}
	for deadline := time.Now().Add(p.adminTimeout); connectTimedOut(err) && time.Now().Before(deadline) && sleepCtx(stop, cleanupRetry); {
		err = del()
	}
	switch {
	case stop.Err() != nil && err != nil:
		res.CleanupStopped, res.DeleteUnknown = true, true
		err = fmt.Errorf("the clean-up was stopped (a second interrupt) while it waited for the server: %w", err)
	case mayHaveRun(err):
		// The answer was lost (connection dropped, deadline): the delete
		// may have been carried out. Ask on a fresh session; delete again
		// once if it was not.
		slog.Info("iotdb probe: clean-up: the delete's answer was lost; asking whether "+w.prefix+" is still there", "at_most", p.adminTimeout, "error", err)
		switch found, rerr := recheck(stop, p, w, res); {
		case rerr != nil:
			res.DeleteUnknown = true
			err = fmt.Errorf("%w; whether the delete ran is not known: the re-check got no answer either (%v)", err, rerr)
			if stop.Err() != nil {
				res.CleanupStopped = true
				err = fmt.Errorf("the clean-up was stopped (a second interrupt) while it waited for the server: %w", err)
			}
		case !found:
			res.Notes = append(res.Notes, fmt.Sprintf("the answer to the delete of %s was lost (%v), but it is gone", w.prefix, err))
			err = nil
		default:
			err = del()
		}
	}
	if err == nil && w.shared {
		err = dropIfEmpty(stop, p, w.prefix)
	}
	if err == nil {
		return ""
	}
	res.LeftBehind = true
	res.DeleteError = err.Error()
	what := "could not delete " + w.prefix
	if res.DeleteUnknown {
		what = w.prefix + " " + res.leftWords()
	}
	res.Notes = append(res.Notes, fmt.Sprintf("%s: %v%s; delete it with: %s", what, err,
		w.cfg.explain(err, res.ServerVersion), deleteStatement(w, res)))
	return fmt.Sprintf("; %s %s on %s (delete failed: %v): delete it with: %s", w.prefix, res.leftWords(), res.Target, err, deleteStatement(w, res))
}

// leftWords says what became of the probe's data after a failed
// clean-up: "was left", or "may have been left" when the delete's
// answer was lost and the re-check got none either (DeleteUnknown: the
// delete may well have run).
func (res *Result) leftWords() string {
	if res.DeleteUnknown {
		return "may have been left"
	}
	return "was left"
}

// cleanupRetry is the pause between the clean-up's attempts to open a
// session.
const cleanupRetry = 500 * time.Millisecond

// connectTimedOut tells a failure to get a session (nothing was sent)
// where the TCP connection was made but OpenSession did not answer in
// time: a server that hangs, not one that is gone (a refused or
// unroutable connect).
func connectTimedOut(err error) bool {
	var ce *connectError
	var oe *openError
	return errors.As(err, &ce) && errors.As(err, &oe) && oe.connected && isTimeout(oe.err)
}

// recheck asks the server, after a delete whose answer was lost,
// whether what the probe deletes is still there (stillThere). It runs on
// new sessions: the idle ones may have died with the connection that
// lost the answer (a proxy that reset them all), and the first re-check
// took one of them and failed as well. A re-check that gets no answer
// either (a dropped connection, a deadline, a session that does not open
// in time) is tried again every cleanupRetry within the admin deadline
// (AdminCallTimeout); its last error is returned when it never got one.
func recheck(stop context.Context, p *sessionPool, w *workload, res *Result) (bool, error) {
	p.dropIdle()
	until := time.Now().Add(p.adminTimeout)
	for {
		found, err := stillThere(stop, p, w, res)
		if err == nil || !mayHaveRun(err) && !connectTimedOut(err) || !time.Now().Add(cleanupRetry).Before(until) || !sleepCtx(stop, cleanupRetry) {
			return found, err
		}
	}
}

// sleepCtx sleeps d unless ctx ends first; it reports whether it slept
// the whole d.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// stillThere asks the server whether what the probe deletes is still
// there: its database (when it created it) or a time series under its
// prefix.
func stillThere(ctx context.Context, p *sessionPool, w *workload, res *Result) (bool, error) {
	if res.CreatedDatabase {
		return listed(ctx, p, w.prefix)
	}
	return hasSeries(ctx, p, w.prefix)
}

// hasSeries says whether any time series lies under prefix (a prefix or
// database that does not exist has none).
func hasSeries(ctx context.Context, p *sessionPool, prefix string) (bool, error) {
	found := false
	err := queryRows(ctx, p, "SHOW TIMESERIES "+prefix+".** LIMIT 1", func(*client.SessionDataSet) error {
		found = true
		return nil
	})
	if gone(err) {
		return false, nil
	}
	return found, err
}

// gone tells an error saying that what was to be deleted does not exist
// (DATABASE_NOT_EXIST, PATH_NOT_EXIST).
func gone(err error) bool {
	c := statusCode(err)
	return c == statusDatabaseNotExist || c == statusPathNotExist
}

// CheckCleanup warns that the probe's data could not be deleted after the
// run: it names what was (or, when the delete's answer was lost and the
// re-check got none, may have been) left and the statement that deletes
// it. It is
// present only then (not for --keep, which leaves the data on purpose).
const CheckCleanup = "iotdb.cleanup"

// cleanupCheck is the CheckCleanup warning for res, ok false when the
// clean-up succeeded or was not attempted (--keep).
func cleanupCheck(w *workload, res *Result) (verdict.Check, bool) {
	if res.DeleteError == "" {
		return verdict.Check{}, false
	}
	stmt := deleteStatement(w, res)
	return verdict.Check{ID: CheckCleanup, Status: verdict.Warn,
		Observed: "delete failed: " + res.DeleteError,
		Expected: "the probe's data deleted after the run",
		Summary:  fmt.Sprintf("%s %s on %s: the clean-up failed (%s); delete it with: %s", w.prefix, res.leftWords(), res.Target, res.DeleteError, stmt),
		Remedy:   "delete it with: " + stmt}, true
}

// dropIfEmpty deletes the database a fleet run's shards share once the
// last shard has deleted its series (a shard still running has series
// there); a database another shard deleted first is no error.
func dropIfEmpty(ctx context.Context, p *sessionPool, db string) error {
	found, err := hasSeries(ctx, p, db)
	if err != nil || found {
		return err
	}
	err = admin(ctx, p, func(s *session) error { return s.exec("DELETE DATABASE " + db) })
	if gone(err) {
		return nil
	}
	return err
}

// probePrefix is where the probe's devices go: root.hostprep_<id> (its
// own database), or <database>.hostprep_<id> under an existing database.
func probePrefix(database, runID string) string {
	if database == "" {
		return "root.hostprep_" + runID
	}
	return strings.TrimSuffix(database, ".") + ".hostprep_" + runID
}
