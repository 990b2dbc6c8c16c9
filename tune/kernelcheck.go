package tune

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/kerneltrial"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/sysctlval"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/sysctl"
	"github.com/hostprep/hostprep/tune/sysval"
)

// How a planned value was judged (KernelCheck.Keys).
const (
	// ByTrial: written in a scratch network namespace and read back.
	ByTrial = "trial"
	// ByTable: checked against sysctlval.KernelBounds (a global key, or
	// no trial possible).
	ByTable = "table"
	// ByStandIn: the key of an interface a new namespace lacks, written
	// on the entry standing for any interface (kerneltrial's TriedAs). A
	// refusal there is the kernel's own; an acceptance is not a promise
	// for the interface, whose entry can refuse more (an IPv6 mtu above
	// the interface's MTU, addr_gen_mode without a stable_secret), and
	// apply undoes the run if it does.
	ByStandIn = "trial_on_stand_in"
)

// KernelCheck says how the running kernel's verdict on each planned
// sysctl value was found: asked (ByTrial) where the key lives per
// network namespace and a namespace can be made, else from the table of
// bounds (ByTable). JSON: "kernel_check".
type KernelCheck struct {
	// Release is the kernel the trial ran on (uname -r); "" in image mode.
	Release string `json:"release,omitempty"`
	// Keys maps each profile key to ByTrial, ByStandIn or ByTable.
	Keys map[string]string `json:"keys"`
	// NoTrial says why no trial ran ("" when one did).
	NoTrial string `json:"no_trial,omitempty"`
}

// planned is one key's value after its mode, before the kernel's verdict.
type planned struct {
	key string
	s   profiles.Sysctl
	to  string
}

// fault is one field of a planned value the kernel refuses.
type fault struct {
	field          int // 1-based; 0 for a one-number key
	value, nearest int64
	found          bool   // nearest is known
	why            string // the refusal, as found
}

// verdict is the kernel's answer on one planned value.
type verdict struct {
	way     string
	stored  string  // what the kernel stores for to (trial), "" when unknown
	faults  []fault // empty: accepted
	nearest string  // the whole nearest value, "" when none known
	// movedTo is what a later write of the trial left in the key (the
	// kernel ties them), "" when none changed it.
	movedTo string
}

// trialWhyNot is why no kernel trial can run for env, "" when one can:
// the planned values must reach the live kernel of this host.
func trialWhyNot(env Env, b sysctl.Backend) string {
	switch {
	case env.ImageMode():
		return "image mode (--root): the image's kernel is not the one running here"
	case b == nil || b.Root() != sysctl.DefaultRoot:
		return "the sysctl tree is not the live " + sysctl.DefaultRoot
	}
	return ""
}

