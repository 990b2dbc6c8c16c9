package preflight

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/internal/hosttest"
)

// A run too small (or too noisy) to measure keeps the estimate and says so
// instead of reporting 0 (or 18139) bytes per socket as a measurement.
func TestActiveTooSmallToMeasure(t *testing.T) {
	for _, c := range []struct {
		name   string
		target int
		m      facts.ActiveResult
		status verdict.Status
		why    string
	}{
		{"10 sockets, slope 0", 10, facts.ActiveResult{RequestedSockets: 10, ReachedSockets: 10, Connections: 5, Samples: 6}, verdict.Pass, "too small to measure"},
		{"10 sockets, one slab page", 10, facts.ActiveResult{RequestedSockets: 10, ReachedSockets: 10, Connections: 5, Samples: 6, BytesPerSocket: 18139, SlabFitR2: 0.4, SlabDeltaBytes: 253952}, verdict.Pass, "too small to measure"},
		{"960 of 15000 at nofile 1024", 15000, facts.ActiveResult{RequestedSockets: 960, ReachedSockets: 960, Connections: 480, Samples: 21, NofileSoft: 1024, NofileHard: 4096}, verdict.Warn, "too small to measure"},
		{"enough sockets, slope <= 0", 5000, facts.ActiveResult{RequestedSockets: 5000, ReachedSockets: 5000, Connections: 2500, Samples: 21, SlabDeltaBytes: -4096}, verdict.Pass, "did not grow"},
		{"enough sockets, noise", 5000, facts.ActiveResult{RequestedSockets: 5000, ReachedSockets: 5000, Connections: 2500, Samples: 21, BytesPerSocket: 900, SlabFitR2: 0.3}, verdict.Pass, "too loosely"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := host(t, ``)
			tg := facts.Target{Sockets: c.target, Role: facts.Broker}
			_ = tg.Validate()
			m := c.m
			m.CostMeasured, m.CostNote = m.CostSignificance()
			f.Measured = &m
			if m.CostMeasured || !strings.Contains(m.CostNote, c.why) {
				t.Fatalf("significance: %v %q, want not measured because %q", m.CostMeasured, m.CostNote, c.why)
			}
			got := testenv.CheckByID(t, checks.Evaluate(f, tg), "active")
			if got.Status != c.status || !strings.Contains(got.Summary, c.why) || !strings.Contains(got.Summary, "estimate of 4096 bytes is kept") || strings.Contains(got.Summary, " 0 bytes of kernel memory") {
				t.Errorf("active: %s", message(got))
			}
			if !strings.Contains(got.Summary, fmt.Sprintf("%d loopback connections", m.Connections)) {
				t.Errorf("active does not say how many connections the sockets are: %s", got.Summary)
			}
			capa := checks.CapacityOf(f, tg)
			if capa.BytesPerSocket != checks.EstimatedBytesPerSocket || capa.BytesPerSocketMeasured || !strings.Contains(capa.BytesPerSocketSource, "could not measure") {
				t.Errorf("capacity %+v", capa)
			}
			if mem := testenv.CheckByID(t, checks.Evaluate(f, tg), "mem.available"); strings.Contains(mem.Expected, "measured by --active") {
				t.Errorf("mem.available uses an insignificant measurement: %s", message(mem))
			}
			var b strings.Builder
			if err := WriteText(&b, &Report{Target: tg, Capacity: capa, Checks: checks.Evaluate(f, tg)}, false); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), "kernel memory: not measured: ") || !strings.Contains(b.String(), "4096 bytes of kernel memory per socket, estimate") {
				t.Errorf("text output:\n%s", b.String())
			}
		})
	}
	// a real measurement still counts
	m := facts.ActiveResult{RequestedSockets: 15000, ReachedSockets: 15000, Connections: 7500, Samples: 21, BytesPerSocket: 3990, SlabFitR2: 0.999}
	if ok, why := m.CostSignificance(); !ok {
		t.Errorf("15000 sockets with R² 0.999 not significant: %s", why)
	}
}

