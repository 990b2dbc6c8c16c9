// Package iotdb is hostprep's IoTDB probe: a short step load through a
// SessionPool of IoTDB client sessions (tree model) with per-step and
// per-second latency (HdrHistogram), TPS, points/s, error rate by class,
// pool utilisation and the probe's own CPU, what bounded each step, the
// knee, and a verdict against thresholds.
//
// It follows a published test of IoTDB's Java SessionPool: scenario write
// (insertRecord of two FLOAT measurements, temperature and humidity, one
// device per worker), batch (multi-device InsertTablets of 1,000 points) and
// mixed (70% reads of 100 points, 30% writes of 300 points), each run as
// steps of increasing concurrency.
//
// The probe drives the Go client's generated Thrift stubs
// (github.com/apache/iotdb-client-go v1.3.7, package rpc) through its own
// SessionPool (pool.go, session.go) instead of client.SessionPool and
// client.Session, for what they cost per operation and what they leave
// out, read from their source (client/sessionpool.go, client/session.go):
//
//   - The v1.3.7 client sets no socket timeout and runs every RPC with
//     context.Background(), so bounding a call took a goroutine, a channel
//     and a timer per call (and one more for GetSession). The probe sets
//     the call deadline on the session's connection instead: a call that
//     hits it returns a timeout, its session is closed (its stream is
//     mid-frame) and nothing keeps running in the background.
//   - Its framed transport writes the 4-byte frame header and the body in
//     two write(2) calls; the probe's transport buffers both into one.
//   - It encodes values with binary.Write (reflection) into fresh buffers;
//     the probe encodes them into per-worker buffers reused every call.
//   - GetSession allocates a timer per call even when a session is free;
//     the probe's pool takes a free slot without one.
//   - SessionPool.PutBack accepts sessions it never gave out and keeps no
//     count of sessions in use (client_claims_test.go pins this down); the
//     probe's pool counts sessions in use and workers waiting.
//   - Session.Open ignores the OpenSession status (a wrong password shows
//     only at the first statement) and VerifySuccess dereferences the
//     message of a failed MULTIPLE_ERROR sub-status without a nil check
//     (a panic); the probe checks both statuses itself (verify).
//
// SessionPool semantics are kept: at most --pool-size sessions, borrowed
// for one operation and returned, a wait of at most --wait-timeout for a
// free one, new sessions opened on demand to the first of --node-urls that
// answers, and a session whose connection failed replaced by a new one at
// the next borrow (the reconnect).
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
