package mqtt

import (
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/contention"
)

// A probe on a host whose CPUs other processes keep busy measures that
// contention over its run and blames its lateness on it, naming the
// host's CPU pressure, never telling the user to move the probe to
// another host (that fits only when the probe itself is the load).
func TestLatenessOnBusyHostNamesCPUPressure(t *testing.T) {
	noLeak(t)
	testenv.LoadCPUs(t, 15*time.Second)
	cfg := small("", 50)
	cfg.PubInterval = 20 * time.Millisecond // 2500 wake-ups/s to be late
	cfg.Duration = 3 * time.Second
	cfg.Thresholds.AckP95 = time.Microsecond // over it on any host: its fix is judged below
	res, err := runProbe(t, cfg)
	if err != nil && res == nil {
		t.Fatal(err)
	}
	f := res.CPU
	if !f.PSI || !f.Busy() || f.Cause() != contention.HostBusy {
		t.Fatalf("CPU figures %+v (cause %d): want busy CPUs, blamed on other work", f, f.Cause())
	}
	if m := res.Messages; m.Overruns == 0 {
		t.Fatalf("no overrun under 2 x %d busy processes: %+v", f.CPUs, m)
	}
	var named bool
	for _, s := range res.Failures {
		if strings.HasPrefix(s, "the probe fell behind its schedule") {
			named = strings.Contains(s, "the host's CPUs were busy (some avg10 ")
			if !named {
				t.Errorf("lateness not blamed on the host's CPUs: %s", s)
			}
		}
	}
	if !named {
		t.Errorf("no lateness sentence among the failures: %q", res.Failures)
	}
	for _, c := range res.Checks {
		if c.ID == "mqtt.schedule" && strings.Contains(c.Remedy, "another host") {
			t.Errorf("mqtt.schedule tells the user to move the probe: %s", c.Remedy)
		}
		if c.ID == "mqtt.ack_p95" && (c.Status != verdict.Fail || !strings.HasPrefix(c.Remedy, "the host's CPUs were busy with other work")) {
			t.Errorf("mqtt.ack_p95 %s over a 1 µs limit on a busy host: fix %q, want the host's CPUs first", c.Status, c.Remedy)
		}
	}
	var b strings.Builder
	_ = res.WriteText(&b)
	if !strings.Contains(b.String(), "\ncpu ") || !strings.Contains(b.String(), "CPU pressure some avg10 ") {
		t.Errorf("report has no cpu line:\n%s", b.String())
	}
}
