package iotdb

import (
	"sync/atomic"
	"time"
)

// answerClock is the run's one timeline of answers from the server, for
// iotdb.stall: the longest time without any answer is measured as a time
// interval between answers, not counted in whole seconds (an outage of
// up to 3 s that straddles second boundaries empties only one second:
// 2.52 s of silence passed as "answered in every second").
//
// The timeline starts at the warm-up's start (or the first judged
// step's, without a warm-up): a stall during the warm-up is a stall of
// the server, and a step that got no answer from its start counts from
// there. The warm-up and the steps follow each other on it, the moments
// between them (no operation in flight) left out, so a silence that runs
// from one into the next is one. Each answer (a success, or an error status: see
// answeredBy) moves the latest answer forward with a CAS max and gives the
// gap since the previous one. An answer is registered when its worker
// gets to it after reading it; the gaps are exact to that delay (a
// goroutine waiting for a CPU), as the latencies are.
//
// Its fields but last are written only between steps (beginStep,
// endStep), when no worker runs.
type answerClock struct {
	base    time.Time     // the warm-up's or first judged step's start
	paused  time.Duration // the time between steps, left out of the timeline
	stopped int64         // timeline ns of the latest step's end
	starts  []stepMark    // where each judged step starts on the timeline
	last    atomic.Int64  // timeline ns of the latest answer (or of the timeline's start)
}

// timelineStep puts a step on the run's answerClock as step (its index
// in Result.Steps, warmupStep for the warm-up); a nil clock leaves it
// off: an open-loop step owing less than one operation a second
// (stallJudged).
type timelineStep struct {
	clock *answerClock
	step  int
}

// warmupStep is the warm-up's step number on the timeline (Silence.FromStep).
const warmupStep = -1

// stepMark is where step (its index in Result.Steps) starts on the
// timeline (ns).
type stepMark struct {
	step int
	at   int64
}

// at is t's place on the timeline (ns since its start, without the
// pauses between steps).
func (c *answerClock) at(t time.Time) int64 { return int64(t.Sub(c.base) - c.paused) }

// beginStep puts step (its index in Result.Steps), starting at start,
// on the timeline: where the latest step ended, or at 0 for the first.
func (c *answerClock) beginStep(step int, start time.Time) {
	if c.base.IsZero() {
		c.base = start
		c.last.Store(0)
	} else {
		c.paused = start.Sub(c.base) - time.Duration(c.stopped)
	}
	c.starts = append(c.starts, stepMark{step: step, at: c.at(start)})
}

// answered registers an answer read at now; gap is the time since the
// previous answer (or since the timeline's start), from where that began
// (timeline ns). An answer registered after a later one (another worker
// got there first) ends no gap: 0.
func (c *answerClock) answered(now time.Time) (gap time.Duration, from int64) {
	t := c.at(now)
	for {
		prev := c.last.Load()
		if t <= prev {
			return 0, prev
		}
		if c.last.CompareAndSwap(prev, t) {
			return time.Duration(t - prev), prev
		}
	}
}

// endStep ends the current step at end: its Silence is the longest of
// the gaps its workers saw (stats) and the one still open at its end
// (from the latest answer to end, which the next step may lengthen).
func (c *answerClock) endStep(end time.Time, stats []*workerStats) *Silence {
	var longest time.Duration
	var from int64
	for _, st := range stats {
		if st.gap > longest {
			longest, from = st.gap, st.gapFrom
		}
	}
	t := c.at(end)
	last := c.last.Load()
	if open := time.Duration(t - last); open > longest {
		longest, from = open, last
	}
	c.stopped = t
	return c.silence(longest, from)
}

// silence is a Silence of d that began at from (timeline ns): in the last
// step that had started by then.
func (c *answerClock) silence(d time.Duration, from int64) *Silence {
	at := c.starts[0]
	for _, m := range c.starts {
		if m.at <= from {
			at = m
		}
	}
	return &Silence{S: d.Seconds(), FromStep: at.step, FromS: time.Duration(from - at.at).Seconds()}
}
