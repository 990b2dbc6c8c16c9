// Package latency records durations in an HdrHistogram and summarises
// them as percentiles in milliseconds.
//
// A Recorder is not safe for concurrent use: give each goroutine its own
// (latency.New) and Merge them at the end, as wrk2 does. Values are
// recorded in microseconds from 1 µs to 1 hour with 3 significant digits
// (relative error <= 0.1%); shorter values count as 1 µs, longer ones as
// 1 hour and are counted in Summary.Clamped.
//
// A value that never arrived in time (a PUBLISH never acknowledged within
// the probe's grace period) is recorded with RecordCensored at no less
// than its censoring bound, so a percentile is never computed over the
// survivors only; Summary.Censored says how many values are such bounds.
//
// Snapshot and FromSnapshot carry a Recorder losslessly between hosts
// (HdrHistogram's compressed V2 encoding, base64): merging snapshots and
// reading a percentile gives exactly the percentile of one histogram of
// all the values.
package latency

import (
	"fmt"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

const (
	lowestUS  = 1
	highestUS = int64(time.Hour / time.Microsecond)
	sigFigs   = 3
)

// Recorder is one goroutine's histogram of durations.
type Recorder struct {
	h        *hdrhistogram.Histogram
	clamped  int64
	censored int64
}

// New returns an empty Recorder (about 40 KiB of counters).
func New() *Recorder {
	return &Recorder{h: hdrhistogram.New(lowestUS, highestUS, sigFigs)}
}

// Record adds one duration. Negative and sub-microsecond durations count
// as 1 µs (clock granularity); durations above one hour as one hour.
func (r *Recorder) Record(d time.Duration) {
	us := int64(d / time.Microsecond)
	if us < lowestUS {
		us = lowestUS
	}
	if us > highestUS {
		us = highestUS
		r.clamped++
	}
	_ = r.h.RecordValue(us) // cannot fail: us is within the trackable range
}

// RecordCensored adds one value that was never observed: the event did
// not happen before bound (e.g. no PUBACK within the grace period). It is
// recorded at max(d, bound), so percentiles treat it as at least that
// slow, and counted in Summary.Censored.
func (r *Recorder) RecordCensored(d, bound time.Duration) {
	if d < bound {
		d = bound
	}
	r.Record(d)
	r.censored++
}

// Merge adds every value recorded in other to r. other is unchanged.
func (r *Recorder) Merge(other *Recorder) {
	if other == nil {
		return
	}
	r.h.Merge(other.h)
	r.clamped += other.clamped
	r.censored += other.censored
}

// Reset empties r for reuse.
func (r *Recorder) Reset() { r.h.Reset(); r.clamped = 0; r.censored = 0 }

// Snapshot is a Recorder in a lossless, portable form (JSON): the
// histogram in HdrHistogram's compressed V2 encoding, base64 (readable by
// every HdrHistogram implementation; values in µs), and the clamped and
// censored counts.
type Snapshot struct {
	HDR      string `json:"hdr"`
	Clamped  int64  `json:"clamped,omitempty"`
	Censored int64  `json:"censored,omitempty"`
}

// Snapshot encodes everything recorded so far. Encoding an in-memory
// histogram cannot fail; an error would be a library fault and is
// returned as is.
func (r *Recorder) Snapshot() (Snapshot, error) {
	b, err := r.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return Snapshot{}, fmt.Errorf("encoding the latency histogram: %w", err)
	}
	return Snapshot{HDR: string(b), Clamped: r.clamped, Censored: r.censored}, nil
}

