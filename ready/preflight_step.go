package ready

import (
	"context"
	"fmt"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/probes"
	"github.com/hostprep/hostprep/preflight"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/ready/outcome"
)

// preflightTarget is the profile's preflight target with --sockets
// applied (and each probe's server flag, --mqtt or --iotdb: a server on
// this host is the listener to judge, as the profile's would be), or why the step is skipped. A profile without a preflight
// section checked with --sockets is checked as a broker (the role with
// no per-destination port arithmetic).
func preflightTarget(p *profiles.Profile, o Options) (preflight.Target, string) {
	for _, pr := range probes.All {
		if a := o.Probes[pr.Name()].Addr; a != "" {
			p = pr.Aim(p, a)
		}
	}
	t, err := preflight.TargetFromProfile(p)
	if err != nil {
		if o.Sockets == 0 {
			return t, "not run: profile " + p.Name + " has no preflight target (add `preflight: {sockets: N, role: broker}` or pass --sockets N)"
		}
		t = preflight.Target{Role: preflight.Broker}
	}
	if o.Sockets > 0 {
		t.Sockets = o.Sockets
	}
	return t, ""
}

// preflightStep runs the passive preflight (it reads, never changes,
// and needs no root) for the profile's target.
func preflightStep(ctx context.Context, p *profiles.Profile, o Options) outcome.Step {
	t, skip := preflightTarget(p, o)
	if skip != "" {
		return outcome.Step{Verdict: verdict.Skip, Summary: skip}
	}
	r, err := preflight.Run(ctx, preflight.Options{Target: t})
	if err != nil {
		return errStep(err)
	}
	s := outcome.Step{Verdict: r.Verdict, Checks: r.Checks, Result: r,
		Metrics: map[string]float64{
			outcome.MetricCapacitySockets: float64(r.Capacity.Sockets),
			outcome.MetricTargetSockets:   float64(r.Target.Sockets),
		}}
	var fails, warns int
	for _, c := range r.Checks {
		switch c.Status {
		case verdict.Fail:
			fails++
		case verdict.Warn:
			warns++
		}
	}
	s.Summary = fmt.Sprintf("%s as %s: %s, %d failed, %d warned; capacity about %s (limited by %s)",
		plural.N(r.Target.Sockets, "socket"), r.Target.Role, plural.N(len(r.Checks), "check"), fails, warns,
		plural.N(r.Capacity.Sockets, "socket"), r.Capacity.LimitedBy)
	if r.Verdict == verdict.Fail {
		s.ExitCode = exitcode.Failed
	}
	return s
}
