package iotdb

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/apache/iotdb-client-go/client"
	"github.com/apache/iotdb-client-go/common"
	"github.com/apache/iotdb-client-go/rpc"
	"github.com/apache/thrift/lib/go/thrift"
)

// Measurements written by every scenario: two FLOAT series per device.
var measurements = []string{"temperature", "humidity"}

const (
	batchDevices = 10  // devices per batch operation
	batchRows    = 50  // rows per device per batch operation: 10 x 50 x 2 = 1,000 points
	mixedWrite   = 150 // rows per mixed write: 150 x 2 = 300 points
	mixedRead    = 50  // rows per mixed read: 50 x 2 = 100 points
	mixedReadPct = 70  // percent of mixed operations that are reads
)

// PointsPerOp returns the points one operation of a scenario writes or
// reads (mixed: write 300, read 100).
func PointsPerOp(scenario string) (write, read int) {
	switch scenario {
	case ScenarioWrite:
		return len(measurements), 0
	case ScenarioBatch:
		return batchDevices * batchRows * len(measurements), 0
	case ScenarioMixed:
		return mixedWrite * len(measurements), mixedRead * len(measurements)
	}
	return 0, 0
}

// workload holds the database layout and the shared timestamp clock.
type workload struct {
	scenario string
	prefix   string // the devices' parent path (probePrefix)
	devices  int    // devices d0..d<devices-1> of the whole (fleet) run
	own      []int  // the devices this run (shard) writes: its series
	shared   bool   // the database is shared by a fleet run's shards
	clock    atomic.Int64
	types    []int32 // the measurements' data types (FLOAT)
	// redirection: follow the server's REDIRECTION_RECOMMEND (Config.Redirection).
	redirection bool
	// cfg is the run's configuration, whose setting names (Config.name)
	// a status explained after the setup (the clean-up's) uses.
	cfg *Config
}

func newWorkload(cfg *Config, prefix string) *workload {
	// One device per worker (batch: batchDevices per worker), numbered by
	// the worker's fleet-wide index, so shards write disjoint devices.
	max, per := cfg.maxWorkers(), 1
	if cfg.Scenario == ScenarioBatch {
		per = batchDevices
	}
	w := &workload{scenario: cfg.Scenario, prefix: prefix, devices: max * per, redirection: cfg.Redirection, cfg: cfg}
	for j := 0; j < cfg.Shard.Count(max); j++ {
		for k := 0; k < per; k++ {
			w.own = append(w.own, cfg.Shard.Global(j)*per+k)
		}
	}
	for range measurements {
		w.types = append(w.types, int32(client.FLOAT))
	}
	// Timestamps (ms) come from one counter, so no two operations write the
	// same timestamp of a device; start at a fixed epoch to keep them small.
	w.clock.Store(1_700_000_000_000)
	return w
}

func (w *workload) device(i int) string { return fmt.Sprintf("%s.d%d", w.prefix, i%w.devices) }

// seriesPaths lists every time series the run (shard) writes.
func (w *workload) seriesPaths() []string {
	var paths []string
	for _, d := range w.own {
		for _, m := range measurements {
			paths = append(paths, w.device(d)+"."+m)
		}
	}
	return paths
}

// ts reserves n consecutive timestamps and returns the first.
func (w *workload) ts(n int) int64 { return w.clock.Add(int64(n)) - int64(n) + 1 }

// value is a plausible reading: temperature around 21 °C, humidity around 45 %.
func value(rng *rand.Rand, m int, t int64) float32 {
	base := 21.0
	if m == 1 {
		base = 45
	}
	return float32(base + 3*math.Sin(float64(t%3600)/573) + rng.Float64())
}