// FromSnapshot decodes s into a Recorder that Merge accepts. An empty
// HDR gives an empty Recorder; a corrupt one, or one recorded with
// another range or precision than New's (1 µs to 1 hour, 3 significant
// digits), is an error.
func FromSnapshot(s Snapshot) (*Recorder, error) {
	r := New()
	if s.HDR == "" {
		if s.Clamped != 0 || s.Censored != 0 {
			return nil, fmt.Errorf("latency snapshot has no histogram but counts %d clamped and %d censored values", s.Clamped, s.Censored)
		}
		return r, nil
	}
	h, err := hdrhistogram.Decode([]byte(s.HDR))
	if err != nil {
		return nil, fmt.Errorf("decoding the latency histogram: %w", err)
	}
	if h.LowestTrackableValue() != lowestUS || h.HighestTrackableValue() != highestUS || h.SignificantFigures() != sigFigs {
		return nil, fmt.Errorf("latency histogram covers %d..%d µs with %d significant digits; want %d..%d with %d (a hostprep probe's)",
			h.LowestTrackableValue(), h.HighestTrackableValue(), h.SignificantFigures(), lowestUS, highestUS, sigFigs)
	}
	r.h = h
	r.clamped, r.censored = s.Clamped, s.Censored
	return r, nil
}

// Quantile returns the value at q (0..100, e.g. 99.9) as a Duration; 0
// when nothing was recorded.
func (r *Recorder) Quantile(q float64) time.Duration {
	if r.h.TotalCount() == 0 {
		return 0
	}
	return time.Duration(r.h.ValueAtPercentile(q)) * time.Microsecond
}

// Summary is a latency distribution in milliseconds. Percentiles come from
// the histogram (equivalent-value upper bounds, within 0.1%), so
// Min <= P50 <= P90 <= P95 <= P99 <= P999 <= Max always holds and no value
// is negative. All fields are 0 when Count is 0.
type Summary struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min_ms"`
	Mean  float64 `json:"mean_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
	// Clamped counts values above the 1 hour ceiling (recorded as 1 hour).
	Clamped int64 `json:"clamped,omitempty"`
	// Censored counts values that never arrived (RecordCensored): they
	// are part of Count and of every percentile at no less than their
	// bound (for the MQTT probe, --grace).
	Censored int64 `json:"censored"`
}

func ms(us int64) float64 { return float64(us) / 1000 }

// Summary computes the percentiles of everything recorded so far.
func (r *Recorder) Summary() Summary {
	n := r.h.TotalCount()
	if n == 0 {
		return Summary{}
	}
	p := r.h.ValueAtPercentilesSlice([]float64{50, 90, 95, 99, 99.9})
	s := Summary{
		Count:    n,
		Min:      ms(r.h.Min()),
		Mean:     r.h.Mean() / 1000,
		P50:      ms(p[0]),
		P90:      ms(p[1]),
		P95:      ms(p[2]),
		P99:      ms(p[3]),
		P999:     ms(p[4]),
		Max:      ms(r.h.Max()),
		Clamped:  r.clamped,
		Censored: r.censored,
	}
	// Min is the lowest equivalent value while percentiles and Max are the
	// highest equivalent values of their buckets; keep the order strict.
	for _, v := range []*float64{&s.P50, &s.P90, &s.P95, &s.P99, &s.P999, &s.Max} {
		if *v < s.Min {
			*v = s.Min
		}
	}
	prev := s.Min
	for _, v := range []*float64{&s.P50, &s.P90, &s.P95, &s.P99, &s.P999, &s.Max} {
		if *v < prev {
			*v = prev
		}
		prev = *v
	}
	return s
}

// Duration converts a millisecond figure of a Summary back to a Duration.
func Duration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// String formats the summary as one line: "n=… p50=…ms … max=…ms".
func (s Summary) String() string {
	out := fmt.Sprintf("n=%d min=%.3fms p50=%.3fms p90=%.3fms p95=%.3fms p99=%.3fms p99.9=%.3fms max=%.3fms",
		s.Count, s.Min, s.P50, s.P90, s.P95, s.P99, s.P999, s.Max)
	if s.Censored > 0 {
		out += fmt.Sprintf(" censored=%d", s.Censored)
	}
	return out
}
