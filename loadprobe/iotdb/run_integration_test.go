package iotdb

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iotdb-client-go/client"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// realConfig points a Config at the IoTDB that scripts/test.sh started,
// with short steps and a 300 ms warm-up (the probe's default is 1 s):
// enough to open the sessions and take the first writes' series
// creation off the first step, which is what the tests need of it.
func realConfig(t *testing.T, scenario string) Config {
	t.Helper()
	addr := testenv.IoTDB(t)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("HOSTPREP_TEST_IOTDB=%q: %v", addr, err)
	}
	pn, _ := strconv.Atoi(port)
	zero := 0.0
	return Config{
		Host: host, Port: pn, Password: os.Getenv("HOSTPREP_IOTDB_PASSWORD"),
		Scenario:     scenario,
		Steps:        []int{1, 2, 4},
		StepDuration: 2 * time.Second,
		Warmup:       300 * time.Millisecond,
		PoolSize:     8,
		Thresholds:   Thresholds{MaxErrorRate: &zero},
		SettingNames: probeFlags(&Config{}), // messages as `hostprep probe iotdb` prints them
	}
}

// databases lists the databases the server has (show databases).
func databases(t *testing.T, cfg Config) []string {
	t.Helper()
	s := testSession(t, cfg)
	defer s.Close()
	return column(t, s, "show databases", "Database")
}

// column runs sql on s and returns the column col of every row.
func column(t *testing.T, s *client.Session, sql, col string) []string {
	t.Helper()
	timeout := int64(10000)
	ds, err := s.ExecuteQueryStatement(sql, &timeout)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	defer ds.Close()
	var out []string
	for {
		ok, err := ds.Next()
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if !ok {
			return out
		}
		v, err := ds.GetString(col)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		out = append(out, v)
	}
}

