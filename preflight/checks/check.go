package checks

import (
	"cmp"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/capacity"
	"github.com/hostprep/hostprep/internal/shellquote"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/profiles"
)

// CheckFunc is a check: a pure function of gathered facts and the target.
// It returns one result whose ID is the check's ID.
type CheckFunc func(f *facts.Facts, t facts.Target) verdict.Check

// CheckDef is a registered check.
type CheckDef struct {
	// ID is stable (it is what --ignore and dashboards use).
	ID string
	// Doc says what the check compares, one line.
	Doc string
	// Roles the check applies to; nil means every role. For other roles
	// the result is "skip".
	Roles []facts.Role
	Func  CheckFunc
}

// registry holds the checks in report order, filled by the check_*.go
// files' init functions.
var registry []CheckDef

func register(d CheckDef) {
	for _, r := range registry {
		if r.ID == d.ID {
			panic("preflight: duplicate check " + d.ID)
		}
	}
	registry = append(registry, d)
	sort.SliceStable(registry, func(i, j int) bool { return familyRank(registry[i].ID) < familyRank(registry[j].ID) })
}

// families fixes the report order: limits first, then ports, memory, the
// accept path, tables, host and the measurement.
var families = []string{"fd.", "ports.", "mem.", "accept.", "iotdb.", "conntrack", "tcp.", "clock.", "container", "active"}

func familyRank(id string) int {
	for i, f := range families {
		if strings.HasPrefix(id, f) {
			return i
		}
	}
	return len(families)
}

// Checks returns the registered checks in report order.
func Checks() []CheckDef { return append([]CheckDef(nil), registry...) }

// CheckIDs returns the IDs of all checks, sorted.
func CheckIDs() []string {
	ids := make([]string, 0, len(registry))
	for _, d := range registry {
		ids = append(ids, d.ID)
	}
	sort.Strings(ids)
	return ids
}

// Evaluate runs every registered check against facts and target (which
// must be validated) and returns the results in registry order. It reads
// nothing from the host.
func Evaluate(f *facts.Facts, t facts.Target) []verdict.Check {
	out := make([]verdict.Check, 0, len(registry))
	for _, d := range registry {
		if !appliesTo(d.Roles, t.Role) {
			out = append(out, verdict.Check{ID: d.ID, Status: verdict.Skip,
				Summary: fmt.Sprintf("not applicable to role %s (applies to %s)", t.Role, joinRoles(d.Roles))})
			continue
		}
		var c verdict.Check
		if f.Target.NetNSApart() != "" && netnsScoped(d.ID) {
			c = otherNetNS(f, d.ID)
		} else {
			c = d.Func(f, t)
		}
		c.ID = d.ID
		out = append(out, c)
	}
	return out
}

