package iotdb

import "strings"

// probeFlags is the SettingNames `hostprep probe iotdb` gives a run of c
// (cmd/hostprep iotdbNames: every setting by its flag, the address by
// --node-urls or --host/--port), for tests of messages as that command
// prints them. The library's own names (SettingName) are no flags.
func probeFlags(c *Config) map[string]string {
	names := map[string]string{}
	for _, k := range SettingKeys() {
		switch k {
		case "password", "unreachable_after", "sample_interval", "on_step", "stop_cleanup", "setting_names":
			continue
		case "thresholds.max_error_rate":
			names[k] = "--max-error-rate"
		case "thresholds.p95":
			names[k] = "--max-p95"
		case "thresholds.min_tps":
			names[k] = "--min-tps"
		case "thresholds.target_step":
			names[k] = "--target-step"
		default:
			names[k] = "--" + strings.ReplaceAll(k, "_", "-")
		}
	}
	names["address"] = "--host/--port"
	if len(c.NodeURLs) > 0 {
		names["address"] = "--node-urls"
	}
	names["password"] = "--password-file or $" + PasswordEnv
	names["output"] = "--output json"
	return names
}
