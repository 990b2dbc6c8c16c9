package iotdb

import (
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/profiles"
)

// setting is one probe setting: its key (the profile's probe.iotdb key
// where the profile has one, e.g. "pool_size", "thresholds.p95") and how
// to copy its value from one Config to another.
type setting struct {
	key  string
	copy func(dst, src *Config)
}

// settings lists every setting of Config that a caller can give. A field
// added to Config must be added here (TestResolveCoversEveryField fails
// otherwise), so that no path (built-in defaults, profile, flags) drops it.
var settings = []setting{
	{"host", func(d, s *Config) { d.Host = s.Host }},
	{"port", func(d, s *Config) { d.Port = s.Port }},
	{"node_urls", func(d, s *Config) { d.NodeURLs = slices.Clone(s.NodeURLs) }},
	{"redirection", func(d, s *Config) { d.Redirection = s.Redirection }},
	{"user", func(d, s *Config) { d.User = s.User }},
	{"password", func(d, s *Config) { d.Password = s.Password }},
	{"scenario", func(d, s *Config) { d.Scenario = s.Scenario }},
	{"steps", func(d, s *Config) { d.Steps = slices.Clone(s.Steps) }},
	{"step_duration", func(d, s *Config) { d.StepDuration = s.StepDuration }},
	{"warmup", func(d, s *Config) { d.Warmup = s.Warmup }},
	{"pool_size", func(d, s *Config) { d.PoolSize = s.PoolSize }},
	{"wait_timeout", func(d, s *Config) { d.WaitTimeout = s.WaitTimeout }},
	{"connect_timeout", func(d, s *Config) { d.ConnectTimeout = s.ConnectTimeout }},
	{"call_timeout", func(d, s *Config) { d.CallTimeout = s.CallTimeout }},
	{"fetch_size", func(d, s *Config) { d.FetchSize = s.FetchSize }},
	{"rate", func(d, s *Config) { d.Rate = s.Rate }},
	{"database", func(d, s *Config) { d.Database = s.Database }},
	{"keep", func(d, s *Config) { d.Keep = s.Keep }},
	{"shard", func(d, s *Config) { d.Shard = s.Shard }},
	{"run_id", func(d, s *Config) { d.RunID = s.RunID }},
	{"unreachable_after", func(d, s *Config) { d.UnreachableAfter = s.UnreachableAfter }},
	{"sample_interval", func(d, s *Config) { d.SampleInterval = s.SampleInterval }},
	{"thresholds.max_error_rate", func(d, s *Config) {
		d.Thresholds.MaxErrorRate = nil
		if s.Thresholds.MaxErrorRate != nil {
			v := *s.Thresholds.MaxErrorRate
			d.Thresholds.MaxErrorRate = &v
		}
	}},
	{"thresholds.p95", func(d, s *Config) { d.Thresholds.P95 = s.Thresholds.P95 }},
	{"thresholds.target_step", func(d, s *Config) { d.Thresholds.TargetStep = s.Thresholds.TargetStep }},
	{"thresholds.min_tps", func(d, s *Config) { d.Thresholds.MinTPS = s.Thresholds.MinTPS }},
	{"on_step", func(d, s *Config) { d.OnStep = s.OnStep }},
	{"stop_cleanup", func(d, s *Config) { d.StopCleanup = s.StopCleanup }},
	{"setting_names", func(d, s *Config) { d.SettingNames = maps.Clone(s.SettingNames) }},
}

// SettingKeys lists the keys Resolve's given function is asked about.
func SettingKeys() []string {
	out := make([]string, len(settings))
	for i, s := range settings {
		out[i] = s.key
	}
	return out
}

// Resolve is the probe's one settings resolver, used by `hostprep probe
// iotdb` and `hostprep ready`: base (the caller's built-in defaults; zero
// fields take Defaults'), then every key the profile section p sets (nil:
// none), then every setting given explicitly (given(key) true, e.g. a flag
// the user typed), taken from explicit. The result is complete (see
// Config): check it with Validate.
func Resolve(base *Config, p *profiles.IoTDBProbe, explicit *Config, given func(key string) bool) Config {
	cfg := base.withDefaults()
	if p != nil {
		fromProfile := rawFromProfile(p)
		for _, s := range settings {
			if p.Has(s.key) {
				s.copy(&cfg, &fromProfile)
			}
		}
	}
	for _, s := range settings {
		if given != nil && given(s.key) {
			s.copy(&cfg, explicit)
		}
	}
	cfg.complete = true
	return cfg
}

// profileField finds the field of v (a struct) at the dotted yaml key.
func profileField(v reflect.Value, key string) (reflect.Value, bool) {
	name, rest, nested := strings.Cut(key, ".")
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if tag != name {
			continue
		}
		if nested {
			return profileField(v.Field(i), rest)
		}
		return v.Field(i), true
	}
	return reflect.Value{}, false
}
