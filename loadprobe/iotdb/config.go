package iotdb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/profiles"
)

// Scenario names, after the published SessionPool test the probe follows.
const (
	// ScenarioWrite: each worker insertRecord's one row of two FLOAT
	// measurements (temperature, humidity) to its own device: 2 points/op.
	ScenarioWrite = "write"
	// ScenarioBatch: each operation is one InsertTablets of 10 devices x 50
	// rows x 2 measurements: 1,000 points/op.
	ScenarioBatch = "batch"
	// ScenarioMixed: 70% reads of 100 points (the newest 50 rows of both
	// measurements of the worker's device), 30% writes of 300 points (one
	// InsertTablet of 150 rows x 2 measurements).
	ScenarioMixed = "mixed"
)

// Scenarios lists the valid scenario names.
var Scenarios = []string{ScenarioWrite, ScenarioBatch, ScenarioMixed}

// DefaultMaxErrorRate is the error-rate threshold when none is given
// (flag, profile or Config): a step where more than 1% of the operations
// failed is not a pass, and is left out of the knee and the peak (its TPS
// and p95 are not the server's). It is the same for `hostprep probe
// iotdb`, with or without a profile, and for `hostprep ready`. Not to
// judge errors, set 1.
const DefaultMaxErrorRate = 0.01

// Thresholds decide the verdict. A zero P95, MinTPS is not checked (its
// check is reported as skip); a nil MaxErrorRate is DefaultMaxErrorRate.
type Thresholds struct {
	// MaxErrorRate is the highest fraction (0..1) of failed operations in
	// any step; nil is DefaultMaxErrorRate.
	MaxErrorRate *float64 `json:"max_error_rate,omitempty"`
	// P95 is the highest p95 response time at TargetStep.
	P95 time.Duration `json:"p95,omitempty"`
	// TargetStep is the worker count P95 and MinTPS apply to; 0 means the
	// last step. It must be one of Steps.
	TargetStep int `json:"target_step,omitempty"`
	// MinTPS is the lowest acceptable throughput at TargetStep, successful
	// operations/s.
	MinTPS float64 `json:"min_tps,omitempty"`
}

// PasswordEnv is the environment variable the commands read the IoTDB
// password from when no password file is given.
const PasswordEnv = "HOSTPREP_IOTDB_PASSWORD"

