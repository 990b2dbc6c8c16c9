package ready

import (
	"context"
	"fmt"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/probes"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/ready/outcome"
	"github.com/hostprep/hostprep/tune"
)

// errStep is a step that could not run or failed with an error.
func errStep(err error) outcome.Step {
	return outcome.Step{Verdict: verdict.Fail, Summary: "could not run", Error: err.Error(), ExitCode: exitcode.Code(err)}
}

// probeOutcome finishes a probe's step: a failed verdict is exit 1; a
// run error is the step's error and exit code, and the whole step when
// the probe returned no result (ran is false).
func probeOutcome(s outcome.Step, ran bool, err error) outcome.Step {
	if ran && s.Verdict == verdict.Fail {
		s.ExitCode = exitcode.Failed
	}
	if err != nil {
		e := errStep(err)
		if !ran {
			return e
		}
		s.Verdict, s.Error, s.ExitCode = verdict.Fail, e.Error, e.ExitCode
	}
	return s
}

// tuneChecks turns a tune result into checks: one per change made (pass),
// one per key or file tune skipped with its reason (pass: already as
// wanted), one per warning, one per failed --pid/--service prlimit.
func tuneChecks(r *tune.Result) []verdict.Check {
	var cs []verdict.Check
	for _, c := range r.Changes {
		cs = append(cs, verdict.Check{ID: "tune." + c.Layer + "." + c.Target(), Status: verdict.Pass,
			Summary: fmt.Sprintf("%s %s: %s -> %s", c.Layer, c.Target(), c.From, c.To), Observed: c.From, Expected: c.To})
	}
	for _, s := range r.Skipped {
		cs = append(cs, verdict.Check{ID: "tune.skipped." + s.Layer + "." + s.Target(), Status: verdict.Pass,
			Summary: fmt.Sprintf("%s %s: no change (%s)", s.Layer, s.Target(), s.Reason), Observed: s.Current})
	}
	for i, w := range r.Warnings {
		cs = append(cs, verdict.Check{ID: fmt.Sprintf("tune.warning.%d", i+1), Status: verdict.Warn, Summary: w})
	}
	for _, p := range r.Processes {
		if p.Error != "" {
			cs = append(cs, verdict.Check{ID: fmt.Sprintf("tune.prlimit.%d", p.PID), Status: verdict.Fail,
				Summary: p.Error, Observed: p.Now, Expected: p.To})
		}
	}
	return uniqueIDs(cs)
}

// plannedChecks marks the first n checks of a dry run's tuneChecks (one
// per planned change) skipped: a change planned is not a change made, so
// JUnit shows it as <skipped/>, not as a passing case.
func plannedChecks(cs []verdict.Check, n int) []verdict.Check {
	for i := range cs[:n] {
		cs[i].Status = verdict.Skip
		cs[i].Summary = "planned, not applied: " + cs[i].Summary
	}
	return cs
}

// uniqueIDs makes every check ID distinct (a repeated one gets "#2",
// "#3", ... in order): one file can be both changed and kept for another
// item (soft and hard nofile, "*" and root lines), and a JUnit test case
// or Prometheus series must not appear twice (node_exporter rejects the
// whole textfile).
func uniqueIDs(cs []verdict.Check) []verdict.Check {
	seen := map[string]int{}
	for i := range cs {
		id := cs[i].ID
		seen[id]++
		if n := seen[id]; n > 1 {
			cs[i].ID = fmt.Sprintf("%s#%d", id, n)
		}
	}
	return cs
}

func tuneStep(ctx context.Context, p *profiles.Profile, o Options) outcome.Step {
	opts := tune.Options{Env: o.Tune}
	if o.DryRun {
		pl, err := tune.PlanFor(p, opts)
		if err != nil {
			return errStep(err)
		}
		r := pl.Report()
		s := outcome.Step{Checks: plannedChecks(tuneChecks(&r.Result), len(r.Changes)), Result: r,
			Metrics: map[string]float64{outcome.MetricChanges: float64(len(r.Changes))}}
		s.Summary = fmt.Sprintf("dry run: would make %s (%s shows %s); nothing applied", plural.N(len(r.Changes), "change"), o.Tune.Suggest("plan", tune.ProfileArgs(p)...), plural.Them(len(r.Changes)))
		if r.WouldChange == 0 {
			s.Summary = "dry run: no change needed, the host already matches " + p.Name
		} else if w := verdict.Worst(s.Checks); w == verdict.Pass || w == verdict.Skip {
			// The host does not match the profile yet: nothing here
			// passed, the tuning was skipped.
			s.Verdict = verdict.Skip
		}
		return s
	}
	r, err := tune.Apply(ctx, p, opts)
	if err != nil {
		s := errStep(err)
		if r != nil {
			s.Result, s.Changed, s.Checks = *r, r.Changed, tuneChecks(r)
		}
		return s
	}
	s := outcome.Step{Changed: r.Changed, Checks: tuneChecks(r), Result: *r,
		Metrics: map[string]float64{outcome.MetricChanges: float64(len(r.Changes))}}
	if r.Changed {
		s.Summary = fmt.Sprintf("%s applied (%s undoes %s)", plural.N(len(r.Changes), "change"), o.Tune.Suggest("rollback"), plural.Them(len(r.Changes)))
	} else {
		s.Summary = "no change: the host already matches " + p.Name
	}
	if len(r.Restart) > 0 {
		s.Summary += "; restart " + strings.Join(r.Restart, ", ") + " to pick up the new limits"
	}
	return s
}

