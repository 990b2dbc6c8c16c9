package iotdb

import (
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// A value someone set to 0 is refused, not silently replaced by the
// default; descending or repeated steps are refused.
func TestValidateRejectsExplicitZerosAndDescendingSteps(t *testing.T) {
	for flag, set := range map[string]func(*Config){
		"probe.iotdb.step_duration": func(c *Config) { c.StepDuration = 0 },
		"probe.iotdb.pool_size":     func(c *Config) { c.PoolSize = 0 },
		"probe.iotdb.port":          func(c *Config) { c.Port = 0 },
		"probe.iotdb.wait_timeout":  func(c *Config) { c.WaitTimeout = 0 },
		"call_timeout":              func(c *Config) { c.CallTimeout = 0 },
		"connect_timeout":           func(c *Config) { c.ConnectTimeout = 0 },
		"probe.iotdb.fetch_size":    func(c *Config) { c.FetchSize = 0 },
		"probe.iotdb.host":          func(c *Config) { c.Host = "" },
		"probe.iotdb.steps":         func(c *Config) { c.Steps = []int{4, 2} },
	} {
		c := Defaults
		set(&c)
		err := c.Validate()
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), flag) {
			t.Errorf("%s: Validate = %v (code %d), want exit 2 naming %s", flag, err, exitcode.Code(err), flag)
		}
		// The library names settings, never CLI flags (the CLI adds them).
		if err != nil && strings.Contains(err.Error(), "--") {
			t.Errorf("%s: Validate = %v names a CLI flag", flag, err)
		}
	}
	c := Defaults
	c.Steps = []int{2, 2}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "increas") {
		t.Errorf("repeated step: %v, want 'steps must increase'", err)
	}
	if err := Defaults.Validate(); err != nil {
		t.Errorf("Defaults: %v", err)
	}
	// A Config written from scratch still takes defaults for zero fields.
	if err := (Config{Steps: []int{1, 2}}).Validate(); err != nil {
		t.Errorf("Config{Steps: 1,2}: %v, want valid (zero fields are defaults)", err)
	}
	// From a profile: keys left out take defaults; bad ones are named by key.
	if err := ConfigFromProfile(&profiles.IoTDBProbe{Host: "db1"}).Validate(); err != nil {
		t.Errorf("profile with only a host: %v", err)
	}
	err := ConfigFromProfile(&profiles.IoTDBProbe{Host: "db1", Steps: []int{4, 2}, StepDuration: time.Second}).Validate()
	if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "probe.iotdb.steps") {
		t.Errorf("profile steps 4,2: %v, want exit 2 naming probe.iotdb.steps", err)
	}
}
