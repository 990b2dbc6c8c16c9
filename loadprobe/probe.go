// Package loadprobe is what a probe is: a short, calibrated load against
// one kind of server (an MQTT broker, IoTDB) that ends in a verdict. Each
// probe lives in its own package (loadprobe/mqtt, loadprobe/iotdb) and
// offers a Probe; loadprobe/probes lists them, and `hostprep probe`,
// `hostprep ready` and `hostprep report` loop over that list rather than
// naming a probe. docs/probes.md says how to add one.
//
// The shared measuring parts sit beside it: loadprobe/latency
// (HdrHistogram summaries), loadprobe/pacer (one schedule for every rate
// shape), loadprobe/fleet (shards of a run over several hosts).
package loadprobe

import (
	"context"
	"html/template"
	"io"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/hostprep/hostprep/profiles"
	"github.com/spf13/pflag"
)

// Probe is one kind of load test.
type Probe interface {
	// Name is the probe's name ("mqtt"): its profile section is
	// probe.NAME, its command `hostprep probe NAME`, its `hostprep
	// ready` step StepName(NAME) and its ready flags --NAME, --NAME-user
	// and --NAME-password-file.
	Name() string
	// Title names the probe in reports ("MQTT probe").
	Title() string
	// CheckProfile refuses a profile whose probe.NAME section the probe
	// would refuse (exitcode.BadInput at the value's file:line:col); a
	// profile without the section is fine.
	CheckProfile(p *profiles.Profile) error
	// CheckTarget refuses ready's flags for this probe (t.Addr's form)
	// before anything is loaded or touched: exitcode.BadInput naming the
	// flag and the fix.
	CheckTarget(t Target) error
	// Ready resolves the run `hostprep ready` makes, with the same
	// resolver as the probe's own command: the probe's built-in
	// defaults, then the profile's probe.NAME section, then what ready's
	// flags give (t). skip, when not "", says why no run is made ("not
	// run: ..."): no target, or a dry run that would load an external
	// server. err is a setting the probe refuses (exitcode.BadInput),
	// named as ready offers it.
	Ready(p *profiles.Profile, t Target) (r Run, skip string, err error)
	// Aim is p as ready's --NAME addr (checked by CheckTarget) points it:
	// a copy whose probe.NAME section loads addr, so that what reads the
	// profile (the preflight's target: a server on this host names the
	// listener to judge) sees the server the flag names. p is unchanged.
	Aim(p *profiles.Profile, addr string) *profiles.Profile
	// ReadyFlags words ready's flags for this probe.
	ReadyFlags() ReadyFlags
	// InProfile says whether the profile has a probe.NAME section.
	InProfile(p *profiles.Profile) bool
	// Command is a fresh `hostprep probe NAME`: its help, its own flags
	// and its resolver (a new value for every command built).
	Command() Command
	// Decode reads one of the probe's results as its JSON was written
	// (`hostprep probe NAME -o json`, or a ready step's "result"); ok is
	// false when b is not one.
	Decode(b []byte) (r Result, ok bool)
}

// StepName is the `hostprep ready` step of the probe named name
// ("probe-mqtt").
func StepName(name string) string { return "probe-" + name }

// Target is what `hostprep ready`'s flags give one probe.
type Target struct {
	// Addr is the server (--NAME: a broker URL, host:port); "" takes the
	// profile's, or the probe's own default.
	Addr string
	// User and Password log in (--NAME-user, --NAME-password-file); ""
	// takes the profile's or the probe's default. Password is never
	// printed or logged.
	User, Password string
	// DryRun: the run must touch nothing outside this host (ready
	// --dry-run); a probe that would load an external server skips.
	DryRun bool
}

// ReadyFlags is the wording of ready's flags for one probe: --NAME
// (AddrArg names its value in usage, "URL"), --NAME-user and
// --NAME-password-file, whose password is read from $PasswordEnv when
// the flag is not given.
type ReadyFlags struct {
	Addr, AddrArg, User, PasswordFile string
	PasswordEnv                       string
}