// putColumns fills vals (len(measurements) x rows FLOAT columns, big
// endian, as IoTDB's tablet format has them) and ts (rows int64
// timestamps from t0) with one device's rows.
func putColumns(rng *rand.Rand, vals, ts []byte, rows int, t0 int64) {
	for r := 0; r < rows; r++ {
		t := t0 + int64(r)
		binary.BigEndian.PutUint64(ts[8*r:], uint64(t))
		for m := range measurements {
			binary.BigEndian.PutUint32(vals[4*(m*rows+r):], math.Float32bits(value(rng, m, t)))
		}
	}
}

// opKind tells reads from writes in the per-step counts.
type opKind int

const (
	opWrite opKind = iota
	opRead
)

// workerOps is one worker's operations: the requests are built once and
// refilled for every operation (a session's call never outlives its
// deadline, so nothing else can still be reading them).
type workerOps struct {
	w      *workload
	worker int
	rng    *rand.Rand
	kind   opKind // of the operation prepared last
	exec   opFunc // runs the operation prepared last
	// prefer is the node the server last recommended for this worker's
	// writes (with Config.Redirection); redirected is set when an answer
	// carried a recommendation (counted in Step.Redirects).
	prefer     string
	redirected bool

	rec     rpc.TSInsertRecordReq  // write
	tablets rpc.TSInsertTabletsReq // batch
	tablet  rpc.TSInsertTabletReq  // mixed write
	sql     string                 // mixed read
}

// newWorkerOps prepares worker's requests.
func (w *workload) newWorkerOps(worker int, rng *rand.Rand) *workerOps {
	o := &workerOps{w: w, worker: worker, rng: rng}
	cols := len(measurements)
	switch w.scenario {
	case ScenarioWrite:
		o.rec = rpc.TSInsertRecordReq{PrefixPath: w.device(worker), Measurements: measurements, Values: make([]byte, 5*cols)}
		o.exec = o.write
	case ScenarioBatch:
		r := &o.tablets
		for j := 0; j < batchDevices; j++ {
			r.PrefixPaths = append(r.PrefixPaths, w.device(worker*batchDevices+j))
			r.MeasurementsList = append(r.MeasurementsList, measurements)
			r.ValuesList = append(r.ValuesList, make([]byte, 4*cols*batchRows))
			r.TimestampsList = append(r.TimestampsList, make([]byte, 8*batchRows))
			r.TypesList = append(r.TypesList, w.types)
			r.SizeList = append(r.SizeList, batchRows)
		}
		o.exec = o.batch
	case ScenarioMixed:
		o.tablet = w.tabletReq(w.device(worker), mixedWrite)
		o.sql = fmt.Sprintf("select %s, %s from %s order by time desc limit %d", measurements[0], measurements[1], w.device(worker), mixedRead)
	}
	return o
}

// tabletReq is an InsertTablet request of rows rows of device, values to
// be filled by putColumns.
func (w *workload) tabletReq(device string, rows int) rpc.TSInsertTabletReq {
	return rpc.TSInsertTabletReq{PrefixPath: device, Measurements: measurements, Types: w.types, Size: int32(rows),
		Values: make([]byte, 4*len(measurements)*rows), Timestamps: make([]byte, 8*rows)}
}

// next prepares the worker's next operation (new timestamps and values)
// and returns its kind; o.exec then runs it on a session.
func (o *workerOps) next() opKind {
	w := o.w
	switch w.scenario {
	case ScenarioWrite:
		t := w.ts(1)
		o.rec.Timestamp = t
		for m := range measurements {
			o.rec.Values[5*m] = byte(client.FLOAT)
			binary.BigEndian.PutUint32(o.rec.Values[5*m+1:], math.Float32bits(value(o.rng, m, t)))
		}
		o.kind = opWrite
	case ScenarioBatch:
		t0 := w.ts(batchRows)
		for j := range o.tablets.PrefixPaths {
			putColumns(o.rng, o.tablets.ValuesList[j], o.tablets.TimestampsList[j], batchRows, t0)
		}
		o.kind = opWrite
	case ScenarioMixed:
		if o.rng.IntN(100) < mixedReadPct {
			o.kind, o.exec = opRead, o.read
		} else {
			putColumns(o.rng, o.tablet.Values, o.tablet.Timestamps, mixedWrite, w.ts(mixedWrite))
			o.kind, o.exec = opWrite, o.mixedWrite
		}
	}
	return o.kind
}

