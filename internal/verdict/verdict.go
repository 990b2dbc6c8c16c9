// Package verdict holds the result shape shared by preflight checks, probe
// thresholds and `hostprep ready` steps: a check with an ID, a status and
// observed / expected / remedy text, and the rules that fold many statuses
// into one verdict.
package verdict

// Status of one check or of a whole run.
type Status string

const (
	Pass Status = "pass"
	Warn Status = "warn"
	Fail Status = "fail"
	Skip Status = "skip"
)

// rank orders statuses by severity for Worst.
func rank(s Status) int {
	switch s {
	case Fail:
		return 3
	case Warn:
		return 2
	case Pass:
		return 1
	}
	return 0 // Skip or unknown
}

// Check is one finding: a preflight check, a probe threshold, a tune step.
type Check struct {
	// ID is stable and machine-readable (e.g. "fd.soft", "mqtt.loss"); it is
	// what --ignore takes.
	ID string `json:"id"`
	// Status is pass, warn, fail or skip.
	Status Status `json:"status"`
	// Summary is one line for humans, numbers with units.
	Summary string `json:"summary"`
	// Observed is what was seen on the host or in the run, with units.
	Observed string `json:"observed,omitempty"`
	// Expected is what the target needs, with units.
	Expected string `json:"expected,omitempty"`
	// Remedy says how to fix a warn/fail (a command, a key and value).
	Remedy string `json:"remedy,omitempty"`
	// Ignored is true when the check failed but the caller asked to
	// ignore it (--ignore): Status is then Warn, so a script can tell an
	// ignored failure from a real warning.
	Ignored bool `json:"ignored,omitempty"`
}

// Worst returns the most severe status among checks: fail > warn > pass >
// skip. No checks (or only skips) gives Pass.
func Worst(checks []Check) Status {
	w := Skip
	for _, c := range checks {
		if rank(c.Status) > rank(w) {
			w = c.Status
		}
	}
	if w == Skip {
		return Pass
	}
	return w
}
