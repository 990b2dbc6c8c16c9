// Package remedies is preflight's third phase: each check's remedy is a
// list of changes to the Facts (sysctl K=V, LimitNOFILE in a unit, more
// source addresses, restart a unit), printed only when the checks, run
// again on the changed Facts, show the check flips and nothing that
// passed fails (ProveRemedies).
package remedies
