package iotdb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/apache/iotdb-client-go/client"
	"github.com/apache/iotdb-client-go/common"
	"github.com/apache/iotdb-client-go/rpc"
	"github.com/apache/thrift/lib/go/thrift"
)

// session is one IoTDB client session, driven through the Go client's
// generated Thrift stubs (github.com/apache/iotdb-client-go/rpc) rather
// than client.Session, so that a call costs one write(2) and its reads,
// with no goroutine or timer of its own:
//
//   - the request frame goes out in one write: the framed transport writes
//     its 4-byte header and the body into wire's buffer, flushed once
//     (client.Session's TSocket writes them in two syscalls);
//   - the call deadline is the connection's deadline, set once per call
//     (see wire), with no goroutine or timer per call; a call that hits it
//     fails with a timeout
//     and its session is closed (its stream is mid-frame), so no call
//     outlives its deadline and nothing is left running in the background;
//   - values are encoded by the probe into reused buffers
//     (client.Session encodes them with binary.Write, via reflection,
//     into fresh buffers every call).
//
// A session is used by one goroutine at a time (the pool hands it out).
type session struct {
	node string // host:port it is connected to
	w    *wire
	rpc  *rpc.IClientRPCServiceClient
	// tc and prot are rpc's client and protocol, for the event loop's
	// calls, which send and receive apart (send, recv); seq numbers them.
	tc    *thrift.TStandardClient
	prot  thrift.TProtocol
	seq   int32
	id    int64 // session id from OpenSession
	stmt  int64 // statement id from RequestStatementId
	fetch int32
	// stale: the stream may be mid-frame although the call succeeded (an
	// admin query's result set could not be closed, closeData); the pool
	// closes the session instead of putting it back.
	stale bool
	// redirect is the node (host:port) the last write's answer recommended
	// (REDIRECTION_RECOMMEND, 400, with a redirect node), "" if none.
	redirect string
}

// noteRedirect records the node a write's status recommends.
func (s *session) noteRedirect(st *common.TSStatus) {
	if st != nil && st.Code == client.RedirectionRecommend && st.RedirectNode != nil {
		s.redirect = net.JoinHostPort(st.RedirectNode.IP, strconv.Itoa(int(st.RedirectNode.Port)))
	}
}

// written is the outcome of a write whose answer was st, or err when the
// call failed: err, else st's (verify), having noted the node st
// recommends (noteRedirect).
func (s *session) written(st *common.TSStatus, err error) error {
	if err != nil {
		return err
	}
	s.noteRedirect(st)
	return verify(st)
}

// takeRedirect returns and clears the recommended node.
func (s *session) takeRedirect() string {
	r := s.redirect
	s.redirect = ""
	return r
}

// writeBuffer is wire's write buffer (bytes): large enough for the
// biggest request of the scenarios (a batch of 1,000 FLOAT points is about
// 9 KiB) to go out in one write.
const writeBuffer = 64 << 10

