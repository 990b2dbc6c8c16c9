package remedies

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/profiles"
)

// A remedy is a change to the facts, and it is proven: before a remedy
// is printed, the checks run again on the facts it would leave behind.
// It is printed only when the check it is for passes afterwards (or it
// says what is still needed), and no other check goes from pass to
// fail; one that changes nothing is never printed. Each check's remedy
// is registered by check ID in a remedy_*.go file, next to no check
// code: it returns the Changes its printed text stands for (the first
// alternative the text offers).

// Change is one transformation of the facts (and of the target, for the
// source addresses a load generator binds): "sysctl K=V", "LimitNOFILE=N
// in unit U", "N more source addresses", "restart U".
type Change interface {
	// Apply changes f and t as the host would be after the change.
	Apply(f *facts.Facts, t *facts.Target)
	// String says the change in the field's terms.
	String() string
}

// RemedyFunc returns the changes a check's remedy stands for; none when
// its remedy is no change to this host (name the process, run as root).
type RemedyFunc func(f *facts.Facts, t facts.Target) []Change

var Remedies = map[string]RemedyFunc{}

// registerRemedy registers the remedy of check id.
func registerRemedy(id string, fn RemedyFunc) {
	if _, dup := Remedies[id]; dup {
		panic("preflight: duplicate remedy " + id)
	}
	Remedies[id] = fn
}

// Proof is a remedy's proof, as JSON carries it.
type Proof struct {
	// Check is the check the remedy is for.
	Check string `json:"check"`
	// Changes are the changes the remedy stands for.
	Changes []string `json:"changes"`
	// Passes are the checks that pass after the changes and did not
	// before, Check among them when it flips.
	Passes []string `json:"passes,omitempty"`
	// StillNeeded says what Check still lacks after the changes ("" when
	// it passes).
	StillNeeded string `json:"still_needed,omitempty"`
	// Withheld says why the remedy was not printed: it changes nothing,
	// or it makes a check that passed fail.
	Withheld string `json:"withheld,omitempty"`
}

// proveRemedies proves the remedy of every check in checks (the results
// of Evaluate on f and t) that does not pass, rewrites the printed
// remedy from the proof (withheld, or with what is still needed), and
// returns the proofs.
func ProveRemedies(f *facts.Facts, t facts.Target, checks []verdict.Check) []Proof {
	var out []Proof
	for i := range checks {
		c := &checks[i]
		fn := Remedies[c.ID]
		if fn == nil || c.Remedy == "" || (c.Status != verdict.Fail && c.Status != verdict.Warn) {
			continue
		}
		changes := fn(f, t)
		if len(changes) == 0 {
			continue
		}
		p := prove(f, t, checks, c.ID, changes)
		switch {
		case p.Withheld != "":
			c.Remedy = "not printed: " + p.Withheld
		case p.StillNeeded != "":
			c.Remedy += "; after it, still needed: " + p.StillNeeded
		}
		out = append(out, p)
	}
	return out
}

// prove applies changes to a copy of f and t, runs the checks again, and
// compares them with before (the results on f and t).
func prove(f *facts.Facts, t facts.Target, before []verdict.Check, id string, changes []Change) Proof {
	p := Proof{Check: id}
	for _, ch := range changes {
		p.Changes = append(p.Changes, ch.String())
	}
	g0, g, t2 := CloneFacts(f), CloneFacts(f), t
	t2.SourceIPs = slices.Clone(t.SourceIPs)
	for _, ch := range Ordered(changes) {
		ch.Apply(g, &t2)
	}
	if reflect.DeepEqual(g, g0) && reflect.DeepEqual(t2, t) {
		p.Withheld = strings.Join(p.Changes, ", ") + " changes nothing here"
		return p
	}
	after := checks.Evaluate(g, t2)
	var broken []string
	for j, a := range after {
		b := before[j]
		switch {
		case b.Status == verdict.Pass && a.Status != verdict.Pass && a.Status != verdict.Skip:
			broken = append(broken, fmt.Sprintf("%s (%s)", a.ID, a.Summary))
		case b.Status != verdict.Pass && a.Status == verdict.Pass:
			p.Passes = append(p.Passes, a.ID)
		case a.ID == id && a.Status != verdict.Pass:
			p.StillNeeded = fmt.Sprintf("%s %s: %s", a.ID, a.Status, a.Summary)
			if a.Remedy != "" {
				p.StillNeeded += " (" + a.Remedy + ")"
			}
		}
	}
	if len(broken) > 0 {
		p.Withheld = fmt.Sprintf("%s would make what passes now fail: %s", strings.Join(p.Changes, ", "), strings.Join(broken, "; "))
		p.Passes, p.StillNeeded = nil, ""
	}
	return p
}

// ordered puts sysctl changes first: a limit is resolved against the
// fs.nr_open the same remedy sets.
func Ordered(cs []Change) []Change {
	out := slices.Clone(cs)
	slices.SortStableFunc(out, func(a, b Change) int {
		_, sa := a.(SetSysctl)
		_, sb := b.(SetSysctl)
		switch {
		case sa && !sb:
			return -1
		case sb && !sa:
			return 1
		}
		return 0
	})
	return out
}

// cloneFacts is a deep copy of f (its JSON form holds every field a
// check reads).
func CloneFacts(f *facts.Facts) *facts.Facts {
	b, err := json.Marshal(f)
	if err != nil {
		panic("preflight: facts do not marshal: " + err.Error())
	}
	var g facts.Facts
	if err := json.Unmarshal(b, &g); err != nil {
		panic("preflight: facts do not unmarshal: " + err.Error())
	}
	// omitempty drops an empty map or list that a check tells from nil
	// (a /proc/net/netstat read with no counters is not one unread)
	if f.Netstat != nil && g.Netstat == nil {
		g.Netstat = map[string]uint64{}
	}
	if f.LimitsD != nil && g.LimitsD == nil {
		g.LimitsD = map[string]profiles.Limit{}
	}
	if f.Listeners != nil && g.Listeners == nil {
		g.Listeners = []facts.Listener{}
	}
	return &g
}