// judgeKernel asks the running kernel about every planned value of a
// per-namespace key (kerneltrial.Try, in plan order) and falls back to
// the table for the rest, or for all where no trial can run; pl.Kernel
// records which way each was judged, and a Note says once why no trial
// ran. unprivStart is net.ipv4.ip_unprivileged_port_start after the apply
// (the table's rule for the port range).
func (pl *Plan) judgeKernel(keys []planned, kernel string, unprivStart int64, startFrom string) map[string]verdict {
	pl.Kernel = &KernelCheck{Release: kernel, Keys: map[string]string{}}
	out := map[string]verdict{}
	tried := map[string]kerneltrial.Result{}
	why := trialWhyNot(pl.env, pl.backend)
	if why == "" && len(keys) > 0 {
		writes := make([]kerneltrial.Write, len(keys))
		for i, p := range keys {
			writes[i] = kerneltrial.Write{Key: p.key, Value: p.to}
		}
		res, err := kerneltrial.Try(writes)
		switch {
		case errors.Is(err, kerneltrial.ErrUnavailable):
			why = err.Error() + " (run as root)"
		case err != nil:
			why = err.Error()
		}
		for _, r := range res {
			switch {
			case err == nil && r.PerNamespace:
				tried[r.Key] = r
			case r.NotTried != "" && why == "":
				why = r.NotTried
			}
		}
	}
	if why != "" {
		pl.Kernel.NoTrial = why
		what := "values were"
		if len(tried) > 0 {
			what = "some values were"
		}
		pl.Notes = append(pl.Notes, fmt.Sprintf("no kernel trial (%s): %s checked against hostprep's table of kernel bounds, which may not match this kernel", why, what))
	}
	if why == "" {
		pl.Notes = append(pl.Notes, trialNotes(keys, tried)...)
	}
	floors := map[string]int64{}
	if !pl.env.ImageMode() {
		// the running kernel's own floors, asked with a socket: the
		// image's kernel may be another build
		if rcv, snd, err := kerneltrial.BufferFloors(); err == nil {
			floors = map[string]int64{"net.core.rmem_max": rcv, "net.core.rmem_default": rcv, "net.core.wmem_max": snd, "net.core.wmem_default": snd}
		}
	}
	for _, p := range keys {
		if r, ok := tried[p.key]; ok {
			pl.Kernel.Keys[p.key] = ByTrial
			if r.TriedAs != "" {
				pl.Kernel.Keys[p.key] = ByStandIn
			}
			out[p.key] = trialVerdict(r, kernel)
			continue
		}
		pl.Kernel.Keys[p.key] = ByTable
		v := tableVerdict(p, kernel, unprivStart, startFrom)
		if floor, ok := floors[p.key]; ok && len(v.faults) == 0 {
			v = floorVerdict(p, floor)
		}
		out[p.key] = v
	}
	return out
}

// trialNotes are the plan's notes after a trial ran: the keys it could
// not try (the table judged them), and the keys it tried on a stand-in.
func trialNotes(keys []planned, tried map[string]kerneltrial.Result) []string {
	var notes []string
	// the trial ran: name the keys it could not try, which the
	// table judged instead
	var table []string
	for _, p := range keys {
		if _, ok := tried[p.key]; !ok {
			table = append(table, p.key)
		}
	}
	if len(table) > 0 {
		notes = append(notes, fmt.Sprintf("judged by hostprep's table of kernel bounds, not by a kernel trial (global keys, or keys a new network namespace does not have: no namespace can try them): %s", strings.Join(table, ", ")))
	}
	var as []string
	for _, p := range keys {
		if r, ok := tried[p.key]; ok && r.TriedAs != "" {
			as = append(as, p.key+" as "+r.TriedAs)
		}
	}
	if len(as) > 0 {
		notes = append(notes, fmt.Sprintf("tried on the entry that stands for any interface, as a new network namespace has only lo: %s; the kernel took the value there, but an interface's own entry can refuse more (an IPv6 mtu above the interface's MTU, addr_gen_mode without a stable_secret), and apply undoes the whole run if it does", strings.Join(as, ", ")))
	}
	return notes
}

// floorVerdict judges a socket buffer key (net.core.rmem_max, wmem_max,
// rmem_default, wmem_default) against floor, the running kernel's
// SOCK_MIN_RCVBUF or SOCK_MIN_SNDBUF (kerneltrial.BufferFloors): the
// kernel refuses a value below it with EINVAL.
func floorVerdict(p planned, floor int64) verdict {
	v := verdict{way: ByTable}
	f, err := sysctlval.Fields(p.to)
	if err != nil || len(f) != 1 || f[0] >= floor {
		return v
	}
	what := "SOCK_MIN_RCVBUF"
	if strings.Contains(p.key, "wmem") {
		what = "SOCK_MIN_SNDBUF"
	}
	v.faults = []fault{{field: 0, value: f[0], nearest: floor, found: true,
		why: fmt.Sprintf("below this kernel's smallest socket buffer, %s = %s (as a socket given a buffer of 1 byte reports it; net/core/sysctl_net_core.c refuses less with EINVAL)", what, plural.N(floor, "byte"))}}
	v.nearest = strconv.FormatInt(floor, 10)
	return v
}

