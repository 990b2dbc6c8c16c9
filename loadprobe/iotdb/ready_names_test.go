package iotdb

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/loadprobe/latency"
)

// readyLikeNames is a SettingNames map shaped like the one `hostprep
// ready` gives (readyNames, which Probe.Ready uses, with --iotdb given): its own flags for
// the address, user and password, --output json, the library's default
// (probe.iotdb.<key>) for profile keys, and a probe-only setting named as
// such.
func readyLikeNames() map[string]string {
	names := map[string]string{
		"address": "--iotdb", "host": "--iotdb", "port": "--iotdb",
		"user":     "--iotdb-user",
		"password": "--iotdb-password-file or $" + PasswordEnv,
		"output":   "--output json",
	}
	for _, k := range []string{"node_urls", "redirection", "warmup", "connect_timeout", "call_timeout", "rate", "database", "keep", "shard", "run_id"} {
		names[k] = "`hostprep probe iotdb --" + strings.ReplaceAll(k, "_", "-") + "` (ready uses the default)"
	}
	return names
}

// readyFlags are the flags `hostprep ready` has that the IoTDB probe's
// messages may name.
var readyFlags = []string{"--iotdb", "--iotdb-user", "--iotdb-password-file", "--output"}

var (
	probeCommand = regexp.MustCompile("`hostprep probe iotdb --[a-z0-9-]+`")
	flagToken    = regexp.MustCompile(`--[a-z][a-z0-9-]*`)
)

// foreignFlags are the flags msg names as if the caller had them (a flag
// quoted with its command, "`hostprep probe iotdb --rate`", is not one)
// that are not among own.
func foreignFlags(msg string, own []string) []string {
	var out []string
	for _, f := range flagToken.FindAllString(probeCommand.ReplaceAllString(msg, ""), -1) {
		if !slices.Contains(own, f) {
			out = append(out, f)
		}
	}
	return out
}

// namedMessages are the user-facing strings of a run of c that name
// settings: suggestions (Setting and Fix), check summaries and remedies,
// every bound's fix, every error class's remedy, the knee reading, every
// status explanation, the open-error hints and the login fix.
func namedMessages(c Config) []string {
	var out []string
	codes := map[string]int64{}
	for code := range statusExplanations {
		codes[strconv.Itoa(int(code))] = 1
	}
	steps := []Step{
		{Workers: 16, Ops: 100, OK: 50, Errors: 50, ErrorRate: 0.5, TPS: 100, Bound: BoundPool,
			ErrorsByClass: map[string]int64{ClassWaitTimeout: 20, ClassDeadline: 20, ClassStatus: 10}, StatusCodes: codes},
		{Workers: 32, Ops: 100, OK: 100, TPS: 120, Bound: BoundClient},
	}
	for _, pool := range []int{4, 64} {
		c := c
		c.PoolSize = pool
		for _, s := range Suggest(&c, steps, "1.3.0") {
			out = append(out, s.Setting, s.Fix)
		}
		for _, cl := range Classes {
			out = append(out, errorRemedy(&Step{Workers: 16, ErrorsByClass: map[string]int64{cl: 1}}, &c))
		}
	}
	for _, b := range []string{BoundPool, BoundClient, BoundErrors, BoundWorkers, BoundServer} {
		out = append(out, c.boundFix(b, 16))
	}
	// Checks: thresholds unset (their skips name them), then set and
	// missed, a stall, and an open loop that fell behind its schedule.
	ok := Step{Workers: 16, Ops: 1000, OK: 1000, TPS: 100, Latency: latency.Summary{P95: 50, Count: 1000}, DurationS: 10,
		NoAnswer: &Silence{S: 5}}
	for _, th := range []Thresholds{{}, {P95: time.Millisecond, MinTPS: 1e6}} {
		c := c
		c.Steps, c.Thresholds = []int{16}, th
		for _, rate := range []float64{0, 1000} {
			c.Rate = rate
			st := ok
			if rate > 0 {
				st.Missed = 9000
			}
			for _, ch := range Checks(&c, []Step{st}) {
				out = append(out, ch.Summary, ch.Remedy)
			}
		}
	}
	noisy := []Step{{Workers: 10, TPS: 1000, Latency: latency.Summary{P95: 10}}, {Workers: 20, TPS: 1010, Latency: latency.Summary{P95: 20}},
		{Workers: 30, TPS: 1500, Latency: latency.Summary{P95: 25}}}
	out = append(out, c.findKnee(noisy, 1).Reading, c.workersFix())
	for code := range statusExplanations {
		e, _ := c.explainStatus(code)
		out = append(out, e.Fix, statusSetting(&c, code))
	}
	hung := &openError{connected: true, within: time.Second, setting: newSessionPool(&c).openSetting, err: os.ErrDeadlineExceeded}
	out = append(out, hung.Error(), openHint(hung, &c), openHint(&openError{err: os.ErrClosed}, &c), loginFix(&c))
	return out
}

