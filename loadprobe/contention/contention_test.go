package contention

import (
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
)

// Measured on a host whose CPUs other processes keep busy, the figures
// show the pressure, this process's small share of it and its wait for a
// CPU, and the lateness is blamed on the host's other work.
func TestBusyHostMeasured(t *testing.T) {
	testenv.LoadCPUs(t, 10*time.Second)
	s := Take()
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) { // a probe's wake-ups: short sleeps
		time.Sleep(time.Millisecond)
	}
	f := s.Since()
	if !f.PSI || f.SomeShare < BusyShare || f.HostCPUs < float64(f.CPUs)/2 || f.ProbeCPUs < 0 || f.RunqueueMsPerS <= 0 {
		t.Fatalf("figures under 2 x %d busy processes: %+v", f.CPUs, f)
	}
	if c := f.Cause(); c != HostBusy {
		t.Fatalf("cause %d, want HostBusy: %+v", c, f)
	}
	why, fix := f.Behind("the probe fell behind its schedule 4 times")
	if !strings.Contains(why, "the host's CPUs were busy (some avg10 ") || strings.Contains(fix, "another host") {
		t.Errorf("why %q fix %q: want the host's CPUs named, not another host", why, fix)
	}
}

// Figures judge the cause of lateness: the host's other work, the probe
// itself, neither, or not known; each with its own fix.
func TestCauseFromFigures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       Figures
		want    Cause
		why     string
		fix     string
		notInFx string
	}{
		{"other work", Figures{PSI: true, SomeAvg10: 38, SomeShare: 35, CPUs: 2, HostCPUs: 1.9, ProbeCPUs: 0.05, RunqueueMsPerS: 40},
			HostBusy, "the host's CPUs were busy (some avg10 38%", "when the host is idle", "another host"},
		{"the probe is the load", Figures{PSI: true, SomeAvg10: 60, SomeShare: 55, CPUs: 2, HostCPUs: 2, ProbeCPUs: 1.6, RunqueueMsPerS: 300},
			ProbeLoad, "the probe itself was the load: it used 1.60 of the 2.0 CPUs", "another host", ""},
		{"CPUs free", Figures{PSI: true, SomeAvg10: 2, SomeShare: 1, CPUs: 2, HostCPUs: 0.3, ProbeCPUs: 0.2},
			NotCPU, "while the CPUs were free (some avg10 2%", "lower the rate", "another host"},
		{"busy only in the last 10 s", Figures{PSI: true, SomeAvg10: 25, SomeShare: 4, CPUs: 2, HostCPUs: 1, ProbeCPUs: 0.1},
			HostBusy, "the host's CPUs were busy (some avg10 25%", "when the host is idle", ""},
		{"no PSI", Figures{CPUs: 2, HostCPUs: -1, ProbeCPUs: -1, RunqueueMsPerS: -1},
			Unknown, "CPU pressure not known", "lower the rate", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.Cause(); got != tc.want {
				t.Errorf("cause %d, want %d", got, tc.want)
			}
			why, fix := tc.f.Behind("the probe fell behind its schedule 4 times")
			if !strings.HasPrefix(why, "the probe fell behind its schedule 4 times") || !strings.Contains(why, tc.why) {
				t.Errorf("why %q, want it to contain %q", why, tc.why)
			}
			if !strings.Contains(fix, tc.fix) || (tc.notInFx != "" && strings.Contains(fix, tc.notInFx)) {
				t.Errorf("fix %q: want %q, not %q", fix, tc.fix, tc.notInFx)
			}
			// A latency over its limit is blamed on the CPUs only when
			// they were busy: the host's work, or the probe's own.
			d := tc.f.Delayed()
			switch tc.want {
			case HostBusy:
				if !strings.Contains(d, "the host's CPUs were busy with other work") || !strings.Contains(d, "when the host is idle") {
					t.Errorf("delayed %q", d)
				}
			case ProbeLoad:
				if !strings.Contains(d, "the probe itself was the load") || !strings.Contains(d, "another host") {
					t.Errorf("delayed %q", d)
				}
			default:
				if d != "" {
					t.Errorf("delayed %q, want nothing: the CPUs do not explain it", d)
				}
			}
		})
	}
}
