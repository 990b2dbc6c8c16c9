// Package ready is `hostprep ready`: apply a profile (tune), run the
// preflight for the profile's target, run the probes the profile names,
// and fold it all into one verdict — READY, READY WITH WARNINGS or NOT
// READY — naming the failing steps. It is the command Ansible,
// cloud-init, systemd and CI run once per host (see examples/).
//
// The result is an outcome.Result (JSON: {"host", "profile", "verdict",
// "changed", "steps": [...]}); ready itself prints nothing to stdout and
// logs through log/slog.
package ready

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/probes"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/ready/outcome"
	"github.com/hostprep/hostprep/tune"
)

// Result is one host's ready run (see package outcome for the JSON).
type Result = outcome.Result

// Options are the inputs of Run. Only Profile is required.
type Options struct {
	// Profile is a built-in name or a YAML file; Sets are --set
	// key=value overrides (see profiles.Load).
	Profile string
	Sets    []string
	// Probes is what ready's flags give each probe, by its Name
	// (--NAME, --NAME-user, --NAME-password-file): the server it loads
	// and the login, each "" for the profile's or the probe's default
	// (see the probe's Ready). A probe not listed runs as the profile
	// says. The passwords are never printed or logged; DryRun below is
	// every probe's.
	Probes map[string]loadprobe.Target
	// Sockets overrides the preflight target's number of sockets.
	Sockets int
	// NoTune skips the tune step: only check and probe.
	NoTune bool
	// DryRun plans the tuning without applying it and runs only what
	// touches nothing: the (passive) preflight and a probe that loads
	// only this process (the MQTT probe's embedded broker on loopback).
	// Probes against an external target (a flag's or the profile's) are
	// skipped: they would put load on, or write to, another system. Its verdict is DRY RUN (exit 0) when nothing that ran
	// failed, never READY, and NOT READY when a step that ran failed.
	DryRun bool
	// Tune says where the host is (tests point it at a sandbox); the zero
	// value is the live host.
	Tune tune.Env
	// Host names this host in the result; "" = os.Hostname().
	Host string
	// Progress gets the probes' progress lines (usually os.Stderr); nil
	// for none. ProgressTTY makes them an updating line.
	Progress    io.Writer
	ProgressTTY bool
}

// Step runners; tests replace them to produce faults a real host cannot
// (a failing tune) without touching the host.
type runners struct {
	tune      func(ctx context.Context, p *profiles.Profile, o Options) outcome.Step
	preflight func(ctx context.Context, p *profiles.Profile, o Options) outcome.Step
	// probe runs one probe's resolved run (probeStep).
	probe func(ctx context.Context, r loadprobe.Run, o Options) outcome.Step
	// recheck re-reads, after the probes, what tune applied (see
	// recheckTune).
	recheck func(p *profiles.Profile, o Options) []verdict.Check
}

var real = runners{tune: tuneStep, preflight: preflightStep, probe: probeStep, recheck: recheckTune}

// Run loads the profile, applies it (unless NoTune; only plans in
// DryRun), runs the preflight and the probes, and returns the result.
//
// The result is returned whenever the profile loaded, together with an
// error carrying the exit code when the host is not ready:
// exitcode.Failed (1) when a check or threshold failed,
// exitcode.Environment (3) when a step could not run (not root, lock
// held, target unreachable), exitcode.BadInput (2) when the profile does
// not fit this host. A bad Options value or profile returns a nil result
// and an exitcode.BadInput error; nothing is touched then. When the tune
// step fails, later steps are not run. ready never rolls anything back:
// what tune applied stays applied (tune apply itself undoes a half-made
// change), whatever the verdict.
func Run(ctx context.Context, o Options) (*Result, error) {
	return run(ctx, o, real)
}

