// Package iotdb is hostprep's IoTDB probe: a short step load through the
// IoTDB Go client's SessionPool (github.com/apache/iotdb-client-go v1.3.7,
// tree model) with per-step latency (HdrHistogram), TPS, points/s, error
// rate by class and pool utilisation, the knee, and a verdict against
// thresholds.
//
// It follows a published test of IoTDB's Java SessionPool: scenario write
// (insertRecord of two FLOAT measurements, temperature and humidity, one
// device per worker), batch (multi-device InsertTablets of 1,000 points) and
// mixed (70% reads of 100 points, 30% writes of 300 points), each run as
// steps of increasing concurrency.
//
// What the v1.3.7 client does and does not do, read from its source
// (client/sessionpool.go, client/session.go), and what the probe does
// about it:
//
//   - SessionPool.PutBack accepts any Session: it does not check that the
//     pool gave it out. It re-queues the session if its socket is open and
//     then takes a slot token (<-sem); a session the pool never gave out
//     thus frees a slot it never held (the pool then lets more than its
//     size out), or blocks when its idle channel is full. PutBack after
//     Close sends on a closed channel (it recovers the panic). The pool
//     keeps no count of sessions in use, so the probe counts what it hands
//     out, puts every session back exactly once, and closes sessions that
//     come back after the pool was closed. (client_claims_test.go pins
//     this behaviour down.)
//   - The connection timeout (NewSessionPool's connectionTimeoutInMs) is
//     only thrift's ConnectTimeout for the TCP dial; the socket timeout is
//     0 and every RPC runs with context.Background(), so nothing bounds a
//     call to a server that does not answer. A failed call reconnects with
//     ConnectTimeout 0. The probe therefore puts its own deadline
//     (Config.CallTimeout) on every call and on opening a session.
//   - GetSession's wait timeout bounds only the wait for a free slot, not
//     opening a new session; its timeout error is unexported ("get session
//     timeout") and is matched by text.
//   - Session.Open ignores the status of the OpenSession response, so a
//     wrong password shows only at the first statement.
//   - The library can panic: VerifySuccess dereferences the message of
//     every failed sub-status of a MULTIPLE_ERROR (302) without a nil check,
//     and ExecuteStatement dereferences a nil response after a failed
//     reconnect. A worker recovers and counts ClassPanic.
//   - A MULTIPLE_ERROR whose sub-statuses are all successes (or empty) is
//     reported as success.
//
// A run that does not finish is never a pass: when ctx is cancelled
// (Ctrl-C, SIGTERM) or the server cannot be reached for
// Config.UnreachableAfter (every operation failing to connect), Run
// returns the steps so far (the one cut short marked partial, left out of
// the knee), Result.Interrupted or Result.Unreachable, a failing
// iotdb.complete check and an exitcode.Environment error (exit 3). Connect
// failures back off per worker (20 ms doubling to 1 s, jittered) instead of
// retrying at once.
package iotdb