// `hostprep ready` runs the IoTDB probe without any of `hostprep probe
// iotdb`'s flags: under ready's names no suggestion, remedy, bound fix,
// knee reading, status explanation or open error names one of them
// (--pool-size, --wait-timeout, --call-timeout, --database,
// --connect-timeout, --user, --password-file...); they name ready's own
// flags, the profile's keys, and what only `hostprep probe iotdb` sets.
// The library told ready users to "raise --pool-size".
func TestReadyNamesReachEveryMessage(t *testing.T) {
	c := Config{Steps: []int{16, 32}, PoolSize: 4, WaitTimeout: time.Millisecond, SettingNames: readyLikeNames()}
	msgs := namedMessages(c)
	for _, m := range msgs {
		if bad := foreignFlags(m, readyFlags); len(bad) > 0 {
			t.Errorf("under ready's names %q names %v, flags ready does not have", m, bad)
		}
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		"probe.iotdb.pool_size 16 or more", "raise probe.iotdb.pool_size", "probe.iotdb.wait_timeout",
		"raise `hostprep probe iotdb --call-timeout` (ready uses the default)", "`hostprep probe iotdb --database` (ready uses the default)",
		"`hostprep probe iotdb --connect-timeout` (ready uses the default)", "`hostprep probe iotdb --shard` (ready uses the default)",
		"`hostprep probe iotdb --rate` (ready uses the default)", "probe.iotdb.steps", "probe.iotdb.step_duration",
		"no probe.iotdb.thresholds.p95 set", "no probe.iotdb.thresholds.min_tps set",
		"--iotdb-user / password", "check --iotdb-user and the password (--iotdb-password-file or $HOSTPREP_IOTDB_PASSWORD)",
		"is --iotdb a DataNode", "status_codes in --output json",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no message names %q; messages:\n%s", want, all)
		}
	}
	// The same messages under `hostprep probe iotdb`'s names keep its
	// flags (the test above is not vacuous).
	c.SettingNames = probeFlags(&c)
	probe := strings.Join(namedMessages(c), "\n")
	for _, want := range []string{"--pool-size 16", "--wait-timeout", "raise --call-timeout", "--database", "--connect-timeout", "check --user and the password (--password-file", "is --host/--port a DataNode", "--step-duration"} {
		if !strings.Contains(probe, want) {
			t.Errorf("under probe iotdb's names no message names %q", want)
		}
	}
}

// The library names no CLI flag of its own accord: without SettingNames
// every setting (every Resolve key, the address and the JSON output) is
// named by its profile key or a plain description, and so is every
// message of a run; under ready's names no key is named by a flag ready
// lacks.
func TestSettingNamesDefaultsAreNoFlags(t *testing.T) {
	keys := append(SettingKeys(), "address", "output")
	ready := Config{SettingNames: readyLikeNames()}
	for _, k := range keys {
		for _, c := range []Config{{}, {NodeURLs: []string{"db1:6667"}}} {
			if n := c.name(k); n == "" || strings.Contains(n, "--") {
				t.Errorf("default name of %q (node URLs %v) is %q: want a profile key or a description, no flag", k, c.NodeURLs, n)
			}
		}
		if bad := foreignFlags(ready.name(k), readyFlags); len(bad) > 0 {
			t.Errorf("ready names %q %q: %v are no flags of ready", k, ready.name(k), bad)
		}
	}
	if n := (&Config{}).name("pool_size"); n != "probe.iotdb.pool_size" {
		t.Errorf("default name of pool_size %q, want probe.iotdb.pool_size", n)
	}
	for _, m := range namedMessages(Config{Steps: []int{16, 32}, PoolSize: 4}) {
		if bad := foreignFlags(m, nil); len(bad) > 0 {
			t.Errorf("without SettingNames %q names %v", m, bad)
		}
	}
	for code := range statusExplanations {
		if e, _ := ExplainStatus(code); strings.Contains(e.Fix, "--") || strings.Contains(e.Fix, "{") {
			t.Errorf("ExplainStatus(%d).Fix = %q: want the library's names filled in", code, e.Fix)
		}
	}
}