// openSession dials node (host:port) within connectTimeout and opens an
// IoTDB session as user: the handshake (OpenSession, RequestStatementId)
// has connectTimeout again, from the end of the dial. The call timeout
// (--call-timeout) bounds the load's calls, not the opening of a session:
// a call timeout shorter than a handshake must not look like a server that
// cannot be reached. Errors: an *openError telling a failed TCP connect
// from a handshake that failed or did not answer in time on a connection
// that was made, or a *client.ExecutionError with the status the server
// refused the session with (wrong password: 801). raw: on a rawConn (see
// dialWire).
func openSession(ctx context.Context, node, user, password string, connectTimeout time.Duration, fetch int32, raw bool) (*session, error) {
	w, err := dialWire(ctx, node, connectTimeout, raw)
	if err != nil {
		return nil, &openError{err: err}
	}
	conf := &thrift.TConfiguration{MaxFrameSize: thrift.DEFAULT_MAX_FRAME_SIZE}
	framed := thrift.NewTFramedTransportConf(w, conf)
	pf := thrift.NewTBinaryProtocolFactoryConf(conf)
	prot := pf.GetProtocol(framed)
	tc := thrift.NewTStandardClient(prot, prot)
	s := &session{node: node, w: w, fetch: fetch, rpc: rpc.NewIClientRPCServiceClient(tc), tc: tc, prot: prot}
	w.begin(time.Now().Add(connectTimeout))
	defer w.end()
	// The session is not yet the pool's (sessionPool.interrupt does not
	// see it): ctx's end cuts its opening calls here.
	stop := context.AfterFunc(ctx, w.interrupt)
	defer stop()
	resp, err := s.rpc.OpenSession(ctx, &rpc.TSOpenSessionReq{ClientProtocol: rpc.TSProtocolVersion_IOTDB_SERVICE_PROTOCOL_V3,
		ZoneId: "UTC", Username: user, Password: &password})
	if err == nil {
		err = verify(resp.GetStatus())
	}
	if err == nil {
		s.id = resp.GetSessionId()
		s.stmt, err = s.rpc.RequestStatementId(ctx, s.id)
	}
	if err != nil {
		_ = w.Close()
		var ee *client.ExecutionError
		if errors.As(err, &ee) {
			return nil, err // the server refused the session
		}
		return nil, &openError{connected: true, within: connectTimeout, err: err}
	}
	return s, nil
}

// openError is a session that could not be opened: the TCP connect failed
// (connected false), or the connection was made but the OpenSession
// handshake failed or did not answer within within (the connect
// timeout, named setting: the pool's Config.name("connect_timeout"), ""
// leaves the name out).
type openError struct {
	connected bool
	within    time.Duration
	setting   string
	err       error
}

func (e *openError) Error() string {
	switch {
	case !e.connected:
		return "TCP connect failed: " + e.err.Error()
	case isTimeout(e.err):
		if e.setting == "" {
			return fmt.Sprintf("TCP connect succeeded, but OpenSession did not answer within %v: %v", e.within, e.err)
		}
		return fmt.Sprintf("TCP connect succeeded, but OpenSession did not answer within %v (%s): %v", e.within, e.setting, e.err)
	}
	return "TCP connect succeeded, but OpenSession failed: " + e.err.Error()
}

func (e *openError) Unwrap() error { return e.err }

// close ends the session on the server (within d) and closes the
// connection; broken skips the CloseSession call (the stream is unusable).
func (s *session) close(broken bool, d time.Duration) {
	if !broken {
		s.w.begin(time.Now().Add(d))
		_, _ = s.rpc.CloseSession(context.Background(), &rpc.TSCloseSessionReq{SessionId: s.id})
		s.w.end()
	}
	_ = s.w.Close()
}

// errNoStatus is a response without the TSStatus it must carry.
var errNoStatus = errors.New("the server's answer carries no status")

// verify turns a TSStatus into an error: nil for success (200) and
// redirection (400); a *client.ExecutionError with the code otherwise. For
// MULTIPLE_ERROR (302) the first failing sub-status is returned (302
// itself when it lists none). Unlike the v1.3.7 client's VerifySuccess it
// does not dereference a missing message.
func verify(st *common.TSStatus) error {
	if st == nil {
		return errNoStatus
	}
	switch st.Code {
	case client.SuccessStatus, client.RedirectionRecommend:
		return nil
	case client.MultipleError:
		failed := false
		for _, sub := range st.SubStatus {
			if sub == nil {
				failed = true
				continue
			}
			if sub.Code != client.SuccessStatus && sub.Code != client.RedirectionRecommend {
				return &client.ExecutionError{Code: sub.Code, Message: sub.GetMessage()}
			}
		}
		if !failed && len(st.SubStatus) > 0 {
			return nil
		}
	}
	return &client.ExecutionError{Code: st.Code, Message: st.GetMessage()}
}

