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

// Shards recorded apart, shipped as snapshots and merged give exactly the
// percentiles of one histogram of all their values (the fleet report
// relies on it), and the clamped and censored counts add up.
func TestSnapshotMergeEqualsUnion(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 6).Draw(t, "shards")
		all := New()
		var snaps []Snapshot
		for k := 0; k < n; k++ {
			r := New()
			vals := rapid.SliceOfN(rapid.Int64Range(0, int64(90*time.Minute)), 0, 300).Draw(t, "vals")
			for i, v := range vals {
				if i%7 == 3 {
					r.RecordCensored(time.Duration(v), 5*time.Second)
					all.RecordCensored(time.Duration(v), 5*time.Second)
					continue
				}
				r.Record(time.Duration(v))
				all.Record(time.Duration(v))
			}
			s, err := r.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			snaps = append(snaps, s)
		}
		merged := New()
		for _, s := range snaps {
			r, err := FromSnapshot(s)
			if err != nil {
				t.Fatal(err)
			}
			merged.Merge(r)
		}
		if got, want := merged.Summary(), all.Summary(); got != want {
			t.Fatalf("merged snapshots %+v != union %+v", got, want)
		}
		for _, q := range []float64{50, 95, 99, 99.9} {
			if merged.Quantile(q) != all.Quantile(q) {
				t.Fatalf("p%g: merged %v != union %v", q, merged.Quantile(q), all.Quantile(q))
			}
		}
	})
}

func TestCensoredAtLeastBound(t *testing.T) {
	r := New()
	for i := 0; i < 80; i++ {
		r.Record(2 * time.Millisecond)
	}
	for i := 0; i < 1920; i++ {
		r.RecordCensored(time.Millisecond, 5*time.Second) // never acked: counts as >= 5 s
	}
	s := r.Summary()
	if s.Count != 2000 || s.Censored != 1920 {
		t.Fatalf("count %d censored %d, want 2000 and 1920", s.Count, s.Censored)
	}
	if s.P95 < 5000 {
		t.Fatalf("p95 %.3f ms computed over the survivors; want >= 5000 ms", s.P95)
	}
}

func TestFromSnapshotRejects(t *testing.T) {
	if _, err := FromSnapshot(Snapshot{HDR: "not base64!"}); err == nil {
		t.Fatal("corrupt histogram accepted")
	}
	if _, err := FromSnapshot(Snapshot{Censored: 3}); err == nil {
		t.Fatal("counts without a histogram accepted")
	}
	r, err := FromSnapshot(Snapshot{})
	if err != nil || r.Summary().Count != 0 {
		t.Fatalf("empty snapshot: %v %+v", err, r.Summary())
	}
}
