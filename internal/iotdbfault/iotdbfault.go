// Package iotdbfault is a fault-injecting stand-in for an IoTDB DataNode's
// client RPC, built on the Go client's own generated Thrift processor
// (rpc.NewIClientRPCServiceProcessor) with framed transport and the binary
// protocol, as the real server speaks them.
//
// It exists for error paths a healthy IoTDB cannot be made to produce on
// demand: an answer that is late, a non-success status code, a
// MULTIPLE_ERROR whose sub-status has no message, a connection dropped
// mid-call, a slow or failing setup and clean-up. It answers session,
// schema and `show version` calls successfully (with no version row;
// setup and clean-up calls after SetAdminDelay, deletes with
// SetDeleteCode) and applies the configured Fault to data calls (inserts
// and queries). It stores nothing and must never be
// used for a performance number.
package iotdbfault

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iotdb-client-go/common"
	"github.com/apache/iotdb-client-go/rpc"
	"github.com/apache/thrift/lib/go/thrift"
)

// Fault is what the server does to a data call.
type Fault int32

const (
	// None answers success.
	None Fault = iota
	// Slow answers success after Server.Delay.
	Slow
	// Status answers status Server.Code (default 301,
	// EXECUTE_STATEMENT_ERROR) with a message.
	Status
	// MultipleNoMessage answers MULTIPLE_ERROR (302) with one failed
	// sub-status (507) whose message is not set.
	MultipleNoMessage
	// Drop closes the connection without answering.
	Drop
)

func (f Fault) String() string {
	return [...]string{"none", "slow", "status", "multiple-no-message", "drop"}[f]
}

// Server is a running fault server on 127.0.0.1.
type Server struct {
	// Addr is host:port to point the client at.
	Addr string

	fault atomic.Int32
	skip  atomic.Int64
	delay atomic.Int64 // ns
	code  atomic.Int32
	// redirect, when set, is the host:port data calls are redirected to.
	redirect atomic.Pointer[common.TEndPoint]
	// schemaCode, when not 0, is answered to schema creation.
	schemaCode atomic.Int32
	// adminDelay (ns) delays the answers to setup and clean-up calls.
	adminDelay atomic.Int64
	// deleteCode, when not 0, is answered to DELETE DATABASE and
	// DeleteTimeseries.
	deleteCode atomic.Int32
	stmtMu     sync.Mutex
	statements []string
	// DataCalls counts data calls received (any fault).
	DataCalls atomic.Int64

	srv   *thrift.TSimpleServer
	trans *trackingTransport
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
}

var noConnCheck sync.Once

// Start listens on 127.0.0.1 (a free port) and serves until Close.
//
// It turns off thrift's server-side connectivity check
// (thrift.ServerConnectivityCheckInterval, a process-wide setting that
// only servers use): its goroutine reads the socket while the server
// closes it, a data race in thrift v0.15 that a slow handler exposes.
func Start(f Fault) (*Server, error) {
	noConnCheck.Do(func() { thrift.ServerConnectivityCheckInterval = 0 })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: l.Addr().String(), done: make(chan struct{})}
	s.fault.Store(int32(f))
	s.delay.Store(int64(2 * time.Second))
	s.code.Store(301)
	s.trans = &trackingTransport{l: l, conns: map[*trackedConn]struct{}{}}
	proc := &safeProcessor{rpc.NewIClientRPCServiceProcessor(&handler{s: s})}
	s.srv = thrift.NewTSimpleServer4(proc, s.trans,
		thrift.NewTFramedTransportFactoryConf(thrift.NewTTransportFactory(), &thrift.TConfiguration{}),
		thrift.NewTBinaryProtocolFactoryConf(&thrift.TConfiguration{}))
	s.srv.SetLogger(func(string) {})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.srv.AcceptLoop()
	}()
	return s, nil
}