// netnsScoped says whether a check judges what each network namespace has
// its own of: its sysctls (net.core.somaxconn, ip_local_port_range,
// tcp_max_syn_backlog, tcp_rmem/tcp_wmem, tcp_max_tw_buckets, ...), its
// sockets and listeners, its conntrack table, its TcpExt counters — all
// read in hostprep's own namespace.
func netnsScoped(id string) bool {
	for _, p := range []string{"accept.", "ports.", "tcp.", "conntrack", "mem.buffers", "active"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}

// otherNetNS is the finding of a netnsScoped check for a target in
// another network namespace than hostprep's: not judged, since what was
// read is hostprep's namespace, not the target's.
func otherNetNS(f *facts.Facts, id string) verdict.Check {
	p := f.Target
	if p.NetNS == "" {
		return warn(fmt.Sprintf("not judged: whether hostprep shares the network namespace of pid %d could not be read (%s), and %s reads the sysctls and sockets of hostprep's own", p.PID, p.NetNSUnseen, id),
			"target network namespace not readable", "the target's network namespace",
			"run hostprep preflight as root (another user's /proc/PID/ns/net needs it)")
	}
	return warn(fmt.Sprintf("not judged: pid %d is in another network namespace (%s), and %s reads the sysctls and sockets of hostprep's own", p.PID, p.NetNS, id),
		"target "+p.NetNS, "the target's network namespace",
		fmt.Sprintf("run hostprep inside it: nsenter --net=/proc/%d/ns/net hostprep preflight ... (or ip netns exec NAME hostprep preflight ...)", p.PID))
}

func appliesTo(roles []facts.Role, r facts.Role) bool {
	if roles == nil {
		return true
	}
	for _, x := range roles {
		if x == r {
			return true
		}
	}
	return false
}

func joinRoles(rs []facts.Role) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// result constructors keep the check files short.
// tuneApply is the `hostprep tune apply` command, in backquotes and
// runnable as printed (every argument shell-quoted), that applies the
// profile the target came from (Target.Profile: a file's path or a
// built-in's name, as --profile took it) with the overrides sets
// ("key=value" for --set: a sysctl, limits.nofile.soft/hard or
// reserve_ports; see profiles.ApplySets). Without a profile, PROFILE
// stands for the user's own, as in tune's suggestions.
//
// The profile's own --set overrides (Target.ProfileSets, those preflight
// was given) come first, so that the command applies the profile the
// remedy was worked out from; one of them whose key sets repeats is left
// out.
func tuneApply(t facts.Target, sets ...string) string {
	args := []string{"hostprep", "tune", "apply", "--profile", cmp.Or(t.Profile, "PROFILE")}
	keys := map[string]bool{}
	for _, s := range sets {
		k, _, _ := strings.Cut(s, "=")
		keys[strings.TrimSpace(k)] = true
	}
	for _, s := range t.ProfileSets {
		if k, _, _ := strings.Cut(s, "="); !keys[strings.TrimSpace(k)] {
			args = append(args, "--set", s)
		}
	}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	return "`" + shellquote.Join(args...) + "`"
}

// verifyBoot is the command that names, after an apply, the file that
// wins at boot over what hostprep wrote (it judges the journal's last
// apply: it takes no --profile).
const verifyBoot = "`hostprep tune verify --boot`"

// atLeast is the --set "key=N" that asks for the sysctl key to be at
// least v with the target's profile: v, or the profile's own value where
// that is higher, so that the remedy never lowers what the profile sets.
func AtLeast(t facts.Target, key string, v int64) string {
	if n, ok := profileNumber(t, key); ok {
		v = max(v, n)
	}
	return fmt.Sprintf("%s=%d", key, v)
}

// nofileSets are the --set overrides that give login sessions
// (limits.nofile) at least soft:hard file descriptors with the target's
// profile, never less than the profile has (tune would write the lower
// value into an image), and the ceilings a hard limit that high needs
// (hardSets).
func NofileSets(f *facts.Facts, t facts.Target, soft, hard uint64) []string {
	soft = max(soft, t.ProfileNofile.Soft)
	hard = max(hard, soft, t.ProfileNofile.Hard)
	return append([]string{fmt.Sprintf("limits.nofile.soft=%d", soft), fmt.Sprintf("limits.nofile.hard=%d", hard)}, HardSets(f, t, hard)...)
}

// hardSets are the --set overrides a hard nofile limit of hard file
// descriptors needs with the target's profile: tune refuses a hard limit
// above fs.nr_open or fs.file-max, each the profile's own, else the one
// the host gets at boot. Preflight sees the host's live values only, and
// a live fs.nr_open above the kernel default may not survive the reboot,
// so without the profile's it counts the lower of the live value and the
// default (1048576). A value the remedy sets is never below the live one
// either (a key the profile lacks is set exactly), and fs.file-max is the
// same number fd.file_max asks for (wantFileMax).
func HardSets(f *facts.Facts, t facts.Target, hard uint64) []string {
	hard = max(hard, t.ProfileNofile.Hard, t.ProfileUnitNofile.Hard)
	var sets []string
	for _, c := range []struct {
		key  string
		dflt int64 // the boot value assumed without the profile's: 0, the live one
		want int64
	}{
		{"fs.nr_open", int64(profiles.DefaultNrOpen), int64(hard)},
		{"fs.file-max", 0, max(int64(hard), WantFileMax(f, t))},
	} {
		live, seen := f.SysInt(c.key)
		limit, ok := profileNumber(t, c.key)
		if !ok {
			limit = live
			if c.dflt > 0 && (!seen || c.dflt < live) {
				limit = c.dflt
			}
		}
		if int64(hard) > limit {
			sets = append(sets, AtLeast(t, c.key, max(c.want, live)))
		}
	}
	return sets
}

// profileNumber is the target's profile's value of sysctl key, if it
// sets one that is a number.
func profileNumber(t facts.Target, key string) (int64, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(t.ProfileSysctl[key]), 10, 64)
	return n, err == nil
}

// wantFileMax is the fs.file-max the target needs (count of file
// handles): the handles allocated now (fs.file-nr) and two per socket,
// room for the rest of the host to grow with it.
func WantFileMax(f *facts.Facts, t facts.Target) int64 {
	var alloc int64
	if nr, ok := f.SysFields("fs.file-nr"); ok && len(nr) >= 1 {
		alloc = nr[0]
	}
	return alloc + int64(t.Sockets)*2
}

func pass(summary, observed, expected string) verdict.Check {
	return verdict.Check{Status: verdict.Pass, Summary: summary, Observed: observed, Expected: expected}
}

func warn(summary, observed, expected, remedy string) verdict.Check {
	return verdict.Check{Status: verdict.Warn, Summary: summary, Observed: observed, Expected: expected, Remedy: remedy}
}

func fail(summary, observed, expected, remedy string) verdict.Check {
	return verdict.Check{Status: verdict.Fail, Summary: summary, Observed: observed, Expected: expected, Remedy: remedy}
}

func skip(summary string) verdict.Check {
	return verdict.Check{Status: verdict.Skip, Summary: summary}
}

// UsableFDs is how many sockets a process with an fd limit of n can hold
// after the headroom it needs for everything else (capacity.UsableFDs,
// the rule the probes' own fd check uses too).
func UsableFDs(n uint64) int64 { return capacity.UsableFDs(n) }

// fdHeadroom is the file descriptors a socket-holding process needs beyond
// its sockets (capacity.FDHeadroom: 1 % of the target, at least 64).
func fdHeadroom(sockets int) uint64 { return capacity.FDHeadroom(sockets) }

// mib formats bytes as MiB with no decimals ("738 MiB").
func Mib(b float64) string { return fmt.Sprintf("%.0f MiB", b/(1<<20)) }

// gib formats bytes as GiB with one decimal.
func Gib(b float64) string { return fmt.Sprintf("%.1f GiB", b/(1<<30)) }

// ceilDiv is ceil(a/b) for positive b.
func CeilDiv(a, b int64) int64 {
	if b <= 0 {
		return 0
	}
	return (a + b - 1) / b
}
