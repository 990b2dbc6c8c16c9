package preflight

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/remedies"
	"gopkg.in/yaml.v3"
)

// caseFacts loads a field case of testdata/cases: its facts and target,
// as TestFieldCases runs it.
func caseFacts(t *testing.T, name string) (*facts.Facts, facts.Target) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cases", name+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cf caseFile
	if err := yaml.Unmarshal(b, &cf); err != nil {
		t.Fatal(err)
	}
	hy, err := yaml.Marshal(&cf.Host)
	if err != nil {
		t.Fatal(err)
	}
	f, err := facts.LoadHostYAML(name, bytes.NewReader(hy))
	if err != nil {
		t.Fatal(err)
	}
	if m := caseIDs[name].memTotal; m != 0 {
		f.MemTotal = m
	}
	if cf.IoTDBHome != nil {
		if f.IoTDB, err = facts.ReadIoTDBConfig(iotdbRelease(t, cf.IoTDBHome)); err != nil {
			t.Fatal(err)
		}
	}
	tg := facts.Target{Sockets: cf.Sockets, Role: facts.Role(cf.Role), ConnRate: cf.ConnRate, Destinations: cf.Destinations}
	tg.IoTDB.BatchPoints = cf.BatchPoints
	return f, tg
}

// TestRemedyProofsOnFieldCases guards that every remedy printed for a
// field case is proven: applied to the case's facts its changes make its
// check pass (or the printed remedy says what is still needed), no check
// that passed fails after it, and every failing check of the case is
// flipped by some printed remedy (its own, or the one it points to).
func TestRemedyProofsOnFieldCases(t *testing.T) {
	files, _ := filepath.Glob("testdata/cases/*.yaml")
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			f, tg := caseFacts(t, name)
			a, b := checkKeys(checks.Evaluate(remedies.CloneFacts(f), tg)), checkKeys(checks.Evaluate(f, tg))
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("the checks judge a copy of the facts differently:\n%s\n%s", a[i], b[i])
				}
			}
			rep, err := Run(t.Context(), Options{Target: tg, Facts: f})
			if err != nil {
				t.Fatal(err)
			}
			flipped := map[string]bool{}
			for _, p := range rep.Remedies {
				c := resultByID(t, rep.Checks, p.Check)
				if p.Withheld != "" {
					if !strings.HasPrefix(c.Remedy, "not printed: ") {
						t.Errorf("%s: withheld remedy printed: %s", p.Check, c.Remedy)
					}
					continue
				}
				// apply the changes again, independently of the proof
				g, t2 := remedies.CloneFacts(f), tg
				for _, ch := range remedies.Ordered(remedies.Remedies[p.Check](f, tg)) {
					ch.Apply(g, &t2)
				}
				after := checks.Evaluate(g, t2)
				for i, a := range after {
					if b := rep.Checks[i]; b.Status == verdict.Pass && a.Status != verdict.Pass && a.Status != verdict.Skip {
						t.Errorf("%s's remedy (%v) makes %s go from pass to %s: %s", p.Check, p.Changes, a.ID, a.Status, a.Summary)
					}
					if a.Status == verdict.Pass && rep.Checks[i].Status != verdict.Pass {
						flipped[a.ID] = true
					}
				}
				own := resultByID(t, after, p.Check)
				switch {
				case own.Status == verdict.Pass && !slices.Contains(p.Passes, p.Check):
					t.Errorf("%s passes after %v, but the proof does not say so: %+v", p.Check, p.Changes, p)
				case own.Status != verdict.Pass && (p.StillNeeded == "" || !strings.Contains(c.Remedy, "still needed")):
					t.Errorf("%s's remedy (%v) leaves it %s and does not say what is still needed: %s", p.Check, p.Changes, own.Status, c.Remedy)
				}
			}
			for _, c := range rep.Checks {
				if c.Status == verdict.Fail && !flipped[c.ID] && noRemedyOfItsOwn[name+"/"+c.ID] == "" {
					t.Errorf("failing check %s is flipped by no printed remedy: %s", c.ID, c.Remedy)
				}
			}
		})
	}
}

func checkKeys(cs []verdict.Check) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.ID+" "+string(c.Status)+" "+c.Summary)
	}
	return out
}

// noRemedyOfItsOwn are failing checks of field cases whose fix is no
// change to the host's facts, with why.
var noRemedyOfItsOwn = map[string]string{
	// mosquitto 2.0 hard-codes listen(sock, 100): the broker's code, not the host
	"listener-backlog-below-somaxconn/accept.backlog": "the broker's own listen() backlog",
}