// StartT starts a Server with fault f for test t (see Start) and closes
// it when t ends; a server that does not start fails t.
func StartT(t testing.TB, f Fault) *Server {
	t.Helper()
	s, err := Start(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// SetFault changes the fault applied to data calls from now on.
func (s *Server) SetFault(f Fault) { s.fault.Store(int32(f)) }

// SetSkip answers the next n data calls normally before the fault
// applies (e.g. to let a probe seed data before the load).
func (s *Server) SetSkip(n int64) { s.skip.Store(n) }

// SetDelay sets how late Slow answers.
func (s *Server) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// SetAdminDelay makes the setup and clean-up calls (show version,
// CREATE/DELETE DATABASE, creating and deleting time series) answer after
// d; 0, the default, answers them at once.
func (s *Server) SetAdminDelay(d time.Duration) { s.adminDelay.Store(int64(d)) }

// SetDeleteCode makes DELETE DATABASE and DeleteTimeseries answer status
// code (0, the default: success).
func (s *Server) SetDeleteCode(code int32) { s.deleteCode.Store(code) }

// Statements lists the statements of ExecuteStatementV2 (CREATE and
// DELETE DATABASE) received so far, in order, and "DELETE TIMESERIES"
// with the paths of each DeleteTimeseries call.
func (s *Server) Statements() []string {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	return append([]string(nil), s.statements...)
}

func (s *Server) record(stmt string) {
	s.stmtMu.Lock()
	s.statements = append(s.statements, stmt)
	s.stmtMu.Unlock()
}

// adminWait waits the admin delay; false when the server closed meanwhile.
func (s *Server) adminWait() bool {
	d := time.Duration(s.adminDelay.Load())
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-s.done:
		return false
	}
}

// deleteStatus is the answer to a delete: success, or SetDeleteCode's.
func (s *Server) deleteStatus() *common.TSStatus {
	if c := s.deleteCode.Load(); c != 0 {
		msg := "injected by hostprep iotdbfault"
		return &common.TSStatus{Code: c, Message: &msg}
	}
	return ok()
}

// SetCode sets the status code Status answers.
func (s *Server) SetCode(code int32) { s.code.Store(code) }

// SetRedirect makes successful data calls answer REDIRECTION_RECOMMEND
// (400) naming addr (host:port) as the node to write to, as a DataNode that
// does not lead the device's region does ("": plain success again).
func (s *Server) SetRedirect(addr string) {
	if addr == "" {
		s.redirect.Store(nil)
		return
	}
	host, port, _ := net.SplitHostPort(addr)
	var p int32
	fmt.Sscan(port, &p)
	s.redirect.Store(&common.TEndPoint{IP: host, Port: p})
}

// SetSchemaCode makes schema creation (CREATE DATABASE and
// CreateMultiTimeseries) answer code with a message like IoTDB's (0:
// success again). Code 906 stands for a DataNode that cannot create
// another schema region (NO_AVAILABLE_REGION_GROUP), as seen on a small
// DataNode holding a few databases.
func (s *Server) SetSchemaCode(code int32) { s.schemaCode.Store(code) }

// schemaStatus is the answer to a schema creation call.
func (s *Server) schemaStatus() *common.TSStatus {
	code := s.schemaCode.Load()
	if code == 0 {
		return ok()
	}
	msg := fmt.Sprintf("injected by hostprep iotdbfault (status %d)", code)
	if code == 906 {
		msg = "There are no available SchemaRegionGroups currently, please use \"show cluster\" or \"show regions\" to check the cluster status"
	}
	return &common.TSStatus{Code: code, Message: &msg}
}

// Close stops listening, ends slow answers, closes every connection and
// waits for the server's goroutines.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.trans.closeAll()
		_ = s.srv.Stop()
		s.wg.Wait()
	})
}

