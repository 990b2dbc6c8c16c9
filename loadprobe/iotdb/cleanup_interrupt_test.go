package iotdb

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
)

// cleanupHangConfig is a one-step write run on the real IoTDB through a
// pauseProxy whose server hangs for hang from the end of the step (its
// clean-up waits); ctx's cancel runs 300 ms into the hang.
func cleanupHangConfig(t *testing.T, runID string, hang time.Duration) (Config, context.Context, func(time.Duration)) {
	base := realConfig(t, ScenarioWrite)
	addr, pause := pauseProxy(t, base.addr())
	cfg := openLoopConfig(t, addr, 0, time.Second)
	cfg.RunID, cfg.Warmup = runID, 200*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg.OnStep = func(Step) {
		pause(hang)
		time.AfterFunc(300*time.Millisecond, cancel)
	}
	t.Cleanup(func() {
		pause(0)
		for i := 0; i < 20 && slices.Contains(databases(t, base), probePrefix("", runID)); i++ {
			s := testSession(t, base)
			_ = s.ExecuteNonQueryStatement("DELETE DATABASE " + probePrefix("", runID))
			s.Close()
			time.Sleep(250 * time.Millisecond)
		}
	})
	return cfg, ctx, pause
}

// An interrupt during the clean-up, after every step ran to its end,
// leaves a complete measurement: the verdict stands on the steps (never
// "the results are partial"), the clean-up (which goes on) finishes, and
// the run says it was interrupted during the clean-up.
func TestInterruptDuringCleanupKeepsTheVerdictOnRealIoTDB(t *testing.T) {
	cfg, ctx, _ := cleanupHangConfig(t, "cleanupint", 2*time.Second)
	res, err := Run(ctx, cfg)
	if err != nil || res == nil {
		t.Fatalf("Run: %v (code %d), want no error: every step ran and the clean-up finished", err, exitcode.Code(err))
	}
	if res.Interrupted || !res.CleanupInterrupted || res.StopReason != "" || res.Verdict != verdict.Pass || res.LeftBehind || res.Kept {
		t.Errorf("interrupted %v, cleanup interrupted %v, stop %q, verdict %s, left %v, kept %v: want a complete PASS whose clean-up was interrupted and finished",
			res.Interrupted, res.CleanupInterrupted, res.StopReason, res.Verdict, res.LeftBehind, res.Kept)
	}
	if slices.ContainsFunc(res.Checks, func(c verdict.Check) bool { return c.ID == CheckComplete }) {
		t.Errorf("checks %+v: %s for a run whose steps all finished", res.Checks, CheckComplete)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "interrupted during the clean-up") }) {
		t.Errorf("notes %q: want one saying the clean-up was interrupted", res.Notes)
	}
}

// A second interrupt stops the clean-up's wait on a hung server (never
// ignored for the wait's minute): Run returns at once, with exit 3
// saying the clean-up was interrupted, the verdict standing, and the
// database reported as possibly left — not as kept (that is --keep) —
// and the node that served the whole run not listed as unreachable.
func TestSecondInterruptStopsTheCleanupOnRealIoTDB(t *testing.T) {
	cfg, ctx, _ := cleanupHangConfig(t, "cleanupstop", time.Minute)
	stop, stopCleanup := context.WithCancel(context.Background())
	defer stopCleanup()
	cfg.StopCleanup = stop
	inner := cfg.OnStep
	cfg.OnStep = func(s Step) { inner(s); time.AfterFunc(1500*time.Millisecond, stopCleanup) }
	var logs syncBuffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo})))
	t0 := time.Now()
	res, err := Run(ctx, cfg)
	if out := logs.String(); !strings.Contains(out, "interrupt again to stop waiting") || !strings.Contains(out, "at_most=30s") {
		t.Errorf("log (info):\n%s\nwant the clean-up's wait, how long at most, and that a second interrupt stops it", out)
	}
	if took := time.Since(t0); took > 12*time.Second {
		t.Errorf("Run took %v: the second interrupt did not stop the clean-up's wait", took)
	}
	if res == nil || exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "interrupted during the clean-up") ||
		!strings.Contains(err.Error(), "DELETE DATABASE "+res.Prefix) || strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Run: %v (code %d), want exit 3 saying the clean-up was interrupted, with the statement to run", err, exitcode.Code(err))
	}
	if res.Interrupted || !res.CleanupStopped || !res.LeftBehind || !res.DeleteUnknown || res.Kept || len(res.UnreachableNodes) != 0 {
		t.Errorf("interrupted %v, stopped %v, left %v, unknown %v, kept %v, unreachable %q", res.Interrupted, res.CleanupStopped, res.LeftBehind, res.DeleteUnknown, res.Kept, res.UnreachableNodes)
	}
	i := slices.IndexFunc(res.Checks, func(c verdict.Check) bool { return c.ID == CheckCleanup })
	if i < 0 || res.Checks[i].Status != verdict.Warn || !strings.Contains(res.Checks[i].Summary, "may have been left") || res.Verdict != verdict.Warn {
		t.Errorf("verdict %s, checks %+v: want the %s warning saying it may have been left", res.Verdict, res.Checks, CheckCleanup)
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(js.Bytes(), &m); err != nil || m["kept"] != false || m["left_behind"] != true {
		t.Errorf("JSON kept %v, left_behind %v: want false, true", m["kept"], m["left_behind"])
	}
}

// A run interrupted in its warm-up has measured no step: its JSON says
// "steps": [] (never null), and its error says "interrupted", not
// "context canceled". The interrupt comes 1.5 s into the 3 s warm-up,
// after the first writes made the database's data region: IoTDB 2.0.10
// holds a DELETE DATABASE that races that region's creation for 30 s
// (the clean-up's whole wait), which tells nothing about the probe.
func TestInterruptInWarmupGivesEmptyStepsOnRealIoTDB(t *testing.T) {
	cfg := realConfig(t, ScenarioWrite)
	cfg.Steps, cfg.Warmup = []int{1}, 3*time.Second
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.onWarmup = func() { time.AfterFunc(1500*time.Millisecond, cancel) }
	res, err := Run(ctx, cfg)
	if res == nil || err == nil || !strings.Contains(err.Error(), "interrupted") || strings.Contains(err.Error(), "context canceled") ||
		strings.Contains(res.StopReason, "context canceled") {
		t.Fatalf("Run: %v, stop reason %q: want an error saying interrupted, never context canceled", err, res.StopReason)
	}
	var js bytes.Buffer
	if err := res.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"steps": []`) {
		t.Errorf("JSON of a run interrupted in the warm-up:\n%s\nwant \"steps\": []", js.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the log's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
