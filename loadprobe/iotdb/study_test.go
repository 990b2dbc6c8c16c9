package iotdb

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
)

// The built-in profiles iotdb-study-a|b|c carry the published study's
// scenarios (steps and operations) and run against the test IoTDB with
// short steps (the step length is the user's --step-duration): their
// first step, with the profile's scenario, pool and fetch size; the soak
// (HOSTPREP_TEST_SOAK=1) runs every step, up to 500 workers, which on
// the test's one small DataNode takes a minute and leaves it slow for
// the tests after it.
func TestStudyProfilesRunOnRealIoTDB(t *testing.T) {
	want := map[string]struct {
		scenario string
		steps    []int
	}{
		"iotdb-study-a": {ScenarioWrite, []int{10, 20, 30, 40, 50}},
		"iotdb-study-b": {ScenarioBatch, []int{50, 100, 150, 200}},
		"iotdb-study-c": {ScenarioMixed, []int{200, 300, 400, 500}},
	}
	for name, w := range want {
		t.Run(name, func(t *testing.T) {
			p, err := profiles.Load(name, nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg := ConfigFromProfile(p.Probe.IoTDB)
			if cfg.Scenario != w.scenario || !slices.Equal(cfg.Steps, w.steps) || cfg.PoolSize < slices.Max(w.steps) {
				t.Fatalf("%s: scenario %s steps %v pool %d, want %s %v with a pool >= the largest step", name, cfg.Scenario, cfg.Steps, cfg.PoolSize, w.scenario, w.steps)
			}
			if p.Probe.IoTDB.StepDuration != 0 {
				t.Errorf("%s sets step_duration %v: the study's step length is the user's --step-duration", name, p.Probe.IoTDB.StepDuration)
			}
			real := realConfig(t, w.scenario)
			cfg.Host, cfg.Port, cfg.Password = real.Host, real.Port, real.Password
			cfg.StepDuration, cfg.Warmup = 700*time.Millisecond, -1
			if os.Getenv(testenv.SoakEnv) != "1" {
				cfg.Steps = cfg.Steps[:1]
			}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(res.Steps) != len(cfg.Steps) {
				t.Fatalf("%s: %d steps, want %d", name, len(res.Steps), len(cfg.Steps))
			}
			for _, s := range res.Steps {
				t.Logf("%s: %d workers: %.0f TPS, p95 %.1f ms, errors %.2f%%, bound %q", name, s.Workers, s.TPS, s.Latency.P95, 100*s.ErrorRate, s.Bound)
				if s.OK == 0 {
					t.Errorf("%s: %d workers: no operation succeeded (%v)", name, s.Workers, s.ErrorSamples)
				}
			}
		})
	}
}