// recheckTune re-plans the profile against the host at the end of a run
// (tune.NewPlan reads every key and owned file again): right after a
// successful apply the plan is empty, so each change it now lists is a
// value undone while ready ran — a `hostprep tune rollback`, another
// tool, a package's sysctl.d — and is a failed "tune.drift.LAYER.TARGET"
// check (observed: the live value, expected: the profile's). With no
// drift it is one passed "tune.still-applied" check. A plan that cannot
// be made is a warning: the run's result stands, unconfirmed.
func recheckTune(p *profiles.Profile, o Options) []verdict.Check {
	pl, err := tune.NewPlan(p, o.Tune)
	if err != nil {
		return []verdict.Check{{ID: "tune.still-applied", Status: verdict.Warn,
			Summary: "could not re-read the tuning at the end of the run: " + err.Error()}}
	}
	if !pl.Changed {
		return []verdict.Check{{ID: "tune.still-applied", Status: verdict.Pass,
			Summary: "re-read at the end of the run: the host still matches " + p.Name}}
	}
	var cs []verdict.Check
	for _, c := range pl.Changes {
		cs = append(cs, verdict.Check{ID: "tune.drift." + c.Layer + "." + c.Target(), Status: verdict.Fail,
			Summary:  fmt.Sprintf("%s %s is %s again at the end of the run, not %s as applied: undone while ready ran (hostprep tune rollback, another tool?)", c.Layer, c.Target(), c.From, c.To),
			Observed: c.From, Expected: c.To,
			Remedy: "find what reset it (hostprep tune status shows the drift), then run hostprep ready again"})
	}
	return cs
}

// probeRun is the run of probe pr ready makes, or why it is skipped
// (pr.Ready: the probe's one resolver, over the profile and ready's
// flags for it).
func probeRun(pr loadprobe.Probe, p *profiles.Profile, o Options) (loadprobe.Run, string, error) {
	return pr.Ready(p, o.target(pr.Name()))
}

// checkProbes refuses, before anything is tuned, a probe ready would run
// with a setting the probe itself refuses (Probe.CheckProfile: the
// profile's file:line:col and key; then the run as ready's flags change
// it): exitcode.BadInput naming the setting and the rule. Dry runs are
// checked too.
func checkProbes(p *profiles.Profile, o Options) error {
	for _, pr := range probes.All {
		if err := pr.CheckProfile(p); err != nil {
			return err
		}
	}
	for _, pr := range probes.All {
		if _, _, err := probeRun(pr, p, o); err != nil {
			return err
		}
	}
	return nil
}

// probeStep runs one probe and makes its step: the result's verdict,
// checks and headline (summary, metrics, series).
func probeStep(ctx context.Context, r loadprobe.Run, o Options) outcome.Step {
	res, err := r.Run(ctx, loadprobe.Env{Progress: o.Progress, TTY: o.ProgressTTY})
	var s outcome.Step
	if res != nil {
		s = resultStep(res)
	}
	return probeOutcome(s, res != nil, err)
}

// resultStep is the ready step of a probe's result.
func resultStep(res loadprobe.Result) outcome.Step {
	v, checks := res.Judged()
	h := res.Headline()
	s := outcome.Step{Verdict: v, Checks: checks, Result: res, Summary: h.Summary, Metrics: h.Metrics}
	if len(h.Series) > 0 {
		s.Series = map[string][]outcome.Point{}
		for name, pts := range h.Series {
			for _, pt := range pts {
				s.Series[name] = append(s.Series[name], outcome.Point{X: pt.X, Y: pt.Y})
			}
		}
	}
	return s
}