func TestIgnoreAndStrict(t *testing.T) {
	f := host(t, `target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 1048576}`)
	opts := Options{Target: facts.Target{Sockets: 50000, Role: facts.Broker}, Facts: f}
	r, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != verdict.Fail || exitcode.Code(r.Err(false)) != exitcode.Failed || !strings.Contains(r.Err(false).Error(), "fd.soft") {
		t.Fatalf("verdict %s err %v", r.Verdict, r.Err(false))
	}
	opts.Ignore = []string{"fd.soft"}
	opts.Facts = host(t, `target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 1048576}`)
	r, err = Run(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if c := testenv.CheckByID(t, r.Checks, "fd.soft"); c.Status != verdict.Warn || !c.Ignored || !strings.HasPrefix(c.Summary, "[ignored failure]") {
		t.Errorf("ignored failure not downgraded and marked: %+v", c)
	}
	if c := testenv.CheckByID(t, r.Checks, "clock.sync"); c.Ignored {
		t.Errorf("a check not ignored is marked ignored: %+v", c)
	}
	var buf strings.Builder
	if err := Write(&buf, "json", r, false); err != nil {
		t.Fatal(err)
	}
	var js struct {
		Checks []map[string]any `json:"checks"`
	}
	if err := json.Unmarshal([]byte(buf.String()), &js); err != nil {
		t.Fatal(err)
	}
	for _, c := range js.Checks {
		if ign, has := c["ignored"]; (c["id"] == "fd.soft") != (has && ign == true) {
			t.Errorf("JSON check %v: \"ignored\" must be true exactly for the ignored failure", c)
		}
	}
	if r.Verdict != verdict.Warn || r.Err(false) != nil {
		t.Errorf("with fd.soft ignored: verdict %s err %v", r.Verdict, r.Err(false))
	}
	if exitcode.Code(r.Err(true)) != exitcode.Failed {
		t.Errorf("--strict must fail on warnings")
	}
	// empty items of "--ignore fd.soft,," are dropped, not "no such check"
	opts.Ignore = []string{"fd.soft", "", " "}
	opts.Facts = host(t, `target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 1048576}`)
	r, err = Run(t.Context(), opts)
	if err != nil {
		t.Fatalf("--ignore 'fd.soft,,': %v", err)
	}
	if c := testenv.CheckByID(t, r.Checks, "fd.soft"); c.Status != verdict.Warn || fmt.Sprint(r.Ignored) != "[fd.soft]" {
		t.Errorf("--ignore 'fd.soft,,': fd.soft %+v, ignored %q", c, r.Ignored)
	}
	opts.Ignore = []string{"fd.sotf"}
	_, err = Run(t.Context(), opts)
	if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), `"fd.sotf"`) || !strings.Contains(err.Error(), "fd.soft") {
		t.Errorf("unknown --ignore ID: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	for _, tg := range []facts.Target{
		{Sockets: 0, Role: facts.Broker},
		{Sockets: facts.MaxSockets + 1, Role: facts.Broker},
		{Sockets: 10, Role: "server"},
		{Sockets: 10, Role: facts.Loadgen, Destinations: []string{"broker:1883"}},
		{Sockets: 10, Role: facts.Loadgen, SourceIPs: []string{"not-an-ip"}},
	} {
		_, err := Run(t.Context(), Options{Target: tg, Facts: facts.StockDebian12(0)})
		if exitcode.Code(err) != exitcode.BadInput {
			t.Errorf("%+v: %v, want bad input", tg, err)
		}
	}
	if _, err := facts.LoadHostYAML("x.yaml", strings.NewReader("sysctls: {}\n")); exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "x.yaml") {
		t.Errorf("unknown host field must be rejected naming the file: %v", err)
	}
}

func host(t *testing.T, y string) *facts.Facts { t.Helper(); return hosttest.Host(t, y) }
