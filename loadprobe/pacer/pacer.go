// Package pacer is the one open-loop schedule both load probes follow (as
// wrk2 and vegeta do): when each event is due is fixed before the run
// starts, never by when the previous one returned, so a stall shows up as
// latency measured from the scheduled time instead of silently lowering
// the rate (coordinated omission).
//
// Two shapes cover the probes: Constant, events at a fixed rate (the MQTT
// probe's connects, an IoTDB worker's operations), and Grid, every member
// of a population repeating at one interval with its phase spread evenly
// over that interval (the MQTT probe's publishers, the IoTDB workers'
// starts). All times are offsets from the schedule's start, in
// nanoseconds (time.Duration), so a caller adds its own clock base.
package pacer

import (
	"math"
	"time"
)

// Constant is a fixed-rate schedule of Rate events per second: event i
// (0-based) is due at i/Rate seconds after the start.
type Constant struct {
	Rate float64 // events/s, > 0
}

// At is when event i is due, as an offset from the start. It is exact for
// any i (computed from i, not accumulated), so a long run does not drift.
func (c Constant) At(i int) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / c.Rate)
}

// Interval is the time between two events (1/Rate), rounded down to the
// nanosecond.
func (c Constant) Interval() time.Duration {
	return time.Duration(float64(time.Second) / c.Rate)
}

// Grid is a population whose members each repeat every Interval, member i
// with its own phase (Phase), so that n members together spread their
// events evenly over any interval instead of firing at once.
type Grid struct {
	Interval time.Duration // > 0
}

// goldenFrac is the fractional part of the golden ratio: i*goldenFrac mod 1
// is the low-discrepancy sequence that places any number of consecutive
// members evenly over [0, 1).
const goldenFrac = 0.6180339887498949

// Phase is member i's offset within the interval, in [0, Interval):
// (i × 0.618…) mod 1 of the interval. Consecutive members land far apart,
// and any n of them spread evenly, whatever n is.
func (g Grid) Phase(i int) time.Duration {
	f := math.Mod(float64(i)*goldenFrac, 1)
	return time.Duration(f * float64(g.Interval))
}

// NextAtOrAfter is the first slot of the grid first, first+Interval,
// first+2×Interval, … that is not before now: where a member whose first
// slot has already passed (it connected late) joins its grid without
// moving it.
func (g Grid) NextAtOrAfter(first, now time.Duration) time.Duration {
	if first >= now {
		return first
	}
	iv := g.Interval
	return first + (now-first+iv-1)/iv*iv
}
