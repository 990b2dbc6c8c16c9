package mqtt

import (
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// A client that connects late publishes the slots it missed, late, with
// their latency from the slot. The first publish went to the first slot
// not already past, so the slots that passed while a client waited for
// its CONNACK were never scheduled, never lost, never overruns: field
// case, a path that held new connections for 2 s passed with "kept its
// schedule: 0 of 649" and 499 of the window's 600 messages.
func TestLateConnectKeepsTheSchedule(t *testing.T) {
	noLeak(t)
	start := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	p := &faultProxy{holdFrom: start.Add(time.Second), holdUntil: start.Add(3 * time.Second)}
	url := startProxy(t, startMosquitto(t, "allow_anonymous true").url, p)
	cfg := small(url, 200)
	cfg.ConnRate, cfg.PubInterval, cfg.Duration, cfg.Grace = 100, time.Second, 3*time.Second, 2*time.Second
	cfg.StartAt, cfg.MaxClockError, cfg.ConnectTimeout = start, 0, 5*time.Second
	res, err := runProbe(t, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Connects.OK != 200 {
		t.Fatalf("connects %+v: want all 200", res.Connects)
	}
	m := res.Messages
	// 200 clients × 3 one-second slots in the window.
	if got := res.Throughput.WindowPublished; got != 600 {
		t.Errorf("window published %d: the fixed schedule holds 600 window messages", got)
	}
	// The clients held from 1.0 s to 3.0 s (ramp end 2.0 s) missed up to
	// two slots each: about 100 connects, about 150 late slots.
	if m.LateConnect < 100 || m.Overruns < m.LateConnect*9/10 {
		t.Errorf("late_connect %d, overruns %d: want the slots missed while connecting published late and counted", m.LateConnect, m.Overruns)
	}
	if m.Lost != 0 || m.Published != m.Scheduled {
		t.Errorf("messages %+v: want every slot published and delivered", m)
	}
	if res.Latency.E2E.Max < 500 {
		t.Errorf("e2e max %.1f ms: the window's late slots' latency from their slot does not show", res.Latency.E2E.Max)
	}
	c := testenv.CheckByID(t, res.Checks, "mqtt.schedule")
	if c.Status != verdict.Warn || !strings.Contains(c.Summary, "connect") || !strings.Contains(c.Remedy, "conn-rate") {
		t.Errorf("mqtt.schedule %+v: want a warning that blames the slow connects", c)
	}
}