// Command is a probe's own command, `hostprep probe NAME`, as a value
// the CLI builds its command from; it knows no CLI library beyond the
// flag set. The flags every probe command has (--profile,
// --password-file, --shard, --output, --csv, --html) are the CLI's,
// worded by Help.
type Command interface {
	// Help is the command's help text and the wording of the common
	// flags.
	Help() Help
	// Flags declares the probe's own flags on fs (the server, the load,
	// the thresholds), bound to this command's settings.
	Flags(fs *pflag.FlagSet)
	// Resolve is the run the command line asks for, with the same
	// resolver ready uses: the probe's built-in defaults, then the
	// profile's probe.NAME section (p; nil without --profile), then each
	// flag given explicitly (changed), with the --shard and the
	// password. Its errors are bad input (exit 2) naming the flag.
	Resolve(p *profiles.Profile, changed func(flag string) bool, shard fleet.Shard, password string) (Run, error)
}

// Help is a probe command's help: cobra's Short, Long and Example, the
// environment variable holding the password when --password-file is
// not given, and the usage of the common flags that differ per probe.
type Help struct {
	Short, Long, Example string
	PasswordEnv          string
	PasswordFile         string // usage of --password-file
	Shard                string // usage of --shard
	CSV, HTML            string // usage of --csv and --html
}

// Run is a resolved run of a probe, ready to start.
type Run interface {
	// Validate refuses settings the probe cannot run with
	// (exitcode.BadInput naming the setting and the fix).
	Validate() error
	// Run loads the server until the run ends or ctx ends (Ctrl-C,
	// SIGTERM), reporting progress to env. The result is nil when the
	// run failed before measuring; else it is returned with any error
	// (an interrupted run's partial result says INCOMPLETE).
	Run(ctx context.Context, env Env) (Result, error)
}

// Env is what a run is given besides its settings.
type Env struct {
	// Progress gets the run's progress lines (nil: none); TTY makes them
	// one updating line.
	Progress io.Writer
	TTY      bool
	// Again ends on a second Ctrl-C or SIGTERM: a probe that cleans up
	// after the load (IoTDB deletes its database) stops waiting then.
	// nil: never.
	Again context.Context
}

// Result is one probe run's outcome. Its JSON (encoding/json) is the
// probe's --output json and the ready step's "result".
type Result interface {
	// WriteText writes the human report; WriteCSV the probe's series (per
	// second, or per step); WriteHTML a self-contained HTML page, and
	// HTMLSection the same as a section of `hostprep report`'s page.
	WriteText(w io.Writer) error
	WriteCSV(w io.Writer) error
	WriteHTML(w io.Writer) error
	HTMLSection() (template.HTML, error)
	// Judged is the run's verdict (the worst of its checks) and its
	// checks: every threshold, pass or not.
	Judged() (verdict.Status, []verdict.Check)
	// Measured says whether the run measured anything: a result without
	// a measurement has no report worth a section.
	Measured() bool
	// Headline is the run in one line and its headline numbers, as
	// `hostprep ready` shows a step.
	Headline() Headline
	// MarkIncomplete records why the run was cut short (an interrupt, a
	// lost server), unless the result says so already, so that its
	// reports say INCOMPLETE and why.
	MarkIncomplete(reason string)
}

// Headline is a result as one `hostprep ready` step shows it.
type Headline struct {
	// Summary is one line for humans.
	Summary string
	// Metrics are the headline numbers by name, units in the name
	// ("ack_p95_ms", "tps"); see ready/outcome's Metric* names.
	Metrics map[string]float64
	// Series are chart data by name ("e2e_latency_ms": X percentile, Y
	// ms; "tps": X workers).
	Series map[string][]Point
}

// Point is one x/y sample of a Headline series.
type Point struct{ X, Y float64 }

// Percentiles is a latency summary's percentiles as series points (X =
// percentile 50..100, Y = ms); nil when nothing was measured.
func Percentiles(s latency.Summary) []Point {
	if s.Count == 0 {
		return nil
	}
	return []Point{{50, s.P50}, {90, s.P90}, {95, s.P95}, {99, s.P99}, {99.9, s.P999}, {100, s.Max}}
}
