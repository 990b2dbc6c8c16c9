package iotdb

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The client path follows the step's workers against the CPUs, the pool,
// and the CPU the step before used; a step that cannot run on a loop
// (mixed, an open loop) runs a goroutine per worker whatever is asked.
func TestChoosePathPerStep(t *testing.T) {
	cases := []struct {
		name      string
		scenario  string
		rate      float64
		pool, n   int
		procs     int
		prev      *ClientUse
		force     string
		want      string
		reasonHas string
	}{
		{"one worker on two CPUs, no step before", ScenarioWrite, 0, 8, 1, 2, nil, "", PathDirect, "no step before it"},
		{"one worker on two CPUs, quiet client before", ScenarioBatch, 0, 8, 1, 2, &ClientUse{CPUCores: 0.3}, "", PathDirect, "used 0.30 of them (under 50%)"},
		{"one worker on two CPUs, busy client before", ScenarioWrite, 0, 8, 1, 2, &ClientUse{CPUCores: 1.2}, "", PathLoop, "used 1.20 of them (at least 50%)"},
		{"as many workers as CPUs", ScenarioWrite, 0, 8, 2, 2, &ClientUse{CPUCores: 0.1}, "", PathLoop, "2 workers on 2 CPUs"},
		{"one CPU", ScenarioWrite, 0, 8, 1, 1, nil, "", PathLoop, "1 worker on 1 CPU"},
		{"pool smaller than the workers", ScenarioWrite, 0, 2, 3, 16, nil, "", PathLoop, "pool of 2 sessions"},
		{"mixed", ScenarioMixed, 0, 8, 1, 2, nil, PathDirect, PathGoroutines, "mixed scenario"},
		{"open loop", ScenarioWrite, 100, 8, 1, 2, nil, PathDirect, PathGoroutines, "open loop"},
		{"forced by the caller", ScenarioWrite, 0, 8, 8, 2, nil, PathDirect, PathDirect, "set by the caller"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Scenario: c.scenario, Rate: c.rate, PoolSize: c.pool, Steps: []int{c.n}}.withDefaults()
			cfg.clientPath = c.force
			p := newSessionPool(&cfg)
			defer p.close(time.Second)
			path, why := choosePath(&cfg, p, c.n, c.procs, c.prev)
			if path != c.want || !strings.Contains(why, c.reasonHas) {
				t.Errorf("choosePath = %s (%q), want %s with %q", path, why, c.want, c.reasonHas)
			}
		})
	}
}

// rowsWritten is how many rows of temperature the database db holds, over
// all its devices.
func rowsWritten(t *testing.T, cfg Config, db string) int64 {
	t.Helper()
	s := testSession(t, cfg)
	defer s.Close()
	var n int64
	for _, v := range column(t, s, "select count(temperature) from "+db+".** align by device", "count(temperature)") {
		c, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("count(temperature) = %q: %v", v, err)
		}
		n += c
	}
	return n
}

// dropDatabase deletes what Keep left.
func dropDatabase(t *testing.T, cfg Config, db string) {
	t.Helper()
	c := cfg.withDefaults()
	p := newSessionPool(&c)
	defer p.close(5 * time.Second)
	if err := admin(context.Background(), p, func(s *session) error { return s.exec("DELETE DATABASE " + db) }); err != nil {
		t.Errorf("dropping %s: %v", db, err)
	}
}

// Each loop path, asked for, runs every step of write and batch on a real
// server, says so in the step's client block, and its counts are the
// server's: the rows in the database are the operations the warm-up and
// the steps counted as successful, times the rows of one operation.
func TestClientPathsRunOnRealIoTDB(t *testing.T) {
	for _, sc := range []string{ScenarioWrite, ScenarioBatch} {
		for _, path := range []string{PathLoop, PathDirect} {
			t.Run(sc+"/"+path, func(t *testing.T) {
				cfg := realConfig(t, sc)
				cfg.Steps, cfg.StepDuration, cfg.Keep = []int{1, 2}, time.Second, true
				cfg.clientPath = path
				res, err := Run(context.Background(), cfg)
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				defer dropDatabase(t, cfg, res.Database)
				ok := res.WarmupOps
				for _, s := range res.Steps {
					c := s.Client
					cores := 1
					if path == PathDirect {
						cores = s.Workers // a thread per worker
					}
					if c.Path != path || c.PathReason == "" || !c.EventLoop || c.Cores != cores {
						t.Errorf("step %d: client %+v, want path %s on %d cores, with its reason", s.Workers, c, path, cores)
					}
					if s.Errors != 0 || s.OK < int64(s.Workers) || s.Latency.Count != s.OK {
						t.Errorf("step %d: ok %d, errors %d (%v), %d latencies", s.Workers, s.OK, s.Errors, s.ErrorSamples, s.Latency.Count)
					}
					if c.CPUPerOpUs <= 0 {
						t.Errorf("step %d: CPU per operation %v, want it measured", s.Workers, c.CPUPerOpUs)
					}
					ok += s.OK
				}
				wp, _ := PointsPerOp(sc)
				rows := int64(wp / len(measurements)) // rows per operation, over all its devices
				if got := rowsWritten(t, cfg, res.Database); got != ok*rows {
					t.Errorf("the server holds %d rows; the probe counted %d successful operations of %d rows (warm-up %d)", got, ok, rows, res.WarmupOps)
				}
			})
		}
	}
}

// Left to itself, the probe picks the path per step and says which and
// why in the JSON: with 4 CPUs to run on, 1 and 2 writers each get a
// thread blocking in read(2), 4 writers share the loop; mixed always runs
// a goroutine per worker.
func TestClientPathChosenPerStepOnRealIoTDB(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	want := map[string][]string{
		ScenarioWrite: {PathDirect, PathDirect, PathLoop},
		ScenarioMixed: {PathGoroutines, PathGoroutines, PathGoroutines},
	}
	for sc, paths := range want {
		t.Run(sc, func(t *testing.T) {
			cfg := realConfig(t, sc)
			cfg.StepDuration = time.Second
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Steps []struct {
					Workers int
					OK      int64
					Client  map[string]any
				}
			}
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if len(back.Steps) != len(paths) {
				t.Fatalf("%d steps, want %d", len(back.Steps), len(paths))
			}
			for i, s := range back.Steps {
				path, _ := s.Client["path"].(string)
				why, _ := s.Client["path_reason"].(string)
				if path != paths[i] || why == "" || s.OK == 0 {
					t.Errorf("step %d: client.path %q (%q), %d ok; want %s with a reason", s.Workers, path, why, s.OK, paths[i])
				}
				if path == PathDirect && !strings.Contains(why, "fewer than the 4 CPUs") {
					t.Errorf("step %d: reason %q does not name the CPUs it was judged against", s.Workers, why)
				}
			}
		})
	}
}
