package preflight

import (
	"context"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/profiles"
)

// The runner's callers (cmd/hostprep, ready) name the facts and checks
// phases' types through these aliases, so that one import serves them.
type (
	// Facts is facts.Facts: what was gathered from the host.
	Facts = facts.Facts
	// Target is facts.Target: the load the host is judged for.
	Target = facts.Target
	// Role is facts.Role.
	Role = facts.Role
	// GatherOptions is facts.GatherOptions.
	GatherOptions = facts.GatherOptions
	// ChildOptions is facts.ChildOptions (the --active child).
	ChildOptions = facts.ChildOptions
	// ActiveResult is facts.ActiveResult.
	ActiveResult = facts.ActiveResult
	// CheckDef is checks.CheckDef.
	CheckDef = checks.CheckDef
	// Capacity is checks.Capacity.
	Capacity = checks.Capacity
)

// Roles, as facts names them.
const (
	Broker  = facts.Broker
	Loadgen = facts.Loadgen
	IoTDB   = facts.IoTDB
)

// DefaultConnRate is facts.DefaultConnRate (connections/s).
const DefaultConnRate = facts.DefaultConnRate

// ActiveChildArg and MinMeasuredSockets are facts' (see facts/active.go).
const (
	ActiveChildArg     = facts.ActiveChildArg
	MinMeasuredSockets = facts.MinMeasuredSockets
)

// Gather is facts.Gather with the checks' capacity arithmetic passed down
// (o.Capacity, when unset), which facts may not import.
func Gather(ctx context.Context, o GatherOptions) (*Facts, error) {
	if o.Capacity == nil {
		o.Capacity = checks.OwnerCapacity
	}
	return facts.Gather(ctx, o)
}

// TargetFromProfile is facts.TargetFromProfile.
func TargetFromProfile(p *profiles.Profile) (Target, error) { return facts.TargetFromProfile(p) }

// RunActiveChild is facts.RunActiveChild (the --active child's entry).
func RunActiveChild(ctx context.Context, o ChildOptions) (*ActiveResult, error) {
	return facts.RunActiveChild(ctx, o)
}

// ParseNofile is facts.ParseNofile.
func ParseNofile(s string) (soft, hard uint64, err error) { return facts.ParseNofile(s) }

// Checks is checks.Checks: every registered check.
func Checks() []CheckDef { return checks.Checks() }