// Config is one probe run.
//
// A Config written from scratch (Config{Steps: ...}) takes the value of
// Defaults for every zero field. A Config copied from Defaults (as the CLI
// does before parsing its flags) or made by ConfigFromProfile is complete:
// its zero fields are values someone set, and Validate rejects a zero
// port, pool size, step duration, wait timeout, call timeout and the like
// instead of silently replacing it (only Password still defaults
// to root, and a zero Warmup means no warm-up).
type Config struct {
	// Host and Port of the IoTDB DataNode client RPC (default 127.0.0.1:6667).
	Host string `json:"host"`
	Port int    `json:"port"`
	// User and Password of the IoTDB session (default root/root). The
	// password is never printed, logged or serialised.
	User     string `json:"user"`
	Password string `json:"-"`
	// Scenario is write, batch or mixed.
	Scenario string `json:"scenario"`
	// Steps are the worker counts of the steps, run in order.
	Steps []int `json:"steps"`
	// StepDuration is how long each step keeps its workers busy.
	StepDuration time.Duration `json:"step_duration"`
	// Warmup runs the first step's workers this long before the first
	// step, unmeasured (JIT, region creation, first connections); default
	// 1s, negative disables it.
	Warmup time.Duration `json:"warmup"`
	// PoolSize is the SessionPool's maximum number of sessions.
	PoolSize int `json:"pool_size"`
	// WaitTimeout is how long a worker waits for a free session before the
	// operation counts as a wait_timeout error.
	WaitTimeout time.Duration `json:"wait_timeout"`
	// NodeURLs, when set, are the DataNodes' client RPC addresses
	// (host:port), the SessionPool's NodeUrls: a new session goes to the
	// first that answers, starting with the one that answered last; Host
	// and Port are then not used. Nodes that could not be reached are named
	// in Result.UnreachableNodes.
	NodeURLs []string `json:"node_urls,omitempty"`

	// SettingNames is how the caller names settings in the errors,
	// check remedies, suggestions, knee readings and status explanations
	// of a run, keyed by the Resolve key (SettingKeys: "pool_size",
	// "thresholds.p95", "database", ...), plus "address" (the setting that
	// gave Host and Port, or NodeURLs) and "output" (where the JSON result
	// is, which lists status_codes and error_samples). A key not in it is
	// named by the library's default (see SettingName): `hostprep probe
	// iotdb` maps every key to its flag ("--pool-size"), `hostprep ready`
	// to its own flags, the profile's keys, and names what it cannot set.
	SettingNames map[string]string `json:"-"`
	// Redirection follows the server's redirection of writes
	// (REDIRECTION_RECOMMEND, 400, naming the DataNode that leads the
	// device's region), as the Java SessionPool's enableRedirection: the
	// worker's next operations go to a session on that node. Off: every
	// session writes through the node it is connected to (answers
	// recommending another node are still counted, Step.Redirects).
	Redirection bool `json:"redirection,omitempty"`
	// ConnectTimeout bounds the TCP connect of a new session, and again
	// its handshake (OpenSession, RequestStatementId) once connected.
	ConnectTimeout time.Duration `json:"connect_timeout"`
	// CallTimeout is the deadline of every call of the load (set on the
	// session's connection); a call still running then is a deadline
	// error and its session is closed. Opening a session is bounded by
	// ConnectTimeout instead.
	CallTimeout time.Duration `json:"call_timeout"`
	// FetchSize is the query fetch size (rows per fetch).
	FetchSize int `json:"fetch_size"`
	// Rate, when > 0, switches to an open-loop schedule: each worker starts
	// Rate operations/s on a fixed schedule and latency is measured from
	// each operation's scheduled start (wrk2). 0 means closed loop: each
	// worker starts its next operation when the last one returned.
	Rate float64 `json:"rate_per_worker,omitempty"`
	// Database, when set, is an existing database (root.x) the probe
	// writes under: devices root.x.hostprep_<run id>.d<N>, only time series
	// created, and only those deleted afterwards. Empty: the probe creates
	// (and deletes) its own database root.hostprep_<run id>.
	Database string `json:"database,omitempty"`
	// Shard, when set (K/N), makes this run shard K of a fleet run of N
	// load generators sharing RunID: each step's workers are split between
	// the shards (worker g of the fleet runs on shard g mod N + 1), each
	// shard writes only its own devices (d<g>) under the shared database,
	// deletes only its own series, and the last shard to finish deletes
	// the database. Step.Workers stays the fleet's worker count.
	Shard fleet.Shard `json:"shard,omitzero"`
	// Keep leaves the probe's database (or, with Database, its time
	// series) in place after the run.
	Keep bool `json:"keep,omitempty"`
	// RunID names the database root.hostprep_<RunID> (lower-case letters,
	// digits, underscore); default: random.
	RunID string `json:"run_id,omitempty"`
	// UnreachableAfter: when operations have failed only with connect
	// errors for this long (no operation reached the server), the server
	// is taken as gone and the run stops with an exit-3 error (default 5s).
	UnreachableAfter time.Duration `json:"unreachable_after"`
	// SampleInterval is how often pool utilisation is sampled (default 100ms).
	SampleInterval time.Duration `json:"sample_interval"`
	// Thresholds decide the verdict.
	Thresholds Thresholds `json:"thresholds"`
	// OnStep, if set, is called after each step (e.g. to print progress).
	OnStep func(Step) `json:"-"`
	// StopCleanup, if set, ends the clean-up's waits on the server when
	// it is done (the command's second Ctrl-C): the first interrupt (Run's
	// ctx) stops the load, but the clean-up goes on, for as long as the
	// admin deadline (AdminCallTimeout) per wait, until StopCleanup ends.
	StopCleanup context.Context `json:"-"`
	// onWarmup, if set, is called as the warm-up starts (tests time a
	// fault from it).
	onWarmup func()
	// onStepStart, if set, is called as each step starts, with its
	// workers (tests time a fault from it).
	onStepStart func(workers int)
	// clientPath, if set (tests), is the client path of every step that
	// can run on a loop (PathLoop, PathDirect) instead of choosePath's.
	clientPath string

	// complete is set in Defaults (so in every copy of it) and by
	// ConfigFromProfile: zero fields are then explicit, not defaults.
	complete bool
}

