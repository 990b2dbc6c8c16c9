package iotdb

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// An open loop whose workers cannot keep its schedule (2 workers at
// 50,000 operations/s each against a real IoTDB: a worker runs one
// operation at a time, and no write answers in 20 µs) measures less than
// the load asked, so it must not pass: iotdb.schedule fails, the step is
// bound by its workers with the fix, and the knee leaves it out.
func TestOpenLoopBehindScheduleFailsOnRealIoTDB(t *testing.T) {
	base := realConfig(t, ScenarioWrite)
	cfg := openLoopConfig(t, base.addr(), 50000, 2*time.Second)
	cfg.Steps, cfg.PoolSize = []int{2}, 4
	res, err := Run(context.Background(), cfg)
	if err != nil || res == nil || len(res.Steps) != 1 {
		t.Fatalf("Run: %v, %+v", err, res)
	}
	st := res.Steps[0]
	t.Logf("ops %d missed %d (%.1f%%)", st.Ops, st.Missed, 100*st.MissedShare())
	if st.MissedShare() <= ScheduleFailShare {
		t.Skipf("this server carried %.1f%% of 100,000 operations/s: nothing to judge", 100*(1-st.MissedShare()))
	}
	ch := testenv.CheckByID(t, res.Checks, CheckSchedule)
	if ch.Status != verdict.Fail || res.Verdict != verdict.Fail {
		t.Errorf("%s %s, verdict %s: want fail for %d of %d operations never started", ch.ID, ch.Status, res.Verdict, st.Missed, st.Due())
	}
	if !strings.Contains(ch.Remedy, "--steps") || !strings.Contains(ch.Remedy, "--rate") {
		t.Errorf("remedy %q: want more workers (--steps) or a lower --rate", ch.Remedy)
	}
	if st.Bound != BoundWorkers || !strings.Contains(st.BoundReason, "never started") {
		t.Errorf("bound %q (%s), want %q", st.Bound, st.BoundReason, BoundWorkers)
	}
	if len(res.Knee.Behind) != 1 || res.Knee.PeakTPS != 0 || !strings.Contains(res.Knee.Reading, "rate asked") {
		t.Errorf("knee %+v: want the step left out as behind", res.Knee)
	}
	var txt bytes.Buffer
	if err := res.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if out := txt.String(); !strings.Contains(out, "FAIL  "+CheckSchedule) || !strings.Contains(out, "bound at 2 workers: workers") {
		t.Errorf("text report:\n%s", out)
	}
}

// iotdb.schedule: within 1% never started passes, above it warns; more
// than 2% of the due operations not offered to the server (never
// started, or failed to connect) fails, whatever the cause; a closed
// loop skips; a step cut short is not judged.
func TestScheduleCheckThresholds(t *testing.T) {
	cfg := Defaults.withDefaults()
	cfg.Rate = 100
	for _, tc := range []struct {
		ops, missed, connect int64
		partial              bool
		want                 verdict.Status
	}{
		{1000, 0, 0, false, verdict.Pass},
		{990, 10, 0, false, verdict.Pass},
		{985, 15, 0, false, verdict.Warn},
		{980, 20, 0, false, verdict.Warn},
		{975, 25, 0, false, verdict.Fail},
		{940, 60, 0, false, verdict.Fail},
		{1000, 0, 30, false, verdict.Fail}, // 3% failed to connect: not offered
		{990, 10, 15, false, verdict.Fail},
		{1000, 0, 20, false, verdict.Pass},
		{500, 500, 0, true, verdict.Skip},
	} {
		st := []Step{{Workers: 2, Ops: tc.ops, Missed: tc.missed, Partial: tc.partial}}
		if tc.connect > 0 {
			st[0].ErrorsByClass = map[string]int64{ClassConnect: tc.connect}
		}
		if got := scheduleCheck(&cfg, st); got.Status != tc.want {
			t.Errorf("%d missed of %d: %s (%s), want %s", tc.missed, tc.ops+tc.missed, got.Status, got.Summary, tc.want)
		}
	}
	cfg.Rate = 0
	if got := scheduleCheck(&cfg, []Step{{Workers: 2, Ops: 10}}); got.Status != verdict.Skip {
		t.Errorf("closed loop: %s, want skip", got.Status)
	}
}