func TestRunScenariosOnRealIoTDB(t *testing.T) {
	for _, sc := range Scenarios {
		t.Run(sc, func(t *testing.T) {
			cfg := realConfig(t, sc)
			// A second per step shows every figure a step has; the soak
			// (HOSTPREP_TEST_SOAK=1, not set in CI) holds each a minute.
			cfg.StepDuration = testenv.SoakOr(time.Second, time.Minute)
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			var text bytes.Buffer
			if err := res.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s", text.String())

			if !strings.HasPrefix(res.ServerVersion, "1.") && !strings.HasPrefix(res.ServerVersion, "2.") {
				t.Errorf("ServerVersion = %q, want an IoTDB release such as 2.0.10", res.ServerVersion)
			}
			if !strings.HasPrefix(res.Database, "root.hostprep_") || res.Kept {
				t.Errorf("Database = %q kept=%v, want root.hostprep_<id> deleted", res.Database, res.Kept)
			}
			for _, db := range databases(t, cfg) {
				if db == res.Database {
					t.Errorf("database %s still exists after the run", db)
				}
			}
			if len(res.Steps) != 3 {
				t.Fatalf("got %d steps, want 3", len(res.Steps))
			}
			wp, rp := PointsPerOp(sc)
			for i, s := range res.Steps {
				if s.Workers != cfg.Steps[i] {
					t.Errorf("step %d: workers %d, want %d", i, s.Workers, cfg.Steps[i])
				}
				if s.Errors != 0 || s.ErrorRate != 0 {
					t.Errorf("step %d workers: %d errors on a healthy server: %v", s.Workers, s.Errors, s.ErrorSamples)
				}
				if s.OK < int64(s.Workers) || s.Ops != s.OK+s.Errors {
					t.Errorf("step %d workers: ops %d ok %d: want at least one op per worker and ops = ok + errors", s.Workers, s.Ops, s.OK)
				}
				if s.Latency.Count != s.OK {
					t.Errorf("step %d workers: %d latencies for %d successful ops", s.Workers, s.Latency.Count, s.OK)
				}
				if d := cfg.StepDuration.Seconds(); s.DurationS < d || s.DurationS > d+10 {
					t.Errorf("step %d workers: measured %.2fs for a %v step", s.Workers, s.DurationS, cfg.StepDuration)
				}
				switch sc {
				case ScenarioMixed:
					if s.Reads+s.Writes != s.Ops || s.Reads == 0 || s.Writes == 0 {
						t.Errorf("mixed step %d: reads %d writes %d ops %d", s.Workers, s.Reads, s.Writes, s.Ops)
					}
					if want := s.Reads*int64(rp) + s.Writes*int64(wp); s.Points != want {
						t.Errorf("mixed step %d: %d points, want %d (reads x %d + writes x %d): a read returned other than 100 points", s.Workers, s.Points, want, rp, wp)
					}
				default:
					if s.Points != s.OK*int64(wp) {
						t.Errorf("step %d: %d points for %d ops of %d points", s.Workers, s.Points, s.OK, wp)
					}
				}
				if s.TPS <= 0 || s.Latency.P95 <= 0 || s.Latency.P95 < s.Latency.P50 || s.Latency.Max < s.Latency.P99 {
					t.Errorf("step %d: implausible figures tps=%v %v", s.Workers, s.TPS, s.Latency)
				}
				if s.Pool.Size != cfg.PoolSize || s.Pool.Samples == 0 || s.Pool.MaxUsed < 1 || s.Pool.MaxUsed > int64(s.Workers) {
					t.Errorf("step %d: pool use %+v: want 1..%d sessions of %d in use", s.Workers, s.Pool, s.Workers, cfg.PoolSize)
				}
				// Write and batch are one call each, closed loop: event
				// loops drive them (one for all, 1 core, or one per worker
				// on its own thread); a mixed read takes several calls.
				cores := 1
				if s.Client.Path == PathDirect {
					cores = s.Workers
				}
				if loop := sc != ScenarioMixed; s.Client.EventLoop != loop || loop && s.Client.Cores != cores {
					t.Errorf("step %d: event loop %v (%s) on %d cores, want the loop %v (%d cores)", s.Workers, s.Client.EventLoop, s.Client.Path, s.Client.Cores, loop, cores)
				}
			}
			if res.Knee.PeakWorkers == 0 || res.Knee.Reading == "" {
				t.Errorf("knee not filled: %+v", res.Knee)
			}
			if res.Verdict != verdict.Pass || len(res.Checks) != 5 || res.Checks[3].ID != CheckStall || res.Checks[3].Status != verdict.Pass {
				t.Errorf("verdict %s, checks %+v", res.Verdict, res.Checks)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var back map[string]any
			_ = json.Unmarshal(b, &back)
			for _, k := range []string{"server_version", "database", "steps", "knee", "verdict", "checks"} {
				if _, ok := back[k]; !ok {
					t.Errorf("JSON lacks %q", k)
				}
			}
		})
	}
}

func TestRunKeepLeavesDatabase(t *testing.T) {
	cfg := realConfig(t, ScenarioWrite)
	cfg.Steps, cfg.StepDuration, cfg.Keep = []int{1}, 500*time.Millisecond, true
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, db := range databases(t, cfg) {
		found = found || db == res.Database
	}
	if !found || !res.Kept {
		t.Fatalf("--keep: database %s not found after the run (kept=%v)", res.Database, res.Kept)
	}
	// Clean up what --keep left.
	c := cfg.withDefaults()
	p := newSessionPool(&c)
	defer p.close(5 * time.Second)
	if err := admin(context.Background(), p, func(s *session) error { return s.exec("DELETE DATABASE " + res.Database) }); err != nil {
		t.Fatalf("dropping %s: %v", res.Database, err)
	}
}

func TestPoolExhaustionCountsWaitTimeouts(t *testing.T) {
	cfg := realConfig(t, ScenarioBatch)
	cfg.Steps = []int{16}
	cfg.PoolSize = 1
	cfg.WaitTimeout = time.Millisecond
	cfg.StepDuration = 2 * time.Second
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := res.Steps[0]
	t.Logf("ops %d ok %d errors %v pool %+v", s.Ops, s.OK, s.ErrorsByClass, s.Pool)
	if s.ErrorsByClass[ClassWaitTimeout] == 0 || s.ErrorsByClass[ClassWaitTimeout] != s.Errors {
		t.Errorf("16 workers on 1 session with a 1ms wait: errors %v, want only wait_timeout", s.ErrorsByClass)
	}
	if s.OK == 0 {
		t.Errorf("the one session did no work")
	}
	if s.Pool.MaxUsed != 1 || s.Pool.MaxUtil != 1 {
		t.Errorf("pool use %+v, want max 1 of 1 session", s.Pool)
	}
	if res.Verdict != verdict.Fail || res.Checks[0].ID != CheckErrorRate || res.Checks[0].Status != verdict.Fail ||
		!strings.Contains(res.Checks[0].Remedy, "--pool-size") {
		t.Errorf("verdict %s, checks %+v: want iotdb.error_rate fail naming --pool-size", res.Verdict, res.Checks)
	}
}

func TestRunOpenLoopOnRealIoTDB(t *testing.T) {
	cfg := realConfig(t, ScenarioWrite)
	cfg.Steps, cfg.StepDuration, cfg.Rate = []int{2, 4}, 2*time.Second, 50 // 50 ops/s per worker
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "open" || res.RatePerWorker != 50 {
		t.Errorf("mode %q rate %v, want open at 50/s per worker", res.Mode, res.RatePerWorker)
	}
	for _, s := range res.Steps {
		if s.Client.EventLoop {
			t.Errorf("%d workers: an open-loop step ran on the event loop (it paces each worker)", s.Workers)
		}
		// The schedule, not the server, sets the pace: workers x 50/s x 2 s
		// operations, each either run or counted as missed when the workers
		// were still busy at the step's end (a loaded host).
		want := int64(s.Workers * 50 * 2)
		if got := s.Ops + s.Missed; got < want-int64(s.Workers) || got > want || s.Ops < want/4 || s.Errors != 0 {
			t.Errorf("%d workers: %d ops + %d missed (%d errors), want %d scheduled", s.Workers, s.Ops, s.Missed, s.Errors, want)
		}
		if tps := float64(s.OK) / s.DurationS; tps > float64(s.Workers*50)*1.05 {
			t.Errorf("%d workers: %.1f TPS beyond the offered %d/s", s.Workers, tps, s.Workers*50)
		}
	}
}

func TestWrongPasswordIsEnvironmentError(t *testing.T) {
	cfg := realConfig(t, ScenarioWrite)
	cfg.Password = "not-the-password-x9"
	_, err := Run(context.Background(), cfg)
	if exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "refused the login") {
		t.Fatalf("wrong password: %v (code %d), want exit 3 'refused the login'", err, exitcode.Code(err))
	}
	if strings.Contains(err.Error(), cfg.Password) {
		t.Errorf("the error prints the password: %v", err)
	}
}

// An open-loop rate far above what the server carries still ends each step
// at its duration (plus at most one call), and counts the operations the
// schedule had due that never started, instead of running them all late.
func TestOpenLoopAboveCapacityEndsOnTime(t *testing.T) {
	cfg := realConfig(t, ScenarioWrite)
	cfg.Steps, cfg.StepDuration, cfg.Rate, cfg.Warmup = []int{2}, time.Second, 1e6, -1 // 1,000,000 ops/s per worker
	began := time.Now()
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("a 1 s step at 1e6 ops/s per worker took %v: the open loop ran its whole schedule late", took)
	}
	s := res.Steps[0]
	if s.DurationS > 5 || s.Missed < 1_000_000 || s.Ops == 0 {
		t.Errorf("step: %.2f s, %d ops, %d missed; want ~1 s, some ops and ~2,000,000 missed", s.DurationS, s.Ops, s.Missed)
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil || !strings.Contains(text.String(), "never started") {
		t.Errorf("text report does not say operations never started (%v):\n%s", err, text.String())
	}
}