// Defaults are the values zero Config fields take.
var Defaults = Config{
	Host:             "127.0.0.1",
	Port:             6667,
	User:             "root",
	Password:         "root",
	Scenario:         ScenarioWrite,
	Steps:            []int{10, 20, 30, 40, 50},
	StepDuration:     30 * time.Second,
	Warmup:           time.Second,
	PoolSize:         200,
	WaitTimeout:      5 * time.Second,
	ConnectTimeout:   5 * time.Second,
	CallTimeout:      10 * time.Second,
	FetchSize:        1000,
	SampleInterval:   100 * time.Millisecond,
	UnreachableAfter: 5 * time.Second,
	complete:         true,
}

// withDefaults fills zero fields from Defaults; in a complete Config only
// Password (default root). Both fill a nil error-rate threshold with
// DefaultMaxErrorRate.
func (c Config) withDefaults() Config {
	d := Defaults
	if c.Thresholds.MaxErrorRate == nil {
		v := DefaultMaxErrorRate
		c.Thresholds.MaxErrorRate = &v
	}
	if c.complete {
		c.Password = cmp.Or(c.Password, d.Password)
		return c
	}
	c.Host = cmp.Or(c.Host, d.Host)
	c.Port = cmp.Or(c.Port, d.Port)
	c.User = cmp.Or(c.User, d.User)
	c.Password = cmp.Or(c.Password, d.Password)
	c.Scenario = cmp.Or(c.Scenario, d.Scenario)
	if len(c.Steps) == 0 {
		c.Steps = slices.Clone(d.Steps)
	}
	c.StepDuration = cmp.Or(c.StepDuration, d.StepDuration)
	c.Warmup = cmp.Or(c.Warmup, d.Warmup)
	c.PoolSize = cmp.Or(c.PoolSize, d.PoolSize)
	c.WaitTimeout = cmp.Or(c.WaitTimeout, d.WaitTimeout)
	c.ConnectTimeout = cmp.Or(c.ConnectTimeout, d.ConnectTimeout)
	c.CallTimeout = cmp.Or(c.CallTimeout, d.CallTimeout)
	c.FetchSize = cmp.Or(c.FetchSize, d.FetchSize)
	c.SampleInterval = cmp.Or(c.SampleInterval, d.SampleInterval)
	c.UnreachableAfter = cmp.Or(c.UnreachableAfter, d.UnreachableAfter)
	return c
}

// maxWorkers is the largest step.
func (c *Config) maxWorkers() int { return slices.Max(c.Steps) }

// Validate checks c as Run would use it (zero fields of a Config written
// from scratch take their defaults first; see Config) without contacting
// anything. Errors are exitcode.BadInput (exit 2) wrapping a
// *SettingError: one line naming the setting (SettingName: its profile
// key probe.iotdb.* where it has one), the value, the rule and the fix. Steps must be strictly increasing: the knee rule
// compares each step with the one before it, so a descending or repeated
// step would read a fall in concurrency as a knee.
func (c Config) Validate() error {
	d := c.withDefaults()
	return d.validate()
}

// SettingError is an invalid setting: Key is its iotdb.Resolve key
// ("pool_size", "thresholds.p95"), Value the value given, Rule what is
// wanted and Example a valid value. Its message names the setting by
// SettingName(Key) (probe.iotdb.<key> for a profile key), the default
// name every message of the library uses, never by a CLI flag: the CLI,
// which knows its flags, renames it (see Named).
type SettingError struct {
	Key, Value, Rule, Example string
	// Name is how the setting is named in the message; default
	// SettingName(Key).
	Name string
}