func trialVerdict(r kerneltrial.Result, kernel string) verdict {
	v := verdict{way: ByTrial, stored: r.Stored, nearest: r.Nearest}
	if r.Accepted {
		v.movedTo = r.MovedTo
		return v
	}
	why := fmt.Sprintf("refused (%s) when written in a scratch network namespace", errnoName(r.Err))
	if r.TriedAs != "" {
		why = fmt.Sprintf("refused (%s) when written as %s, the entry standing for any interface, in a scratch network namespace", errnoName(r.Err), r.TriedAs)
	}
	for _, f := range r.Faults {
		v.faults = append(v.faults, fault{field: f.Field, value: f.Value, nearest: f.Nearest, found: f.Found, why: why})
	}
	if len(v.faults) == 0 {
		v.faults = []fault{{why: why + " (no one field is at fault: the fields together are refused)"}}
	}
	return v
}

// tableVerdict checks p against sysctlval.KernelBounds and, for the port
// range, against ip_unprivileged_port_start: the rules hostprep knows,
// where the kernel cannot be asked.
func tableVerdict(p planned, kernel string, unprivStart int64, startFrom string) verdict {
	v := verdict{way: ByTable}
	for _, b := range sysctlval.BoundFaults(p.key, p.to, kernel) {
		v.faults = append(v.faults, fault{field: b.Field, value: b.Value, nearest: b.Nearest, found: true, why: fmt.Sprintf("outside %d..%d in hostprep's table of bounds (%s)", b.Min, b.Max, b.Source)})
	}
	if p.key == keyPortRange {
		if lo, _, err := sysctlval.ParsePortRange(p.to); err == nil && int64(lo) < unprivStart {
			v.faults = append(v.faults, fault{field: 1, value: int64(lo), nearest: unprivStart, found: true,
				why: fmt.Sprintf("below %s %d (%s): the kernel refuses it with EINVAL, ports below it are privileged", keyUnprivStart, unprivStart, startFrom)})
		}
	}
	if len(v.faults) > 0 {
		f, _ := sysctlval.Fields(p.to)
		for _, x := range v.faults {
			i := max(x.field, 1) - 1
			if i < len(f) {
				f[i] = x.nearest
			}
		}
		v.nearest = joinInts(f)
	}
	return v
}