func run(ctx context.Context, o Options, rn runners) (*Result, error) {
	p, err := loadProfile(o)
	if err != nil {
		return nil, err
	}
	if err := somethingToCheck(p, o); err != nil {
		return nil, err
	}
	host := o.Host
	if host == "" {
		if host, err = os.Hostname(); err != nil {
			host = "unknown"
		}
	}
	res := &Result{Host: host, Profile: p.Name, DryRun: o.DryRun, Started: time.Now()}
	log := slog.With("profile", p.Name)
	timed := func(name string, f func() outcome.Step) outcome.Step { return timedStep(ctx, log, name, f) }

	// 1. tune
	var ts outcome.Step
	if o.NoTune {
		ts = outcome.Step{Name: outcome.StepTune, Verdict: verdict.Skip, Summary: "--no-tune: the host's tuning was neither checked nor changed"}
	} else {
		ts = timed(outcome.StepTune, func() outcome.Step { return rn.tune(ctx, p, o) })
	}
	res.Steps = append(res.Steps, ts)
	res.Changed = ts.Changed

	later := []string{outcome.StepPreflight}
	for _, pr := range probes.All {
		later = append(later, loadprobe.StepName(pr.Name()))
	}
	if ts.Verdict == verdict.Fail {
		for _, name := range later {
			res.Steps = append(res.Steps, outcome.Step{Name: name, Verdict: verdict.Skip,
				Summary: "not run: the tune step failed, so the host is not in the state this step would check"})
		}
		return finish(res)
	}

	// 2. preflight
	res.Steps = append(res.Steps, timed(outcome.StepPreflight, func() outcome.Step { return rn.preflight(ctx, p, o) }))

	// 3. The probes, in the order registered (loadprobe/probes).
	for _, pr := range probes.All {
		name := loadprobe.StepName(pr.Name())
		r, skip, err := probeRun(pr, p, o)
		switch {
		case err != nil: // checkProbes refused it before anything ran
			res.Steps = append(res.Steps, timed(name, func() outcome.Step { return errStep(err) }))
		case skip != "":
			res.Steps = append(res.Steps, outcome.Step{Name: name, Verdict: verdict.Skip, Summary: skip})
		default:
			res.Steps = append(res.Steps, timed(name, func() outcome.Step { return rn.probe(ctx, r, o) }))
		}
	}

	// 4. The tuning is still in force: nothing (a `tune rollback`, another
	// tool, a package's sysctl.d) undid it while preflight and the probes
	// ran. A drift fails the tune step. It runs after an interrupt too (it
	// only reads): a probe interrupted in its clean-up, after every step,
	// keeps its verdict, and the READY that may give rests on this check.
	if !o.NoTune && !o.DryRun {
		recheck(&res.Steps[0], rn.recheck(p, o))
	}
	return finish(res)
}

// somethingToCheck refuses a run in which every step would be skipped
// (--no-tune and a profile with no preflight target and no probe, and no
// --sockets or probe server flag): its READY would rest on nothing. The
// error is exitcode.BadInput and names what to add.
func somethingToCheck(p *profiles.Profile, o Options) error {
	if !o.NoTune {
		return nil
	}
	if _, skip := preflightTarget(p, o); skip == "" {
		return nil
	}
	for _, pr := range probes.All {
		if _, skip, err := probeRun(pr, p, o); err == nil && skip == "" {
			return nil
		}
	}
	var flags []string
	for _, pr := range probes.All {
		flags = append(flags, "--"+pr.Name()+" "+pr.ReadyFlags().AddrArg)
	}
	return exitcode.BadInputf("ready --no-tune --profile %s: nothing to check: the profile has no preflight target and no probe, and --no-tune skips the tuning; drop --no-tune, pass --sockets N, %s, or add a preflight or probe section to the profile", p.Source, orList(flags))
}

// orList joins words as "a", "a or b", "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// loadProfile checks the options and loads the profile with its --set
// overrides; a bad IoTDB probe setting or a probe the options cannot run
// is refused here, before anything is tuned. Errors are exitcode.BadInput.
func loadProfile(o Options) (*profiles.Profile, error) {
	if err := validate(o); err != nil {
		return nil, err
	}
	// --sockets overrides the profile's preflight.sockets, after --set.
	var flags []profiles.Override
	if o.Sockets > 0 {
		flags = append(flags, profiles.Override{Flag: fmt.Sprintf("--sockets %d", o.Sockets), Key: "preflight.sockets", Value: strconv.Itoa(o.Sockets)})
	}
	p, err := profiles.LoadWith(o.Profile, o.Sets, flags)
	if err != nil {
		return nil, err
	}
	if err := checkProbes(p, o); err != nil {
		return nil, err
	}
	return p, nil
}

