package pacer

import (
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestConstantIsExactAndDoesNotDrift(t *testing.T) {
	c := Constant{Rate: 3}
	for i, want := range []time.Duration{0, 333333333, 666666666, time.Second} {
		if got := c.At(i); got != want {
			t.Errorf("At(%d) at 3/s = %v, want %v", i, got, want)
		}
	}
	// one million events at 2000/s end at exactly 500 s: no accumulated error
	if got := (Constant{Rate: 2000}).At(1_000_000); got != 500*time.Second {
		t.Errorf("At(1e6) at 2000/s = %v, want 500s", got)
	}
	if got := (Constant{Rate: 1000}).Interval(); got != time.Millisecond {
		t.Errorf("Interval at 1000/s = %v", got)
	}
}

// Any n consecutive members of a grid spread over the interval: no gap
// between neighbouring phases is more than 3x the even gap (the golden
// ratio sequence's three-gap property bounds it by ~2.6x).
func TestGridPhasesSpreadEvenly(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 5000).Draw(t, "n")
		g := Grid{Interval: time.Second}
		ph := make([]time.Duration, n)
		for i := range ph {
			ph[i] = g.Phase(i)
			if ph[i] < 0 || ph[i] >= g.Interval {
				t.Fatalf("Phase(%d) = %v outside [0, %v)", i, ph[i], g.Interval)
			}
		}
		slices.Sort(ph)
		even := g.Interval / time.Duration(n)
		for i := 1; i < n; i++ {
			if gap := ph[i] - ph[i-1]; gap > 3*even {
				t.Fatalf("n=%d: gap %v between phases %v and %v, more than 3x the even gap %v", n, gap, ph[i-1], ph[i], even)
			}
		}
	})
}

func TestGridNextAtOrAfterKeepsTheGrid(t *testing.T) {
	g := Grid{Interval: time.Second}
	for _, c := range []struct{ first, now, want time.Duration }{
		{5 * time.Second, 2 * time.Second, 5 * time.Second},   // not due yet
		{5 * time.Second, 5 * time.Second, 5 * time.Second},   // due now
		{5 * time.Second, 5*time.Second + 1, 6 * time.Second}, // just missed: next slot
		{5 * time.Second, 9500 * time.Millisecond, 10 * time.Second},
	} {
		if got := g.NextAtOrAfter(c.first, c.now); got != c.want {
			t.Errorf("NextAtOrAfter(%v, %v) = %v, want %v", c.first, c.now, got, c.want)
		}
	}
}
