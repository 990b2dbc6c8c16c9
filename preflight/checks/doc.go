// Package checks is preflight's second phase: each check is a pure
// function of facts.Facts and facts.Target returning a verdict.Check
// (observed / expected / status), registered by a stable ID, one file
// per family (check_*.go); CapacityOf is the smallest per-resource
// ceiling in sockets. It imports facts and never remedies.
package checks