// trackingTransport is a thrift server transport over a net.Listener that
// remembers accepted connections, so Close can end them
// (TSimpleServer.Stop waits for every connection to finish). It closes the
// net.Conn, which is safe while the server's goroutine uses the TSocket.
type trackingTransport struct {
	l      net.Listener
	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

type trackedConn struct {
	net.Conn
	t *trackingTransport
}

func (c *trackedConn) Close() error {
	c.t.mu.Lock()
	delete(c.t.conns, c)
	c.t.mu.Unlock()
	return c.Conn.Close()
}

func (t *trackingTransport) Listen() error { return nil }

func (t *trackingTransport) Accept() (thrift.TTransport, error) {
	c, err := t.l.Accept()
	if err != nil {
		return nil, thrift.NewTTransportExceptionFromError(err)
	}
	tc := &trackedConn{Conn: c, t: t}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		c.Close()
		return nil, thrift.NewTTransportException(thrift.NOT_OPEN, "closed")
	}
	t.conns[tc] = struct{}{}
	return thrift.NewTSocketFromConnConf(tc, &thrift.TConfiguration{}), nil
}

func (t *trackingTransport) Close() error     { return t.l.Close() }
func (t *trackingTransport) Interrupt() error { return t.l.Close() }

func (t *trackingTransport) closeAll() {
	t.mu.Lock()
	t.closed = true
	conns := make([]net.Conn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c.Conn)
	}
	t.mu.Unlock()
	t.l.Close()
	for _, c := range conns {
		c.Close()
	}
}

// safeProcessor turns a panic in a handler (an RPC the stand-in does not
// implement) into a closed connection instead of a crashed test binary.
type safeProcessor struct{ thrift.TProcessor }

func (p *safeProcessor) Process(ctx context.Context, in, out thrift.TProtocol) (ok bool, err thrift.TException) {
	defer func() {
		if r := recover(); r != nil {
			ok, err = false, thrift.NewTApplicationException(thrift.INTERNAL_ERROR, fmt.Sprint("iotdbfault: ", r))
		}
	}()
	return p.TProcessor.Process(ctx, in, out)
}

// handler answers the calls the Go client's SessionPool, the probe's setup
// and its scenarios make. Unimplemented methods panic (nil interface) and
// are caught by safeProcessor.
type handler struct {
	rpc.IClientRPCService
	s      *Server
	nextID atomic.Int64
}

func ok() *common.TSStatus { return &common.TSStatus{Code: 200} }

// data applies the configured fault to a data call.
func (h *handler) data(ctx context.Context) (*common.TSStatus, error) {
	h.s.DataCalls.Add(1)
	if h.s.skip.Add(-1) >= 0 {
		return ok(), nil
	}
	switch Fault(h.s.fault.Load()) {
	case Slow:
		select {
		case <-time.After(time.Duration(h.s.delay.Load())):
		case <-h.s.done:
			return nil, thrift.ErrAbandonRequest
		}
	case Status:
		msg := "injected by hostprep iotdbfault"
		return &common.TSStatus{Code: h.s.code.Load(), Message: &msg}, nil
	case MultipleNoMessage:
		return &common.TSStatus{Code: 302, SubStatus: []*common.TSStatus{{Code: 507}}}, nil
	case Drop:
		// The generated processor passes ErrAbandonRequest up and
		// TSimpleServer closes the connection without writing a reply.
		return nil, thrift.ErrAbandonRequest
	}
	if ep := h.s.redirect.Load(); ep != nil {
		return &common.TSStatus{Code: 400, RedirectNode: ep}, nil
	}
	return ok(), nil
}

func (h *handler) OpenSession(ctx context.Context, req *rpc.TSOpenSessionReq) (*rpc.TSOpenSessionResp, error) {
	id := h.nextID.Add(1)
	return &rpc.TSOpenSessionResp{Status: ok(), ServerProtocolVersion: rpc.TSProtocolVersion_IOTDB_SERVICE_PROTOCOL_V3, SessionId: &id}, nil
}

func (h *handler) RequestStatementId(ctx context.Context, sessionID int64) (int64, error) {
	return h.nextID.Add(1), nil
}

func (h *handler) CloseSession(ctx context.Context, req *rpc.TSCloseSessionReq) (*common.TSStatus, error) {
	return ok(), nil
}

func (h *handler) CloseOperation(ctx context.Context, req *rpc.TSCloseOperationReq) (*common.TSStatus, error) {
	return ok(), nil
}

