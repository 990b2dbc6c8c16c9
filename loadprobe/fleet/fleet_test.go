package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"pgregory.net/rapid"
)

// The shards of any fleet are disjoint, cover every client once, and
// keep the fleet's schedule (client g is global number g).
func TestShardsPartitionClients(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := rapid.IntRange(1, 500).Draw(t, "total")
		n := rapid.IntRange(1, 12).Draw(t, "n")
		seen := make([]int, total)
		sum := 0
		for k := 1; k <= n; k++ {
			s := Shard{K: k, N: n}
			c := s.Count(total)
			sum += c
			for j := 0; j < c; j++ {
				g := s.Global(j)
				if g < 0 || g >= total {
					t.Fatalf("shard %v client %d -> %d outside 0..%d", s, j, g, total-1)
				}
				seen[g]++
			}
		}
		if sum != total {
			t.Fatalf("shards hold %d clients, want %d", sum, total)
		}
		for g, v := range seen {
			if v != 1 {
				t.Fatalf("client %d in %d shards", g, v)
			}
		}
	})
}

func TestParseShard(t *testing.T) {
	if s, err := ParseShard("2/5"); err != nil || s != (Shard{2, 5}) {
		t.Fatalf("2/5: %v %v", s, err)
	}
	if s, err := ParseShard(""); err != nil || s.On() {
		t.Fatalf("empty: %v %v", s, err)
	}
	for _, v := range []string{"0/3", "4/3", "1/0", "a/b", "3", "1/3/4", "-1/2"} {
		_, err := ParseShard(v)
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "--shard") {
			t.Errorf("%q: %v", v, err)
		}
	}
}

func TestParseStart(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for v, want := range map[string]time.Time{
		"2026-11-30T12:01:00Z":          now.Add(time.Minute),
		"2026-11-30T13:01:00+01:00":     now.Add(time.Minute),
		"2026-11-30T12:01:00Z+30s":      now.Add(90 * time.Second),
		"2026-11-30T13:01:00+01:00+30s": now.Add(90 * time.Second),
		"+30s":                          now.Add(30 * time.Second),
	} {
		got, err := ParseStart(v, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("%q: %v %v, want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"tomorrow", "+", "+-3s", "2026-11-30T12:01:00Z+x", "12:00"} {
		if _, err := ParseStart(v, now); exitcode.Code(err) != exitcode.BadInput {
			t.Errorf("%q accepted: %v", v, err)
		}
	}
}

func TestCheckStart(t *testing.T) {
	now := time.Now()
	if err := CheckStart(now.Add(-time.Second), now); exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "in the past") {
		t.Errorf("past start: %v", err)
	}
	if err := CheckStart(now.Add(100*time.Millisecond), now); err == nil || !strings.Contains(err.Error(), "only") {
		t.Errorf("too close: %v", err)
	}
	if err := CheckStart(now.Add(5*time.Second), now); err != nil {
		t.Error(err)
	}
	if err := CheckStart(time.Time{}, now); err != nil {
		t.Error(err)
	}
}

func TestCheckClock(t *testing.T) {
	if err := CheckClock(Clock{Synchronised: false, MaxErrorMs: 16000}, 50*time.Millisecond); exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "not synchronised") {
		t.Errorf("unsynchronised: %v", err)
	}
	if err := CheckClock(Clock{Synchronised: true, MaxErrorMs: 80}, 50*time.Millisecond); exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "80.0 ms") {
		t.Errorf("maxerror above bound: %v", err)
	}
	if err := CheckClock(Clock{Synchronised: true, MaxErrorMs: 3}, 50*time.Millisecond); err != nil {
		t.Error(err)
	}
	if err := CheckClock(Clock{}, 0); err != nil {
		t.Errorf("bound 0 means not checked: %v", err)
	}
	c, err := ReadClock()
	if err != nil || c.MaxErrorMs < 0 {
		t.Errorf("ReadClock: %+v %v", c, err)
	}
}

// A start time long past is shown as the time and a rounded age, not
// "60613h39m39.181s".
func TestCheckStartRoundsTheAge(t *testing.T) {
	now := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	for start, want := range map[time.Time]string{
		time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC): "--start-at 2020-01-01T00:00:00Z is 6 years in the past:",
		now.Add(-3 * 24 * time.Hour):                "is 3 days in the past:",
		now.Add(-5 * time.Hour):                     "is 5 hours in the past:",
		now.Add(-90 * time.Second):                  "is 2 minutes in the past:",
		now.Add(-1500 * time.Millisecond):           "is 1.5s in the past:",
	} {
		if err := CheckStart(start, now); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("start %v: want %q, got %v", start, want, err)
		}
	}
}