func (e *SettingError) Error() string {
	name := e.Name
	if name == "" {
		name = SettingName(e.Key)
	}
	msg := name + " " + e.Value + ": " + e.Rule
	if e.Example != "" {
		msg += ", e.g. " + e.Example
	}
	return msg
}

// SettingName is the library's own name of the setting key (a Resolve
// key, "address" or "output"), used where Config.SettingNames has none:
// probe.iotdb.<key> when the profile has the key ("probe.iotdb.pool_size");
// "probe.iotdb.host and probe.iotdb.port" for "address"; "the JSON result"
// for "output"; else a plain description naming the key ("the
// call_timeout setting"). It never names a CLI flag.
func SettingName(key string) string {
	if _, ok := profileField(reflect.ValueOf(profiles.IoTDBProbe{}), key); ok {
		return "probe.iotdb." + key
	}
	switch key {
	case "address":
		return "probe.iotdb.host and probe.iotdb.port"
	case "output":
		return "the JSON result"
	}
	return "the " + key + " setting"
}

// name is how the run's messages name the setting key (a Resolve key,
// "address" or "output"): the caller's SettingNames entry, else
// SettingName's default (for "address", the node_urls setting's name
// when NodeURLs is set). It is the only place a setting's name is decided.
func (c *Config) name(key string) string {
	if n := c.SettingNames[key]; n != "" {
		return n
	}
	if key == "address" && len(c.NodeURLs) > 0 {
		return SettingName("node_urls")
	}
	return SettingName(key)
}

// Named returns a copy of e named name (e.g. "--pool-size (probe.iotdb.pool_size)").
func (e *SettingError) Named(name string) *SettingError {
	c := *e
	c.Name = name
	return &c
}

// bad is a bad-input (exit 2) SettingError.
func bad(key string, value any, rule, example string) error {
	v := fmt.Sprint(value)
	if s, ok := value.(string); ok {
		v = strconv.Quote(s)
	}
	return exitcode.New(exitcode.BadInput, &SettingError{Key: key, Value: v, Rule: rule, Example: example})
}

// validate checks a defaulted Config; see Validate.
func (c *Config) validate() error {
	for _, v := range []func() error{c.validateTarget, c.validateSteps, c.validateTimings, c.validateFleet, c.validateThresholds} {
		if err := v(); err != nil {
			return err
		}
	}
	return nil
}

// validateTarget checks the scenario, host, port, node URLs and user.
func (c *Config) validateTarget() error {
	if !slices.Contains(Scenarios, c.Scenario) {
		return bad("scenario", c.Scenario, "want one of "+strings.Join(Scenarios, ", "), "")
	}
	if strings.TrimSpace(c.Host) == "" {
		return bad("host", c.Host, "want the DataNode's host name or address", "127.0.0.1")
	}
	if c.Port < 1 || c.Port > 65535 {
		return bad("port", c.Port, "want a TCP port 1..65535 (IoTDB's client RPC default is 6667)", "6667")
	}
	for _, u := range c.NodeURLs {
		if _, port, err := net.SplitHostPort(u); err != nil || port == "" {
			return bad("node_urls", u, "want host:port of a DataNode's client RPC", "10.0.0.1:6667,10.0.0.2:6667")
		}
	}
	if c.User == "" {
		return bad("user", c.User, "want the IoTDB user", "root")
	}
	return nil
}

// validateSteps checks that the steps are worker counts 1..10000 in
// increasing order.
func (c *Config) validateSteps() error {
	if len(c.Steps) == 0 {
		return bad("steps", "(empty)", "want worker counts in increasing order", "10,20,30")
	}
	for i, s := range c.Steps {
		if s < 1 || s > 10000 {
			return bad("steps", joinInts(c.Steps), fmt.Sprintf("every step is a worker count 1..10000, got %d", s), "")
		}
		if i > 0 && s <= c.Steps[i-1] {
			return bad("steps", joinInts(c.Steps), fmt.Sprintf("steps must increase (%d follows %d; the knee compares each step with the one before): list them in increasing order", s, c.Steps[i-1]),
				joinInts(sortedUnique(c.Steps)))
		}
	}
	return nil
}

