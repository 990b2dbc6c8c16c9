package iotdb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"

	"github.com/apache/iotdb-client-go/client"
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
	database string // root.hostprep_<id>
	devices  int    // devices d0..d<devices-1>
	clock    atomic.Int64
	schemas  []*client.MeasurementSchema
	types    []client.TSDataType
}

func newWorkload(cfg *Config, database string) *workload {
	n := cfg.maxWorkers()
	if cfg.Scenario == ScenarioBatch && n < batchDevices {
		n = batchDevices
	}
	w := &workload{scenario: cfg.Scenario, database: database, devices: n}
	for _, m := range measurements {
		w.schemas = append(w.schemas, &client.MeasurementSchema{Measurement: m, DataType: client.FLOAT})
		w.types = append(w.types, client.FLOAT)
	}
	// Timestamps (ms) come from one counter, so no two operations write the
	// same timestamp of a device; start at a fixed epoch to keep them small.
	w.clock.Store(1_700_000_000_000)
	return w
}

func (w *workload) device(i int) string { return fmt.Sprintf("%s.d%d", w.database, i%w.devices) }

// seriesPaths lists every time series the run needs.
func (w *workload) seriesPaths() []string {
	var paths []string
	for d := 0; d < w.devices; d++ {
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
	base := []float64{21, 45}[m]
	return float32(base + 3*math.Sin(float64(t%3600)/573) + rng.Float64())
}

func (w *workload) tablet(rng *rand.Rand, device string, rows int, t0 int64) (*client.Tablet, error) {
	tb, err := client.NewTablet(device, w.schemas, rows)
	if err != nil {
		return nil, err
	}
	for r := 0; r < rows; r++ {
		tb.SetTimestamp(t0+int64(r), r)
		for m := range measurements {
			if err := tb.SetValueAt(value(rng, m, t0+int64(r)), m, r); err != nil {
				return nil, err
			}
		}
	}
	tb.RowSize = rows
	return tb, nil
}

// opKind tells reads from writes in the per-step counts.
type opKind int

const (
	opWrite opKind = iota
	opRead
)

// next builds worker's next operation. Everything the call touches is
// built here, fresh, so an abandoned call never shares memory with the
// worker's next operation.
func (w *workload) next(worker int, rng *rand.Rand) (opKind, opFunc, error) {
	switch w.scenario {
	case ScenarioWrite:
		dev := w.device(worker)
		t := w.ts(1)
		vals := []interface{}{value(rng, 0, t), value(rng, 1, t)}
		return opWrite, func(s *client.Session) (int64, error) {
			if err := s.InsertRecord(dev, measurements, w.types, vals, t); err != nil {
				return 0, err
			}
			return int64(len(measurements)), nil
		}, nil
	case ScenarioBatch:
		t0 := w.ts(batchRows)
		tablets := make([]*client.Tablet, 0, batchDevices)
		for j := 0; j < batchDevices; j++ {
			tb, err := w.tablet(rng, w.device(worker*batchDevices+j), batchRows, t0)
			if err != nil {
				return 0, nil, err
			}
			tablets = append(tablets, tb)
		}
		return opWrite, func(s *client.Session) (int64, error) {
			if err := s.InsertTablets(tablets, true); err != nil {
				return 0, err
			}
			return batchDevices * batchRows * int64(len(measurements)), nil
		}, nil
	case ScenarioMixed:
		dev := w.device(worker)
		if rng.IntN(100) < mixedReadPct {
			sql := fmt.Sprintf("select %s, %s from %s order by time desc limit %d", measurements[0], measurements[1], dev, mixedRead)
			return opRead, func(s *client.Session) (int64, error) { return readPoints(s, sql) }, nil
		}
		tb, err := w.tablet(rng, dev, mixedWrite, w.ts(mixedWrite))
		if err != nil {
			return 0, nil, err
		}
		return opWrite, func(s *client.Session) (int64, error) {
			if err := s.InsertTablet(tb, true); err != nil {
				return 0, err
			}
			return mixedWrite * int64(len(measurements)), nil
		}, nil
	}
	return 0, nil, fmt.Errorf("unknown scenario %q", w.scenario)
}

// readPoints runs a query, counts the non-null values it returns and
// closes the result set before returning (so before the session goes back).
func readPoints(s *client.Session, sql string) (n int64, err error) {
	timeout := int64(0)
	ds, err := s.ExecuteQueryStatement(sql, &timeout)
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