// exec runs a statement that returns no rows (CREATE, DELETE, ...).
func (s *session) exec(sql string) error {
	resp, err := s.rpc.ExecuteStatementV2(context.Background(), &rpc.TSExecuteStatementReq{SessionId: s.id, Statement: sql, StatementId: s.stmt, FetchSize: &s.fetch})
	if err != nil {
		return err
	}
	return verify(resp.GetStatus())
}

// query runs sql and returns its rows; the caller must Close the data set
// before the session goes back to the pool.
func (s *session) query(sql string) (*client.SessionDataSet, error) {
	timeout := int64(0)
	resp, err := s.rpc.ExecuteQueryStatementV2(context.Background(), &rpc.TSExecuteStatementReq{SessionId: s.id, Statement: sql,
		StatementId: s.stmt, FetchSize: &s.fetch, Timeout: &timeout})
	if err != nil {
		return nil, err
	}
	if err := verify(resp.GetStatus()); err != nil {
		return nil, err
	}
	if resp.QueryId == nil {
		return nil, fmt.Errorf("query %q: the answer carries no query id", sql)
	}
	return client.NewSessionDataSet(sql, resp.Columns, resp.DataTypeList, resp.ColumnNameIndexMap, *resp.QueryId, s.stmt, s.rpc, s.id,
		resp.QueryResult_, resp.IsSetIgnoreTimeStamp() && resp.GetIgnoreTimeStamp(), &timeout, resp.GetMoreData(), s.fetch)
}

// createSeries creates FLOAT time series (GORILLA, LZ4) at paths.
func (s *session) createSeries(paths []string) error {
	n := len(paths)
	req := &rpc.TSCreateMultiTimeseriesReq{SessionId: s.id, Paths: paths,
		DataTypes: make([]int32, n), Encodings: make([]int32, n), Compressors: make([]int32, n)}
	for i := range paths {
		req.DataTypes[i], req.Encodings[i], req.Compressors[i] = int32(client.FLOAT), int32(client.GORILLA), int32(client.LZ4)
	}
	st, err := s.rpc.CreateMultiTimeseries(context.Background(), req)
	if err != nil {
		return err
	}
	return verify(st)
}

// deleteSeries deletes the time series at paths (their data with them).
func (s *session) deleteSeries(paths []string) error {
	st, err := s.rpc.DeleteTimeseries(context.Background(), s.id, paths)
	if err != nil {
		return err
	}
	return verify(st)
}

// send sends one call of method with args (its request frame in one
// write), to be answered by recv; the event loop's way to call. It never
// waits for room in the socket's send buffer: what the socket does not
// take at once stays queued in the wire (wire.unsent), for the loop to
// send when the socket is writable (wire.flushOut).
func (s *session) send(method string, args thrift.TStruct) error {
	s.seq++
	s.w.queue = true
	defer func() { s.w.queue = false }()
	return s.tc.Send(context.Background(), s.prot, s.seq, method, args)
}

// recv decodes the answer to the call sent last into result, from the
// frame the event loop read (wire.fill), and forgets the frame. It reads
// nothing from the connection: a message longer than its frame fails
// with errShortAnswer instead of blocking the loop.
func (s *session) recv(method string, result thrift.TStruct) error {
	s.w.inOnly = true
	defer func() { s.w.inOnly = false; s.w.drop() }()
	return s.tc.Recv(context.Background(), s.prot, s.seq, method, result)
}

// insertRecord sends req (one row of one device) on this session.
func (s *session) insertRecord(req *rpc.TSInsertRecordReq) error {
	req.SessionId = s.id
	return s.written(s.rpc.InsertRecord(context.Background(), req))
}

// insertTablet sends req (rows of one device) on this session.
func (s *session) insertTablet(req *rpc.TSInsertTabletReq) error {
	req.SessionId = s.id
	return s.written(s.rpc.InsertTablet(context.Background(), req))
}

// insertTablets sends req (rows of several devices) on this session.
func (s *session) insertTablets(req *rpc.TSInsertTabletsReq) error {
	req.SessionId = s.id
	return s.written(s.rpc.InsertTablets(context.Background(), req))
}