// timedStep runs step name through f, naming and timing it (DurationMS)
// and logging its start and end; a step whose Verdict f left empty gets
// the worst of its checks. Once ctx is done (Ctrl-C, SIGTERM) the step
// is not run and fails with exit code 3: the run is incomplete, so the
// host is not known to be ready.
func timedStep(ctx context.Context, log *slog.Logger, name string, f func() outcome.Step) outcome.Step {
	if err := ctx.Err(); err != nil {
		return outcome.Step{Name: name, Verdict: verdict.Fail, Summary: "not run: interrupted",
			Error: "interrupted before this step: " + err.Error(), ExitCode: exitcode.Environment}
	}
	log.Info("ready: step starts", "step", name)
	t0 := time.Now()
	s := f()
	s.Name = name
	s.DurationMS = float64(time.Since(t0).Microseconds()) / 1000
	if s.Verdict == "" {
		s.Verdict = verdict.Worst(s.Checks)
	}
	log.Info("ready: step done", "step", name, "verdict", s.Verdict, "summary", s.Summary, "error", s.Error, "duration_ms", s.DurationMS)
	return s
}

// recheck adds the end-of-run checks to the tune step; a failed one makes
// the step fail (exit 1).
func recheck(ts *outcome.Step, cs []verdict.Check) {
	ts.Checks = append(ts.Checks, cs...)
	var drifted int
	for _, c := range cs {
		if c.Status == verdict.Fail {
			drifted++
		}
	}
	if drifted > 0 {
		ts.Verdict, ts.ExitCode = verdict.Fail, exitcode.Failed
		ts.Summary += "; " + plural.N(drifted, "value") + " no longer as applied at the end of the run (undone while ready ran?)"
	}
}

// finish folds the verdict and maps it to the run's error (exit code).
func finish(res *Result) (*Result, error) {
	res.Verdict = outcome.VerdictOf(res.Steps, res.DryRun)
	res.Failing, res.Warnings = outcome.Findings(res.Steps)
	res.Skipped = outcome.SkippedSteps(res.Steps)
	res.DurationMS = float64(time.Since(res.Started).Microseconds()) / 1000
	code := exitcode.OK
	var couldNot []string
	for _, s := range res.Steps {
		if s.Verdict != verdict.Fail {
			continue
		}
		switch s.ExitCode {
		case exitcode.BadInput:
			code = exitcode.BadInput
			couldNot = append(couldNot, s.Name+": "+s.Error)
		case exitcode.Environment:
			if code != exitcode.BadInput {
				code = exitcode.Environment
			}
			couldNot = append(couldNot, s.Name+": "+s.Error)
		default:
			if code == exitcode.OK {
				code = exitcode.Failed
			}
		}
	}
	switch code {
	case exitcode.OK:
		return res, nil
	case exitcode.Failed:
		return res, exitcode.Failedf("%s: %s", res.Verdict, strings.Join(res.Failing, "; "))
	}
	return res, exitcode.New(code, fmt.Errorf("%s: could not run %s", res.Verdict, strings.Join(couldNot, "; ")))
}

// validate checks the flags before anything is loaded or touched.
func validate(o Options) error {
	if o.Profile == "" {
		return exitcode.BadInputf("--profile is required: a built-in name (hostprep profiles list) or a YAML file, e.g. --profile ready-small")
	}
	if o.Sockets < 0 {
		return exitcode.BadInputf("--sockets %d: want a positive number of sockets, e.g. --sockets 100000", o.Sockets)
	}
	for _, pr := range probes.All {
		if err := pr.CheckTarget(o.target(pr.Name())); err != nil {
			return err
		}
	}
	return nil
}

// target is what ready's flags give the probe named name (Probes), with
// --dry-run, which is every probe's.
func (o Options) target(name string) loadprobe.Target {
	t := o.Probes[name]
	t.DryRun = o.DryRun
	return t
}
