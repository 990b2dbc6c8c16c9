package iotdb

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/plural"
)

// interruptedOpenLoop runs one open-loop write step of one worker at
// rate/s through a pause proxy, 20 s long but interrupted cancelAt after
// the warm-up (200 ms) began; pauseAt > 0 hangs the server from then for
// 4 s. It returns the partial step and the result.
func interruptedOpenLoop(t *testing.T, rate float64, pauseAt, cancelAt time.Duration) (*Result, Step) {
	t.Helper()
	base := realConfig(t, ScenarioWrite)
	addr, pause := pauseProxy(t, base.addr())
	cfg := openLoopConfig(t, addr, rate, 20*time.Second)
	cfg.Warmup = 200 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.onWarmup = func() {
		if pauseAt > 0 {
			time.AfterFunc(pauseAt, func() { pause(4 * time.Second) })
		}
		time.AfterFunc(cancelAt, cancel)
	}
	res, _ := Run(ctx, cfg)
	if res == nil || len(res.Steps) != 1 || !res.Steps[0].Partial {
		t.Fatalf("want one partial step: %+v", res)
	}
	st := res.Steps[0]
	t.Logf("%.2f s, ops %d, missed %d, cut %d, errors %d %v, latency %+v", st.DurationS, st.Ops, st.Missed, st.Cut, st.Errors, st.ErrorSamples, st.Latency)
	return res, st
}

// wantScheduleAccounted checks that every operation st's one worker had
// due by the interrupt (about DurationS × rate) is an operation, a call
// cut in flight or a missed one, and that each latency without an answer
// is censored.
func wantScheduleAccounted(t *testing.T, st Step, rate float64) {
	t.Helper()
	due := st.DurationS * rate
	if got := float64(st.Ops + st.Missed + st.Cut); got > math.Ceil(due)+1 || got < due-4 {
		t.Errorf("%d ops + %d missed + %d cut = %.0f; want the ~%.0f the schedule had due by the interrupt (%.2f s at %g/s), no more", st.Ops, st.Missed, st.Cut, got, due, st.DurationS, rate)
	}
	if want := unanswered(&st) + st.Missed + st.Cut; st.Latency.Censored != want {
		t.Errorf("censored %d, want %d (unanswered %d + missed %d + cut %d)", st.Latency.Censored, want, unanswered(&st), st.Missed, st.Cut)
	}
}

// csvColumn is column name of the one step row of res's CSV.
func csvColumn(t *testing.T, res *Result, name string) string {
	t.Helper()
	var b bytes.Buffer
	if err := res.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil || len(rows) != 2 {
		t.Fatalf("CSV: %v %q", err, rows)
	}
	for i, h := range rows[0] {
		if h == name {
			return rows[1][i]
		}
	}
	t.Fatalf("CSV header %q has no %s column", rows[0], name)
	return ""
}

// An open-loop step interrupted while its worker was held by a hang (the
// server passes nothing from 1 s into the step; the run is cancelled
// 1.5 s later) counts the operations its schedule had due meanwhile and
// never started as missed, each a latency censored at the interrupt
// (interrupt time - its scheduled start), as the call in flight is: the
// partial step's p95 is the backlog's wait, and JSON, text, HTML and CSV
// say how many. They were dropped: missed 0, 1 censored, p95 of the
// ~50 answered writes (a few ms) next to a 1.5 s hang.
func TestInterruptedOpenLoopCountsTheBacklogOnRealIoTDB(t *testing.T) {
	const rate = 50
	res, st := interruptedOpenLoop(t, rate, 1200*time.Millisecond, 2700*time.Millisecond)
	if st.Cut != 1 || st.Missed < 50 {
		t.Errorf("cut %d, missed %d: want the call in flight cut and the ~75 operations due behind it missed", st.Cut, st.Missed)
	}
	if st.Latency.P95 < 1000 || st.Latency.Max < 1300 {
		t.Errorf("p95 %.1f ms, max %.1f ms: want the backlog's wait (up to ~1.5 s) in the partial step's percentiles", st.Latency.P95, st.Latency.Max)
	}
	wantScheduleAccounted(t, st, rate)
	for name, want := range map[string]int64{"missed": st.Missed, "cut": st.Cut, "censored": st.Latency.Censored} {
		if got := csvColumn(t, res, name); got != strconv.FormatInt(want, 10) {
			t.Errorf("CSV %s %q, want %d as in the JSON", name, got, want)
		}
	}
	var text, page bytes.Buffer
	_ = res.WriteText(&text)
	if err := res.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{plural.N(st.Missed, "operation") + " the schedule had due before the step was cut never started", "1 operation in flight when the step was cut"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
	// A call that failed without an answer before the hang (a loaded
	// host) is a censored latency of its own, listed first.
	noAnswer := ""
	if n := unanswered(&st); n > 0 {
		noAnswer = strconv.FormatInt(n, 10) + " no answer, "
	}
	if want := "<td>" + strconv.FormatInt(st.Latency.Censored, 10) + " (" + noAnswer + strconv.FormatInt(st.Missed, 10) + " never started, 1 cut)</td>"; !strings.Contains(page.String(), want) {
		t.Errorf("HTML step table lacks %q", want)
	}
}

// An open-loop step interrupted while its worker waited for its next
// operation (nothing due was left unstarted) misses nothing: the
// schedule's operations after the interrupt were never due. They were
// all counted missed (~90 of a 20 s schedule at 5/s, cut at 1.2 s),
// none censored.
func TestInterruptedIdleOpenLoopMissesNothingOnRealIoTDB(t *testing.T) {
	const rate = 5
	_, st := interruptedOpenLoop(t, rate, 0, 1400*time.Millisecond)
	// How many were due depends on when the warm-up let the step start
	// (wantScheduleAccounted checks ops against DurationS × rate); the
	// point is that none is missed.
	if st.Missed != 0 || st.Ops < 1 {
		t.Errorf("%d ops, missed %d: want those due by the interrupt (~%.0f) run and none missed", st.Ops, st.Missed, st.DurationS*rate)
	}
	wantScheduleAccounted(t, st, rate)
}
