package mqtt

import (
	"fmt"
	"time"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/loadprobe/pacer"
)

// offerAllowance is how far the offered load may fall short of the asked
// load before mqtt.schedule fails: 2%.
const offerAllowance = 0.02

// Offered accounts for every message of the asked load (open loop: each
// client's slots on its fixed grid, from its first slot after its
// scheduled connect to the end of the window as it ran), as exactly one
// of: sent (Messages.Published), not sent because its client never
// connected, not sent because its client had lost its connection, or not
// sent because the run ended before they were (interrupted, stopped
// early, or the probe behind its schedule by more than the grace).
// Asked = Sent + NotSentConnect + NotSentLost + NotSentCut.
type Offered struct {
	Asked          int64 `json:"asked"`
	Sent           int64 `json:"sent"`
	NotSentConnect int64 `json:"not_sent_connect_failed"`
	NotSentLost    int64 `json:"not_sent_connection_lost"`
	NotSentCut     int64 `json:"not_sent_run_ended,omitempty"`
	// Window* are the same for the slots of the steady window, whose
	// rate mqtt.schedule judges: WindowSent / WindowAsked is the share of
	// the asked rate that was offered.
	WindowAsked          int64 `json:"window_asked"`
	WindowSent           int64 `json:"window_sent"`
	WindowNotSentConnect int64 `json:"window_not_sent_connect_failed"`
	WindowNotSentLost    int64 `json:"window_not_sent_connection_lost"`
	WindowNotSentCut     int64 `json:"window_not_sent_run_ended,omitempty"`
	// AskedPerSec is the asked rate (Clients / PubInterval); OfferedPerSec
	// the window's sent messages per second of the window as it ran.
	AskedPerSec   float64 `json:"asked_per_s"`
	OfferedPerSec float64 `json:"offered_per_s"`
}

// NotSent is the asked messages that were never written.
func (o Offered) NotSent() int64 { return o.NotSentConnect + o.NotSentLost + o.NotSentCut }

// share is WindowSent / WindowAsked (1 when nothing was asked).
func (o Offered) share() float64 {
	if o.WindowAsked == 0 {
		return 1
	}
	return float64(o.WindowSent) / float64(o.WindowAsked)
}

// firstSlot is client i's first publish slot (ns since the run base): the
// first slot of its fixed grid (scheduled connect time + spread offset +
// k*interval) at or after its scheduled connect time.
func (r *run) firstSlot(i int) int64 {
	sched := r.start + int64(pacer.Constant{Rate: r.cfg.ConnRate}.At(r.cfg.Shard.Global(i)))
	grid := pacer.Grid{Interval: r.cfg.PubInterval}
	return int64(grid.NextAtOrAfter(time.Duration(sched)+grid.Phase(r.cfg.Shard.Global(i)), time.Duration(sched)))
}

// slots is how many slots of a grid from first every iv ns fall in
// [from, to).
func slots(first, iv, from, to int64) int64 {
	count := func(end int64) int64 { // slots in [first, end)
		if end <= first {
			return 0
		}
		return (end - first + iv - 1) / iv
	}
	if to <= from {
		return 0
	}
	return count(to) - count(from)
}

// offered accounts for the asked load, client by client; it runs once the
// load has stopped (every connection is closed or dead).
func (r *run) offered(windowSeconds float64) Offered {
	o := Offered{AskedPerSec: float64(r.n) / r.cfg.PubInterval.Seconds()}
	if r.sched == nil {
		return o
	}
	end := r.winEnd.Load()
	if end == 0 {
		end = r.pubEnd
	}
	iv := int64(r.cfg.PubInterval)
	for i := 0; i < r.n; i++ {
		first := r.firstSlot(i)
		asked := slots(first, iv, first, end)
		warm := slots(first, iv, first, min(r.rampEnd, end))
		win := asked - warm
		o.Asked += asked
		o.WindowAsked += win
		c := r.conns[i].Load()
		if c == nil {
			o.NotSentConnect += asked
			o.WindowNotSentConnect += win
			continue
		}
		c.mu.Lock()
		sent, lost := min(int64(c.seq), asked), c.lost
		c.mu.Unlock()
		// A client writes its slots in order and stops at the first it
		// cannot write: what it sent is a prefix of its slots.
		winSent := min(max(sent-warm, 0), win)
		o.Sent += sent
		o.WindowSent += winSent
		if lost {
			o.NotSentLost += asked - sent
			o.WindowNotSentLost += win - winSent
		} else {
			o.NotSentCut += asked - sent
			o.WindowNotSentCut += win - winSent
		}
	}
	if windowSeconds > 0 {
		o.OfferedPerSec = float64(o.WindowSent) / windowSeconds
	}
	return o
}

// notSentText is "N not sent: a because their client failed to connect,
// b because it lost its connection, c because the run ended before they
// were sent" for
// the window's slots (the parts that are not 0), "" when all were sent.
func (o Offered) notSentText() string {
	n := o.WindowNotSentConnect + o.WindowNotSentLost + o.WindowNotSentCut
	if n == 0 {
		return ""
	}
	var parts []string
	if o.WindowNotSentConnect > 0 {
		parts = append(parts, fmt.Sprintf("%d because their client failed to connect", o.WindowNotSentConnect))
	}
	if o.WindowNotSentLost > 0 {
		parts = append(parts, fmt.Sprintf("%d because their client had lost its connection", o.WindowNotSentLost))
	}
	if o.WindowNotSentCut > 0 {
		parts = append(parts, fmt.Sprintf("%d because the run ended before they were sent", o.WindowNotSentCut))
	}
	s := fmt.Sprintf("%s of the window's %d not sent: ", plural.N(n, "message"), o.WindowAsked)
	for i, p := range parts {
		if i > 0 {
			s += ", "
		}
		s += p
	}
	return s
}

// text is the offered load in one line: the window's offered rate
// against the asked rate, and the whole run's asked messages by outcome.
func (o Offered) text() string {
	s := fmt.Sprintf("%.1f of %.1f msg/s asked over the window (%.1f%%); %d of %d asked messages sent, not sent: %d (client failed to connect), %d (connection lost)",
		o.OfferedPerSec, o.AskedPerSec, o.share()*100, o.Sent, o.Asked, o.NotSentConnect, o.NotSentLost)
	if o.NotSentCut > 0 {
		s += fmt.Sprintf(", %d (the run ended before they were sent)", o.NotSentCut)
	}
	return s
}