// redirect takes the node s's last answer recommended.
func (o *workerOps) redirect(s *session) {
	if r := s.takeRedirect(); r != "" {
		o.redirected = true
		if o.w.redirection {
			o.prefer = r
		}
	}
}

func (o *workerOps) write(s *session) (int64, error) {
	err := s.insertRecord(&o.rec)
	o.redirect(s)
	if err != nil {
		return 0, err
	}
	return int64(len(measurements)), nil
}

func (o *workerOps) batch(s *session) (int64, error) {
	err := s.insertTablets(&o.tablets)
	o.redirect(s)
	if err != nil {
		return 0, err
	}
	return batchDevices * batchRows * int64(len(measurements)), nil
}

func (o *workerOps) mixedWrite(s *session) (int64, error) {
	err := s.insertTablet(&o.tablet)
	o.redirect(s)
	if err != nil {
		return 0, err
	}
	return mixedWrite * int64(len(measurements)), nil
}

func (o *workerOps) read(s *session) (int64, error) { return readPoints(s, o.sql) }

// readPoints runs a query, counts the non-null values it returns and
// closes the result set before returning (so before the session goes back).
func readPoints(s *session, sql string) (n int64, err error) {
	ds, err := s.query(sql)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := ds.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	var cols []string
	for _, c := range ds.GetColumnNames() {
		if c != client.TimestampColumnName {
			cols = append(cols, c)
		}
	}
	for {
		ok, err := ds.Next()
		if err != nil {
			return n, err
		}
		if !ok {
			return n, nil
		}
		for _, c := range cols {
			null, err := ds.IsNull(c)
			if err != nil {
				return n, err
			}
			if !null {
				n++
			}
		}
	}
}

// oneCall tells whether a scenario's operation is one RPC answered by a
// TSStatus (write: insertRecord, batch: insertTablets), which the event
// loop drives with send and recv; a mixed read takes several RPCs.
func oneCall(scenario string) bool { return scenario == ScenarioWrite || scenario == ScenarioBatch }

// RPC method names of the one-call operations (IClientRPCService).
const (
	methodInsertRecord  = "insertRecord"
	methodInsertTablets = "insertTablets"
)

// send sends the operation prepared last (next) on s, for a scenario
// that is oneCall; recv then reads its answer.
func (o *workerOps) send(s *session) error {
	if o.w.scenario == ScenarioBatch {
		o.tablets.SessionId = s.id
		return s.send(methodInsertTablets, &rpc.IClientRPCServiceInsertTabletsArgs{Req: &o.tablets})
	}
	o.rec.SessionId = s.id
	return s.send(methodInsertRecord, &rpc.IClientRPCServiceInsertRecordArgs{Req: &o.rec})
}

// recv decodes the answer to send from the frame s's wire holds and
// returns what exec returns for the same answer: the points written, or
// the error (the status's, or the decoding's; a missing status is a
// MISSING_RESULT application error, as the generated stubs return it).
func (o *workerOps) recv(s *session) (int64, error) {
	method, st, err := methodInsertRecord, (*common.TSStatus)(nil), error(nil)
	if o.w.scenario == ScenarioBatch {
		var r rpc.IClientRPCServiceInsertTabletsResult
		method = methodInsertTablets
		err, st = s.recv(method, &r), r.Success
	} else {
		var r rpc.IClientRPCServiceInsertRecordResult
		err, st = s.recv(method, &r), r.Success
	}
	if err == nil && st == nil {
		err = thrift.NewTApplicationException(thrift.MISSING_RESULT, method+" failed: unknown result")
	}
	err = s.written(st, err)
	o.redirect(s)
	if err != nil {
		return 0, err
	}
	points, _ := PointsPerOp(o.w.scenario)
	return int64(points), nil
}
