// Package preflight answers "can this host carry N sockets, and if not,
// why not?" before anyone runs a load test.
//
// The shape follows kubeadm's preflight and node_exporter's collectors,
// in three phases, one package each; a phase never imports a later one
// (internal/codecheck's TestImportLayers):
//
//   - preflight/facts gathers the Facts once (gather*.go) from
//     procfs/sysfs under a configurable root, gopsutil for CPU and memory,
//     adjtimex for the clock, and records and replays them. A host
//     recorded as YAML (the `host:` block of the field cases in
//     preflight/testdata/cases, see facts.LoadHostYAML) gives the same
//     Facts, so a bug report is a test.
//   - preflight/checks: every check (check_*.go, one file per family) is
//     a pure function of Facts and Target returning a verdict.Check with
//     observed / expected / remedy text, registered by a stable ID
//     (fd.soft, ports.ephemeral, ...) which is what --ignore takes; the
//     capacity arithmetic lives there too.
//   - preflight/remedies: each remedy is a change to the Facts, printed
//     only once the checks, run again on the changed Facts, prove it.
//
// This package is the runner: Run gathers, optionally measures (--active:
// a re-executed hostprep child opens real loopback sockets, see
// facts/active.go), runs the checks and remedies and returns a Report
// that the text, JSON, JUnit and Prometheus writers consume. It
// re-exports the facts types its callers name (api.go).
//
// Where the target process's nofile limits come from (ProcessFacts.Source
// says which applied): --pid reads /proc/PID/limits; --service asks
// systemctl when systemd runs as PID 1 (/run/systemd/system exists, the
// test tune uses too), or reads the unit file and drop-ins. When systemd
// does not run, no unit's LimitNOFILE applies: the limits are those a
// process started from a login shell gets (limits.d, else the parent
// shell's), capped at the inherited hard limit when CAP_SYS_RESOURCE is
// not in the bounding set, and the unit's own setting is reported beside
// them. A --service with no unit file is bad input (exit 2); a profile's
// unit with no unit file (none of its units installed, and no process
// owning the role's listener) fails fd.soft, and fd.hard and fd.raise
// warn rather than pass on the login shell's limits shown instead (too
// little still fails), which the capacity marks assumed.
package preflight
