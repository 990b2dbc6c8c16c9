package latency

import (
	"testing"
	"time"

	"pgregory.net/rapid"
)

func TestSummaryOrderedAndMerged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		vals := rapid.SliceOfN(rapid.Int64Range(-1000, int64(2*time.Hour)), 1, 200).Draw(t, "vals")
		a, b, all := New(), New(), New()
		for i, v := range vals {
			if i%2 == 0 {
				a.Record(time.Duration(v))
			} else {
				b.Record(time.Duration(v))
			}
			all.Record(time.Duration(v))
		}
		a.Merge(b)
		s, w := a.Summary(), all.Summary()
		if s != w {
			t.Fatalf("merged %v != direct %v", s, w)
		}
		if s.Count != int64(len(vals)) {
			t.Fatalf("count %d want %d", s.Count, len(vals))
		}
		seq := []float64{s.Min, s.P50, s.P90, s.P95, s.P99, s.P999, s.Max}
		for i := range seq {
			if seq[i] < 0 {
				t.Fatalf("negative %v", s)
			}
			if i > 0 && seq[i] < seq[i-1] {
				t.Fatalf("not ordered: %v", s)
			}
		}
	})
}

func TestPercentilesAccurate(t *testing.T) {
	r := New()
	for i := 1; i <= 10000; i++ { // 1..10000 µs
		r.Record(time.Duration(i) * time.Microsecond)
	}
	s := r.Summary()
	check := func(name string, got, want float64) {
		if got < want*0.999 || got > want*1.002 {
			t.Errorf("%s = %.4f ms, want %.4f ms (±0.1%%)", name, got, want)
		}
	}
	check("p50", s.P50, 5)
	check("p99", s.P99, 9.9)
	check("max", s.Max, 10)
	check("min", s.Min, 0.001)
	if r.Quantile(50) < 4990*time.Microsecond {
		t.Errorf("Quantile(50) = %v", r.Quantile(50))
	}
	var empty Summary
	if New().Summary() != empty {
		t.Error("empty recorder must give a zero summary")
	}
}