// validateTimings checks the durations, pool size, fetch size and rate.
func (c *Config) validateTimings() error {
	for _, d := range []struct {
		key string
		v   time.Duration
		eg  string
	}{{"step_duration", c.StepDuration, "30s"}, {"wait_timeout", c.WaitTimeout, "5s"},
		{"connect_timeout", c.ConnectTimeout, "5s"}, {"call_timeout", c.CallTimeout, "10s"}} {
		if d.v <= 0 {
			return bad(d.key, d.v, `want a duration > 0 (0 is not "the default"; leave the setting out for that)`, d.eg)
		}
	}
	if c.UnreachableAfter <= 0 {
		return bad("unreachable_after", c.UnreachableAfter, "want a duration > 0", "5s")
	}
	if c.SampleInterval <= 0 {
		return bad("sample_interval", c.SampleInterval, "want a duration > 0", "100ms")
	}
	if c.PoolSize < 1 {
		return bad("pool_size", c.PoolSize, "want at least 1 session (one per worker of the largest step)", strconv.Itoa(max(1, slices.Max(c.Steps))))
	}
	if c.FetchSize < 1 || c.FetchSize > 1<<20 {
		return bad("fetch_size", c.FetchSize, "want 1..1048576 rows", "1000")
	}
	if c.Rate < 0 {
		return bad("rate", c.Rate, "want operations/s per worker > 0, or 0 for closed loop", "100")
	}
	return nil
}

// validateFleet checks the shard, run id and database of a fleet run.
func (c *Config) validateFleet() error {
	if c.Shard.On() {
		if c.RunID == "" {
			return bad("run_id", "(empty)", "every shard of a fleet run needs the same run id (the database root.hostprep_<run id> they share)", "fleet1")
		}
		if c.Steps[0] < c.Shard.N {
			return bad("steps", joinInts(c.Steps), fmt.Sprintf("with %s every step needs at least %s (one per shard)", plural.N(c.Shard.N, "shard"), plural.N(c.Shard.N, "worker")), joinInts([]int{c.Shard.N}))
		}
	}
	if c.Database != "" && !validPath(c.Database) {
		return bad("database", c.Database, "want an existing database's path (root followed by .-separated names of letters, digits and _)", "root.sg")
	}
	if c.RunID != "" {
		for _, r := range c.RunID {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
				return bad("run_id", c.RunID, "use lower-case letters, digits and _ only (it names root.hostprep_<id>)", "run1")
			}
		}
	}
	return nil
}

// validateThresholds checks the thresholds (fractions 0..1, durations and
// TPS >= 0, a target step that is one of the steps).
func (c *Config) validateThresholds() error {
	t := c.Thresholds
	if t.MaxErrorRate != nil && (*t.MaxErrorRate < 0 || *t.MaxErrorRate > 1) {
		return bad("thresholds.max_error_rate", *t.MaxErrorRate, "want a fraction 0..1 (0.01 = 1%)", "0.01")
	}
	if t.P95 < 0 {
		return bad("thresholds.p95", t.P95, "want a positive duration", "200ms")
	}
	if t.MinTPS < 0 {
		return bad("thresholds.min_tps", t.MinTPS, "want operations/s >= 0", "1000")
	}
	if t.TargetStep != 0 && !slices.Contains(c.Steps, t.TargetStep) {
		return bad("thresholds.target_step", t.TargetStep, "not one of the steps "+joinInts(c.Steps)+"; pick one of them (or 0 for the last)", "")
	}
	return nil
}

// Warnings are findings about a valid c that make the run's figures
// harder to read, one line each: steps with more workers than sessions
// in the pool (those workers wait for a session, so the pool, not the
// server, sets the throughput).
func (c Config) Warnings() []string {
	d := c.withDefaults()
	var over []int
	for _, s := range d.Steps {
		if d.Shard.Count(s) > d.PoolSize {
			over = append(over, s)
		}
	}
	if len(over) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("pool size %d is smaller than the %s at %s: workers wait for a session there, so the pool is measured, not the server; set pool size >= %d (a common sizing is 1.5 x the writers: %d)",
		d.PoolSize, plural.Noun(len(over), "step"), plural.List(over, "worker"), d.maxWorkers(), (3*d.maxWorkers()+1)/2)}
}