func (h *handler) CreateMultiTimeseries(ctx context.Context, req *rpc.TSCreateMultiTimeseriesReq) (*common.TSStatus, error) {
	if !h.s.adminWait() {
		return nil, thrift.ErrAbandonRequest
	}
	return h.s.schemaStatus(), nil
}

func (h *handler) DeleteTimeseries(ctx context.Context, sessionID int64, paths []string) (*common.TSStatus, error) {
	h.s.record("DELETE TIMESERIES " + strings.Join(paths, ", "))
	if !h.s.adminWait() {
		return nil, thrift.ErrAbandonRequest
	}
	return h.s.deleteStatus(), nil
}

// ExecuteStatementV2 carries CREATE/DELETE DATABASE: success, the schema
// code for CREATE DATABASE, the delete code for DELETE DATABASE.
func (h *handler) ExecuteStatementV2(ctx context.Context, req *rpc.TSExecuteStatementReq) (*rpc.TSExecuteStatementResp, error) {
	h.s.record(req.Statement)
	if !h.s.adminWait() {
		return nil, thrift.ErrAbandonRequest
	}
	stmt := strings.ToUpper(strings.TrimSpace(req.Statement))
	switch {
	case strings.HasPrefix(stmt, "CREATE DATABASE"):
		return &rpc.TSExecuteStatementResp{Status: h.s.schemaStatus()}, nil
	case strings.HasPrefix(stmt, "DELETE DATABASE"):
		return &rpc.TSExecuteStatementResp{Status: h.s.deleteStatus()}, nil
	}
	return &rpc.TSExecuteStatementResp{Status: ok()}, nil
}

// ExecuteQueryStatementV2 answers the probe's setup queries (`show
// version`, `SHOW DATABASES ...`) with no rows, after the admin delay and
// without the fault, and applies the fault to every other query (the
// load's reads); a success is an empty result set.
func (h *handler) ExecuteQueryStatementV2(ctx context.Context, req *rpc.TSExecuteStatementReq) (*rpc.TSExecuteStatementResp, error) {
	st := ok()
	cols := []string{"Version", "BuildInfo"}
	stmt := strings.ToLower(strings.TrimSpace(req.Statement))
	if stmt == "show version" || strings.HasPrefix(stmt, "show databases") {
		if !h.s.adminWait() {
			return nil, thrift.ErrAbandonRequest
		}
		if stmt != "show version" {
			cols = []string{"Database", "SchemaReplicationFactor"}
		}
	} else {
		var err error
		if st, err = h.data(ctx); err != nil {
			return nil, err
		}
		cols = []string{"root.x.d.temperature", "root.x.d.humidity"}
	}
	qid, more, ign := h.nextID.Add(1), false, false
	return &rpc.TSExecuteStatementResp{
		Status: st, QueryId: &qid, Columns: cols, DataTypeList: []string{"TEXT", "TEXT"},
		ColumnNameIndexMap: map[string]int32{cols[0]: 0, cols[1]: 1}, IgnoreTimeStamp: &ign, MoreData: &more,
	}, nil
}

func (h *handler) InsertRecord(ctx context.Context, req *rpc.TSInsertRecordReq) (*common.TSStatus, error) {
	return h.data(ctx)
}

func (h *handler) InsertRecords(ctx context.Context, req *rpc.TSInsertRecordsReq) (*common.TSStatus, error) {
	return h.data(ctx)
}

func (h *handler) InsertTablet(ctx context.Context, req *rpc.TSInsertTabletReq) (*common.TSStatus, error) {
	return h.data(ctx)
}

func (h *handler) InsertTablets(ctx context.Context, req *rpc.TSInsertTabletsReq) (*common.TSStatus, error) {
	return h.data(ctx)
}

// Listener address helper for tests that need host and port apart.
func (s *Server) HostPort() (string, int) {
	host, port, _ := net.SplitHostPort(s.Addr)
	var p int
	fmt.Sscan(port, &p)
	return host, p
}