// settle is the value a planned key gets from the kernel's verdict: what
// the kernel stores; the nearest accepted value where the entry says
// if_refused: nearest (with a note); else the exit-2 message naming the
// key, field, value, kernel release and what it accepts (for a value
// given with --set, another --set).
func (pl *Plan) settle(p planned, v verdict, kernel string) (target string, adjusted string, errMsg string) {
	if v.movedTo != "" {
		return "", "", fmt.Sprintf("sysctl %s = %q: the kernel ties it to another key of the profile: written in a scratch network namespace, it was left %q by a later write (one variable under two names, such as net.ipv4.ip_forward and net.ipv4.conf.all.forwarding, or an all entry copied into the others); give them values that agree; nothing was changed", p.key, sysval.Normalize(p.to), v.movedTo)
	}
	if len(v.faults) == 0 {
		if mode := modeOf(p.s); v.stored != "" && mode != sysval.Exact && !sysval.SatisfiesKey(p.key, v.stored, p.s.Parsed.Normal, mode) {
			return "", "", fmt.Sprintf("sysctl %s = %q: this kernel stores %q for it (found by writing it in a scratch network namespace; it rounds the value to its own unit), which breaks %s %s; give a value it stores within the bound", p.key, sysval.Normalize(p.to), v.stored, mode, p.s.Parsed.Normal)
		}
		if v.stored != "" && !sysval.Equal(v.stored, p.to) {
			pl.Notes = append(pl.Notes, fmt.Sprintf("sysctl %s: this kernel stores %q for %q (found by writing it in a scratch network namespace); hostprep compares with what the kernel stores", p.key, v.stored, sysval.Normalize(p.to)))
			return v.stored, "", ""
		}
		return p.to, "", ""
	}
	on := "this kernel"
	if kernel != "" {
		on = "this kernel (" + kernel + ")"
	}
	var parts []string
	for _, f := range v.faults {
		if f.field == 0 && f.value == 0 && !f.found {
			parts = append(parts, f.why)
			continue
		}
		name := sysctlval.FieldName(p.key, f.field)
		near := "no nearer value it accepts was found"
		if f.found {
			near = fmt.Sprintf("it accepts %d at the nearest", f.nearest)
		}
		parts = append(parts, fmt.Sprintf("field %s %d is %s; %s", name, f.value, f.why, near))
	}
	what := strings.Join(parts, "; ")
	if p.s.IfRefused == profiles.RefusedNearest && v.nearest != "" {
		adj := fmt.Sprintf("%s refuses %q (%s): if_refused nearest writes %q", on, sysval.Normalize(p.to), what, v.nearest)
		pl.Notes = append(pl.Notes, "sysctl "+p.key+": "+adj)
		return v.nearest, fmt.Sprintf("; %s refuses %s, nearest %s", on, sysval.Normalize(p.to), v.nearest), ""
	}
	fix := "remove the key or give a value this kernel accepts"
	switch {
	case v.nearest != "" && p.s.Set != "":
		fix = fmt.Sprintf("use %q, the nearest value it accepts (--set %s=%s)", v.nearest, p.key, strings.ReplaceAll(v.nearest, " ", ","))
	case v.nearest != "":
		fix = fmt.Sprintf("use %q, or add `if_refused: nearest` to the entry to have hostprep use the nearest value the kernel accepts", v.nearest)
	}
	return "", "", fmt.Sprintf("sysctl %s = %q: %s refuses it: %s; %s; nothing was changed", p.key, sysval.Normalize(p.to), on, what, fix)
}

func joinInts(f []int64) string {
	s := make([]string, len(f))
	for i, n := range f {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, " ")
}

// JudgeProfile asks the running kernel about every sysctl value of p as
// the profile writes it (no mode applied, the host's values not read), the
// way plan does: by trial where it can, else by the table, and says which
// way in the KernelCheck. notes are the plan's notes on it (no trial
// possible, a nearest value used, a value the kernel stores otherwise).
// Errors: exitcode.BadInput naming every value the kernel refuses, with
// what it accepts.
func JudgeProfile(p *profiles.Profile) (*KernelCheck, []string, error) {
	p, err := validCopy(p)
	if err != nil {
		return nil, nil, err
	}
	pl := &Plan{}
	if b, err := sysctl.New(""); err == nil {
		pl.backend = b
	}
	if msgs := pl.secretKeys(p); len(msgs) > 0 {
		// refused before the trial: a secret is neither tried nor shown
		return nil, nil, exitcode.BadInputf("%s", strings.Join(msgs, "; "))
	}
	var keys []planned
	for k, s := range p.Sysctl {
		keys = append(keys, planned{key: k, s: s, to: s.Parsed.Normal})
	}
	// the order apply writes them, the start judged against this host's
	// (which the trial namespace starts from)
	cur, _, _ := pl.current(keyUnprivStart)
	orderWrites(keys, cur)
	start, from, err := pl.unprivStart(p)
	if err != nil {
		return nil, nil, err
	}
	kernel := kerneltrial.Release()
	verdicts := pl.judgeKernel(keys, kernel, start, from)
	var errs []string
	for _, q := range keys {
		if _, _, msg := pl.settle(q, verdicts[q.key], kernel); msg != "" {
			errs = append(errs, p.Where("sysctl", q.key, "value")+msg)
		}
	}
	if len(errs) > 0 {
		return pl.Kernel, pl.Notes, exitcode.BadInputf("%s", strings.Join(errs, "; "))
	}
	return pl.Kernel, pl.Notes, nil
}