// targetStep is the worker count thresholds apply to.
func (c *Config) targetStep() int {
	if c.Thresholds.TargetStep != 0 {
		return c.Thresholds.TargetStep
	}
	return c.Steps[len(c.Steps)-1]
}

// ConfigFromProfile turns a profile's probe.iotdb section into a complete
// Config (see Config): a key the section sets (profiles.IoTDBProbe.Has)
// is taken as written, even 0 (pool_size: 0 is then refused by Validate);
// a key it leaves out takes its value from Defaults, and so do settings
// the profile has no key for (connect and call timeouts, warm-up). The
// password is not part of a profile: set Config.Password (the CLI reads
// --password-file or HOSTPREP_IOTDB_PASSWORD; default root). A nil p gives
// the zero Config (all defaults). Check the result with Validate.
func ConfigFromProfile(p *profiles.IoTDBProbe) Config {
	if p == nil {
		return Config{}
	}
	c := Resolve(&Config{}, p, nil, nil)
	c.Password = ""
	return c
}

// rawFromProfile copies the section's fields into a Config as written,
// without defaults (Resolve takes the keys the section sets from it).
func rawFromProfile(p *profiles.IoTDBProbe) Config {
	c := Config{
		Host:         p.Host,
		Port:         p.Port,
		User:         p.User,
		Scenario:     p.Scenario,
		Steps:        slices.Clone(p.Steps),
		StepDuration: p.StepDuration,
		PoolSize:     p.PoolSize,
		WaitTimeout:  p.WaitTimeout,
		FetchSize:    p.FetchSize,
		Thresholds: Thresholds{
			P95:        p.Thresholds.P95,
			TargetStep: p.Thresholds.TargetStep,
			MinTPS:     float64(p.Thresholds.MinTPS),
		},
	}
	if p.Thresholds.MaxErrorRate != nil {
		v := *p.Thresholds.MaxErrorRate
		c.Thresholds.MaxErrorRate = &v
	}
	return c
}

// CheckProfile applies Validate's rules to profile p's probe.iotdb
// section as ConfigFromProfile reads it, so `hostprep profiles validate`
// and `hostprep ready` refuse what the probe would refuse before anything
// runs. The error is exitcode.BadInput naming the key where the profile
// wrote it: "prof.yaml:9:16: probe.iotdb.pool_size 0: ...". nil when p
// has no probe.iotdb section or it is valid.
func CheckProfile(p *profiles.Profile) error {
	if p == nil || p.Probe.IoTDB == nil {
		return nil
	}
	err := ConfigFromProfile(p.Probe.IoTDB).Validate()
	var se *SettingError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		return exitcode.BadInputf("%s%v", p.Where(append([]string{"probe", "iotdb"}, strings.Split(se.Key, ".")...)...), se)
	default:
		return exitcode.BadInputf("%sprobe.iotdb: %v", p.Where("probe", "iotdb"), err)
	}
}

// validPath tells a plain IoTDB path: root followed by one or more
// .-separated nodes of letters, digits and _ (no wildcards, no quoting).
func validPath(p string) bool {
	nodes := strings.Split(p, ".")
	if len(nodes) < 2 || nodes[0] != "root" {
		return false
	}
	for _, n := range nodes[1:] {
		if n == "" {
			return false
		}
		for _, r := range n {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
				return false
			}
		}
	}
	return true
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func sortedUnique(v []int) []int {
	v = slices.Clone(v)
	slices.Sort(v)
	return slices.Compact(v)
}

// addr is the target as reported: host:port, or the node URLs joined by
// commas.
func (c *Config) addr() string {
	if len(c.NodeURLs) > 0 {
		return strings.Join(c.NodeURLs, ",")
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// cleanupStop is StopCleanup, or a context that never ends.
func (c *Config) cleanupStop() context.Context {
	if c.StopCleanup != nil {
		return c.StopCleanup
	}
	return context.Background()
}
