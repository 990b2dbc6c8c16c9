package checks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// TestProfileUnitsNotInstalledPassNothing: a profile names emqx and
// mosquitto and the host has neither (only hostprep's drop-in for emqx,
// left by tune apply). fd.soft failed, but fd.hard and fd.raise judged
// what a login shell here gets as the service's own and passed on it,
// and the capacity line took that shell's soft nofile as the target's.
// A unit that is not installed has no limits to read: where the shell's
// are enough, fd.hard and fd.raise warn that the unit is not installed
// instead of passing (too little still fails, as for a unit on a host
// without systemd), and the capacity marks the number assumed.
func TestProfileUnitsNotInstalledPassNothing(t *testing.T) {
	root := factstest.FixtureRoot(t, nil)
	if err := os.Remove(filepath.Join(root, "lib/systemd/system/emqx.service")); err != nil {
		t.Fatal(err)
	}
	for _, running := range []bool{true, false} {
		if !running {
			if err := os.RemoveAll(filepath.Join(root, "run/systemd")); err != nil {
				t.Fatal(err)
			}
		}
		f, err := facts.Gather(t.Context(), facts.GatherOptions{Capacity: OwnerCapacity, Root: root, Service: "emqx", ServiceFromProfile: true, AltServices: []string{"mosquitto"}, Role: facts.Broker})
		if err != nil {
			t.Fatal(err)
		}
		if tp := f.Target; !tp.UnitMissing || tp.Unit != "emqx.service" {
			t.Fatalf("systemd running %v: target %+v, want emqx.service missing", running, tp)
		}
		tg := facts.Target{Sockets: 1000, Role: facts.Broker}
		_ = tg.Validate()
		cs := Evaluate(f, tg)
		if c := testenv.CheckByID(t, cs, "fd.soft"); c.Status != verdict.Fail || !strings.Contains(c.Summary, "emqx.service is not installed") {
			t.Errorf("systemd running %v: fd.soft %s", running, message(c))
		}
		for _, id := range []string{"fd.hard", "fd.raise"} {
			if c := testenv.CheckByID(t, cs, id); c.Status != verdict.Warn || !strings.Contains(c.Summary, "emqx.service is not installed") {
				t.Errorf("systemd running %v: %s for a unit that is not installed: %s, want a warning saying so", running, id, message(c))
			}
		}
		if cp := CapacityOf(f, tg); len(cp.Limits) == 0 || cp.Limits[0].Check != "fd.soft" || !cp.Limits[0].Assumed || !strings.Contains(cp.Limits[0].Resource, "emqx.service is not installed") {
			t.Errorf("systemd running %v: capacity %+v, want the shell's soft nofile marked assumed, naming the missing unit", running, cp)
		}
		// too little for a login shell still fails, as for a unit on a
		// host without systemd: only a pass was no promise
		big := facts.Target{Sockets: 100000, Role: facts.Broker}
		_ = big.Validate()
		if c := testenv.CheckByID(t, Evaluate(f, big), "fd.hard"); c.Status != verdict.Fail {
			t.Errorf("systemd running %v: fd.hard short of the need: %s, want a failure", running, message(c))
		}
	}
}
