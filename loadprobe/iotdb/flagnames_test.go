package iotdb

// probeFlags is the SettingNames `hostprep probe iotdb` gives a run of c
// (CommandNames, whose test in cmd/hostprep checks that every name is one
// of its flags), for the settings these tests' messages name, so that
// they read as that command prints them. The library's own names
// (SettingName) are no flags.
func probeFlags(c *Config) map[string]string {
	names := map[string]string{
		"user": "--user", "password": "--password-file or $" + PasswordEnv, "database": "--database", "keep": "--keep",
		"steps": "--steps", "step_duration": "--step-duration", "rate": "--rate", "shard": "--shard",
		"pool_size": "--pool-size", "wait_timeout": "--wait-timeout", "connect_timeout": "--connect-timeout", "call_timeout": "--call-timeout",
		"thresholds.p95": "--max-p95", "thresholds.min_tps": "--min-tps", "thresholds.max_error_rate": "--max-error-rate",
		"output": "--output json", "address": "--host/--port",
	}
	if len(c.NodeURLs) > 0 {
		names["address"] = "--node-urls"
	}
	return names
}
