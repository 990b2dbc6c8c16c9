package mqtt

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/contention"
	"github.com/hostprep/hostprep/loadprobe/counts"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/loadprobe/latency"
)

// Result is what one probe run measured. It serialises to JSON as-is
// (latencies in ms, see latency.Summary).
type Result struct {
	RunID string `json:"run_id"`
	// Hostname is the load generator's host name (os.Hostname).
	Hostname string `json:"hostname,omitempty"`
	// Broker is the URL probed, or "embedded mochi-mqtt broker at ...".
	Broker string `json:"broker"`
	// BrokerNote says what an embedded-broker result measures.
	BrokerNote string    `json:"broker_note,omitempty"`
	Filter     string    `json:"subscription_filter"`
	Config     Config    `json:"config"`
	StartedAt  time.Time `json:"started_at"`
	// RampSeconds is the connect ramp (Clients/ConnRate), the warm-up;
	// WindowSeconds the steady-state window after it as it really ran:
	// Config.Duration, or less when the run stopped early (broker died,
	// every subscriber lost, interrupted), so rates are per real second;
	// DrainSeconds the time spent waiting for outstanding acks/deliveries
	// after it (up to the interrupt when one ended the drain; 0 when the
	// run ended before its window did).
	// Procs is the GOMAXPROCS the probe ran with (see Config.Procs).
	Procs         int     `json:"procs"`
	RampSeconds   float64 `json:"ramp_s"`
	WindowSeconds float64 `json:"window_s"`
	DrainSeconds  float64 `json:"drain_s"`

	// Interrupted is true when the caller's context ended the run
	// (Ctrl-C, SIGTERM, a deadline): every count is partial and the
	// verdict is fail (check mqtt.complete), never pass.
	Interrupted bool `json:"interrupted"`
	// StoppedEarlyReason says why the run ended before its planned
	// window (interrupted, every subscriber lost, no client connected);
	// empty when it ran its course.
	StoppedEarlyReason string `json:"stopped_early_reason,omitempty"`

	// ScheduleStart is the wall-clock instant the schedule started: the
	// fleet's client 0 connects then (Config.StartAt when given).
	ScheduleStart time.Time `json:"schedule_start,omitzero"`
	// FirstPublish is when this run's first PUBLISH was written and when
	// it was scheduled (nil when nothing was published).
	FirstPublish *FirstPublish `json:"first_publish,omitempty"`
	// Clock is this host's clock as adjtimex reported it before a
	// StartAt run (nil otherwise).
	Clock *fleet.Clock `json:"clock,omitempty"`

	Verdict verdict.Status  `json:"verdict"`
	Checks  []verdict.Check `json:"checks"`
	// Failures name what went wrong in words (broker died, acks
	// missing, ...), for people.
	Failures []string `json:"failures,omitempty"`

	Baseline Baseline `json:"baseline"`
	Connects Connects `json:"connects"`
	Messages Messages `json:"messages"`
	// Offered accounts for every message of the asked load: sent, or
	// not sent and why; mqtt.schedule fails when the window's offered
	// rate falls more than 2% short of the asked rate.
	Offered Offered `json:"offered"`
	// Evidence is what this host shows of a broker running on it, when
	// connects failed or connections were lost (nil otherwise).
	Evidence *BrokerEvidence `json:"broker_evidence,omitempty"`
	// Protocol is how the broker's answers fit the flows the probe began.
	Protocol   Protocol   `json:"protocol"`
	Latency    Latencies  `json:"latency"`
	Throughput Throughput `json:"throughput"`
	// Host is what the kernel counted meanwhile (this netns, all sockets).
	Host HostCounters `json:"host"`
	// CPU is how busy the host's CPUs were over the run and how much of
	// them this process used (contention): what a schedule overrun is
	// blamed on.
	CPU    contention.Figures `json:"cpu"`
	Series []Second           `json:"series,omitempty"`
	// Histograms are the latency histograms behind Latency, lossless
	// (HdrHistogram's encoded form), for `hostprep report merge` to
	// compute a fleet's exact percentiles.
	Histograms Histograms `json:"histograms"`
}

// Histograms are Latencies' histograms in HdrHistogram's compressed
// base64 form (values in µs, 1 µs to 1 h, 3 significant digits), with
// their clamped and censored counts.
type Histograms struct {
	Connect   latency.Snapshot `json:"connect"`
	Ack       latency.Snapshot `json:"ack"`
	E2E       latency.Snapshot `json:"e2e"`
	WarmupAck latency.Snapshot `json:"warmup_ack"`
	WarmupE2E latency.Snapshot `json:"warmup_e2e"`
}

// FirstPublish times the first PUBLISH of a run (wall clock, UTC):
// written At, Scheduled for, and LateMs = At - Scheduled in ms.
type FirstPublish struct {
	At        time.Time `json:"at"`
	Scheduled time.Time `json:"scheduled"`
	LateMs    float64   `json:"late_ms"`
}

// Baseline is measured before the load: one client's connect and
// PINGREQ->PINGRESP round trip, and the scheduler timer's lateness over
// 200 sleeps of 0.1-2 ms (the probe's own jitter floor: every latency
// includes up to this much of the probe's own delay).
type Baseline struct {
	ConnectMs           float64         `json:"connect_ms"`
	SubscriberConnectMs float64         `json:"subscriber_connect_ms"`
	RoundTrip           latency.Summary `json:"round_trip"`
	SchedulerJitter     latency.Summary `json:"scheduler_jitter"`
}

// Connects counts CONNECT attempts of the publishing clients. Every
// publisher is in exactly one of OK, Failed, Canceled and NotStarted:
// Target = OK + Failed + Canceled + NotStarted.
type Connects struct {
	Target int   `json:"target"`
	OK     int64 `json:"ok"`
	Failed int64 `json:"failed"`
	// FailedBy: refused, timeout, no_connack (TCP accepted, no CONNACK
	// within ConnectTimeout), not_authorised, server_unavailable,
	// fd_limit, no_source_port, closed_by_broker, reset, tls, canceled
	// (cut short by the probe's own stop in a run that was not
	// interrupted), other.
	FailedBy map[string]int64 `json:"failed_by,omitempty"`
	// NotStarted are publishers whose connect was never attempted: the
	// run ended (interrupted, stopped early) before their turn in the
	// ramp. Canceled are connects in flight when the run was
	// interrupted, cut short by the probe. Neither is a failed connect
	// (not in Failed, FailedBy or FailRate); both are 0 for a run that
	// went its course.
	NotStarted int64 `json:"not_started"`
	Canceled   int64 `json:"canceled"`
	// Lost are established publisher connections that ended before the
	// run did (at most OK).
	Lost   int64            `json:"lost"`
	LostBy map[string]int64 `json:"lost_by,omitempty"`
	// Subscribers is Config.Subscribers; SubscribersLost counts subscriber
	// connections that ended before the run did (not part of Target, OK
	// or Lost).
	Subscribers       int              `json:"subscribers"`
	SubscribersLost   int64            `json:"subscribers_lost"`
	SubscribersLostBy map[string]int64 `json:"subscribers_lost_by,omitempty"`
	// FailRate is Failed / (OK + Failed), the share of the connects
	// that got an outcome (Failed / Target for a run that went its
	// course); 0 when none did.
	FailRate float64 `json:"fail_rate"`
	// StartedLate are connects the probe itself started more than 10 ms
	// after their scheduled time (its scheduler was paused or starved):
	// their connect latency, measured from the scheduled time, holds the
	// probe's own delay.
	StartedLate int64 `json:"started_late,omitempty"`
}

// attempted is the number of connects that got an outcome.
func (c *Connects) attempted() int64 { return c.OK + c.Failed }

// setFailRate computes FailRate from the counts.
func (c *Connects) setFailRate() {
	c.FailRate = 0
	if n := c.attempted(); n > 0 {
		c.FailRate = float64(c.Failed) / float64(n)
	}
}

// Messages accounts every scheduled PUBLISH. Invariants: Published =
// Acked + Unacked + AckInFlight (QoS>0); Received + Lost + InFlight =
// Expected = Published.
type Messages struct {
	// Scheduled publish slots that fell due on a connected client.
	Scheduled int64 `json:"scheduled"`
	// Published were written to the socket (once; re-sends are Resent).
	Published int64 `json:"published"`
	// SendFailed = Scheduled - Published: the connection failed first.
	SendFailed int64 `json:"send_failed"`
	// Acked got PUBACK (QoS 1) or PUBCOMP (QoS 2) with a success code.
	Acked   int64 `json:"acked"`
	Unacked int64 `json:"unacked"`
	// AckInFlight are QoS>0 publishes still waiting for their ack at an
	// interrupt, sent less than the grace period before it: like
	// InFlight, neither acked nor known unacked; in the ack latencies
	// censored at the time they had waited. 0 for a run that was not
	// interrupted.
	AckInFlight int64 `json:"ack_in_flight,omitempty"`
	// AckErrors are acks with a v5 reason code >= 0x80 (part of Unacked).
	AckErrors int64 `json:"ack_errors"`
	// Resent are DUP re-sends after RetryInterval (not in Published).
	Resent int64 `json:"resent"`
	// Expected = Published; Received counts distinct messages seen by
	// the subscribers; Lost = Expected - Received - InFlight.
	Expected int64 `json:"expected"`
	Received int64 `json:"received"`
	Lost     int64 `json:"lost"`
	// InFlight are messages not received that were published less than
	// the grace period (Config.Grace) before an interrupt ended the run:
	// still on their way, neither delivered nor known lost; in the
	// end-to-end latencies censored at the time they had waited (a p95
	// over the delivered only would pass a stalled broker). 0 for a run
	// that was not interrupted
	// (its drain gave every message the grace period).
	InFlight int64 `json:"in_flight"`
	// LostAfterAck: acknowledged by the broker yet never delivered.
	LostAfterAck int64 `json:"lost_after_ack"`
	// LossRate is Lost over the asked load (Offered.Asked; over Expected
	// in a result without it): the messages never sent are not in it,
	// but shown apart (Offered, mqtt.schedule).
	LossRate float64 `json:"loss_rate"`
	// Duplicated: a message seen again (e.g. a DUP re-send delivered
	// twice); counted once in Received.
	Duplicated int64 `json:"duplicated"`
	// OutOfOrder: a message with a lower sequence number than one the
	// same subscriber already got from the same publisher.
	OutOfOrder int64 `json:"out_of_order"`
	// Overruns: publishes issued more than 10 ms after their scheduled
	// time (the probe or the socket fell behind the schedule).
	Overruns int64 `json:"overruns"`
	// LateConnect are publish slots that passed while their client
	// waited for its CONNACK, LateDial those that passed more than 10 ms
	// before the probe even started their client's connect (its own
	// delay). Both were published as soon as the client connected, more
	// than 10 ms late, their latencies measured from the slot; both are
	// part of Overruns.
	LateConnect int64 `json:"late_connect,omitempty"`
	LateDial    int64 `json:"late_dial,omitempty"`
}

// Latencies in ms, all measured from the scheduled time (so a stall
// shows up as latency, not as a lower rate). Ack ends at the PUBACK (QoS
// 1) or the PUBCOMP (QoS 2: PUBLISH->PUBREC, the probe's PUBREL sent as
// the PUBREC is read, and PUBREL->PUBCOMP). Ack and E2E cover messages
// scheduled in the steady window; Warmup* those scheduled during the
// connect ramp. Every published message is in them: one never
// acknowledged (Ack) or never delivered (E2E) is counted at no less than
// the grace period (Config.Grace) and in Summary.Censored.
type Latencies struct {
	Connect      latency.Summary `json:"connect"`
	Ack          latency.Summary `json:"ack"`
	E2E          latency.Summary `json:"e2e"`
	WarmupAck    latency.Summary `json:"warmup_ack"`
	WarmupE2E    latency.Summary `json:"warmup_e2e"`
	SchedulerLag latency.Summary `json:"scheduler_lag"`
}

// Throughput over the steady window as it really ran. PublishedPerSec
// is the messages scheduled in it that were published (WindowPublished)
// divided by Result.WindowSeconds (shorter than Config.Duration when the
// run stopped early; in a fleet's merged result the fleet's count over
// the fleet's window, see MergeShards). ReceivedPerSec is by arrival:
// those messages that reached a subscriber divided by the time they
// took to arrive, ReceiveSeconds, from the window's start to the last
// arrival (no less than the window): a broker that stalls and delivers
// its backlog in the drain shows a lower rate, not the requested one.
type Throughput struct {
	PublishedPerSec float64 `json:"published_per_s"`
	// WindowPublished is how many of the window's messages were
	// published: PublishedPerSec × Result.WindowSeconds, as a count, so
	// that report merge divides the fleet's count by the fleet's window.
	WindowPublished int64   `json:"window_published,omitempty"`
	ReceivedPerSec  float64 `json:"received_per_s"`
	ReceiveSeconds  float64 `json:"receive_s,omitempty"`
	// WindowReceived is how many of the window's messages arrived:
	// ReceivedPerSec × ReceiveSeconds, as a count, so that report merge
	// divides the fleet's count by the fleet's ReceiveSeconds.
	WindowReceived int64 `json:"window_received,omitempty"`
	// RequestedPerSec is Clients / PubInterval.
	RequestedPerSec float64 `json:"requested_per_s"`
}

// Second is one row of the per-second series (--csv). Second T covers
// [T-1 s, T s) from the start of the schedule (the common start of a
// fleet's shards), ramp and drain included. Connected is the clients
// connected at its end; Published, Acked and Received count the events of
// that second; AckP95 and E2EP95 (ms) are the p95 of the acks and
// deliveries that arrived in it, an ack never received counted at its
// censoring (>= Grace). Lost counts the messages scheduled in that second
// that no subscriber received by the end of the run: when they are more
// than 5% of the second's messages, its e2e p95 is at least Grace (they
// would sit above the 95th percentile of delivered ones), and E2ECensored
// says so. A p95 over the survivors alone would draw a healthy broker
// while it drops most messages. Rows are by the schedule's clock: row i
// is second i+1, every second of the run has its row (one the probe was
// stopped through has its row, with what happened in it: nothing), and
// the counts are the events that happened in that second, whenever the
// sampler got to it. Seconds is how long the row lasted: 1, but for the
// run's last row, which ends with the run (a drain's deliveries are in
// it) and is shorter, so the rows' Seconds add up to the run's length;
// the rates (rate) are per real second. A second's p95s are those of
// the acks (censored ones too) and deliveries that happened in it, the
// ones its counts count (secLat): e2e p95 > 0 exactly when Received > 0.
type Second struct {
	T           int     `json:"t_s"`
	Seconds     float64 `json:"duration_s"`
	Connected   int64   `json:"connected"`
	Published   int64   `json:"published"`
	Acked       int64   `json:"acked"`
	Received    int64   `json:"received"`
	Lost        int64   `json:"lost"`
	AckP95      float64 `json:"ack_p95_ms"`
	E2EP95      float64 `json:"e2e_p95_ms"`
	E2ECensored bool    `json:"e2e_censored,omitempty"`
}

// lostShare is the share of a second's messages that may be lost before
// its e2e p95 is censored: a p95 leaves out the slowest 5%.
const lostShare = 0.05

// censorSeries adds to each second of series the messages scheduled in it
// that were never delivered (lostAt[t-1]) and raises the e2e p95 of a
// second that lost more than lostShare of them to the grace, in ms.
func censorSeries(series []Second, lostAt []int64, grace time.Duration) {
	for i := range series {
		if i >= len(lostAt) || lostAt[i] == 0 {
			continue
		}
		s := &series[i]
		s.Lost = lostAt[i]
		if float64(s.Lost) > lostShare*float64(max(s.Published, s.Lost)) {
			s.E2EP95 = max(s.E2EP95, float64(grace)/1e6)
			s.E2ECensored = true
		}
	}
}

// length is how long s lasted in seconds (1 for a row of a result
// written before rows said so).
func (s Second) length() float64 {
	if s.Seconds <= 0 {
		return 1
	}
	return s.Seconds
}

// rate is n events of second s per real second.
func (s Second) rate(n int64) float64 { return float64(n) / s.length() }

// e2eSamples is the number of end-to-end latencies second s's p95 stands
// on: deliveries and censored losses.
func (s Second) e2eSamples() int64 { return s.Received + s.Lost }

// noSample is NaN for a per-second p95 of no sample (count 0): a second
// in which the broker acked or delivered nothing has no latency, and 0
// would read as an instant answer.
func noSample(p95 float64, count int64) float64 {
	if count == 0 {
		return math.NaN()
	}
	return p95
}

// MarshalJSON writes ack_p95_ms and e2e_p95_ms as null for a second with
// no ack, or no delivery and no loss (noSample); decoding null leaves 0.
func (s Second) MarshalJSON() ([]byte, error) {
	type plain Second
	v := struct {
		plain
		AckP95 *float64 `json:"ack_p95_ms"`
		E2EP95 *float64 `json:"e2e_p95_ms"`
	}{plain: plain(s)}
	if s.Acked > 0 {
		v.AckP95 = &s.AckP95
	}
	if s.e2eSamples() > 0 {
		v.E2EP95 = &s.E2EP95
	}
	return json.Marshal(v)
}

// scheduleAllowance is the fraction of publishes that may be issued more
// than overrunThreshold late before mqtt.schedule warns.
const scheduleAllowance = 0.01

// missing is what censorMissing found: the lost messages' end-to-end
// latencies (censored) and the deliveries of messages never published.
type missing struct {
	e2e, warmE2E *latency.Recorder
	// lostAt counts the lost messages by the series second they were
	// scheduled in (index t-1; see Second).
	lostAt []int64
	// inFlight are those published less than Grace before an interrupt;
	// ackInFlight the publishes of that time still waiting for their ack.
	inFlight, ackInFlight int64
	// unexpected counts deliveries with a sequence number the publisher
	// never wrote (a write that failed half-way may still have reached
	// the broker): not part of Received.
	unexpected int64
}

// censorMissing runs once the load has stopped. It censors every publish
// still waiting for its ack (censorInflight) and every published message
// no subscriber received, at max(Grace, now - scheduled time), so the
// ack and end-to-end percentiles cover every publish (a p95 over the
// survivors only would pass a broker that dropped 95% of them). After an
// interrupt, those sent less than Grace before it are in flight, not
// unacked or lost, and censored at now - scheduled time, the time they
// had waited. Message k of a publisher was scheduled at conn.firstSched +
// k*PubInterval.
func (r *run) censorMissing() missing {
	now := r.now()
	ms := missing{e2e: latency.New(), warmE2E: latency.New()}
	iv := int64(r.cfg.PubInterval)
	// After an interrupt, a message published within Grace of it may
	// still arrive: it is in flight, not lost.
	inFlightFrom := int64(math.MaxInt64)
	if at := r.interruptAt.Load(); at != 0 {
		inFlightFrom = at - int64(r.cfg.Grace)
	}
	r.trackMu.Lock()
	defer r.trackMu.Unlock()
	for i := range r.track {
		var pubs uint32
		var first int64
		if c := r.conns[i].Load(); c != nil {
			c.mu.Lock()
			ms.ackInFlight += r.censorRecent(c, inFlightFrom, now)
			r.censorInflight(c, now)
			pubs, first = c.seq, c.firstSched
			c.mu.Unlock()
		}
		t := &r.track[i]
		for s := uint32(pubs); int64(s) <= t.maxSeq; s++ {
			if t.bits[s/64]&(1<<(s%64)) != 0 {
				ms.unexpected++
			}
		}
		for w := 0; w*64 < int(pubs); w++ {
			var word uint64
			if w < len(t.bits) {
				word = t.bits[w]
			}
			for miss := ^word; miss != 0; miss &= miss - 1 {
				seq := w*64 + bits.TrailingZeros64(miss)
				if seq >= int(pubs) {
					break
				}
				sched := first + int64(seq)*iv
				rec := ms.e2e
				if sched < r.rampEnd {
					rec = ms.warmE2E
				}
				if sched > inFlightFrom { // at the time it had waited
					ms.inFlight++
					rec.RecordCensored(time.Duration(now-sched), 0)
					continue
				}
				rec.RecordCensored(time.Duration(now-sched), r.cfg.Grace)
				if i := int((sched - r.start) / int64(time.Second)); sched >= r.start && i < 1<<20 {
					for len(ms.lostAt) <= i {
						ms.lostAt = append(ms.lostAt, 0)
					}
					ms.lostAt[i]++
				}
			}
		}
	}
	return ms
}

// snapshots encodes the connect, ack, e2e, warm-up ack and warm-up e2e
// histograms for Result.Histograms.
func snapshots(h [5]*latency.Recorder) Histograms {
	var out [5]latency.Snapshot
	for i, r := range h {
		out[i], _ = r.Snapshot() // encoding an in-memory histogram does not fail
	}
	return Histograms{Connect: out[0], Ack: out[1], E2E: out[2], WarmupAck: out[3], WarmupE2E: out[4]}
}

// fill copies the counters and merged histograms into res and judges it.
func (r *run) fill(res *Result) {
	cfg := &r.cfg
	lost := r.censorMissing()
	censorSeries(res.Series, lost.lostAt, cfg.Grace)
	r.fillLatency(res, lost)
	cn, first := r.connects()
	res.Connects = cn
	m := r.messages(lost)
	res.Messages = m
	r.mu.Lock()
	res.Protocol = Protocol{GrantedQoS: r.grantedQoS, Downgraded: r.downgraded.Load(), WrongAck: r.wrongAcks.Load(), First: r.firstFaultText}
	r.mu.Unlock()
	res.WindowSeconds = r.windowSeconds()
	if res.WindowSeconds > 0 {
		r.trackMu.Lock()
		took := float64(r.lastWinArrival-r.rampEnd) / 1e9
		r.trackMu.Unlock()
		took = max(took, res.WindowSeconds)
		res.Throughput = Throughput{
			PublishedPerSec: float64(r.winPublished.Load()) / res.WindowSeconds,
			WindowPublished: r.winPublished.Load(),
			ReceivedPerSec:  float64(r.winReceived.Load()) / took,
			ReceiveSeconds:  took,
			WindowReceived:  r.winReceived.Load(),
		}
	}
	res.Throughput.RequestedPerSec = float64(r.n) / cfg.PubInterval.Seconds()
	res.Offered = r.offered(res.WindowSeconds)
	res.Messages.LossRate = lossRate(res.Messages, res.Offered)
	if at := r.firstPubAt.Load(); at != 0 {
		res.FirstPublish = &FirstPublish{At: r.base.Add(time.Duration(at)).UTC(), Scheduled: r.base.Add(time.Duration(r.firstPubSched.Load())).UTC()}
		res.FirstPublish.LateMs = ms(at - r.firstPubSched.Load())
	}
	res.Evidence = r.brokerEvidence(res)
	if e := res.Evidence; e != nil && e.Cause != "" {
		res.Failures = append(res.Failures, "cause on this host: "+e.Cause)
	}
	res.Failures = append(res.Failures, failuresInWords(cfg, res, r.n, first)...)
	res.Checks = judge(cfg, res)
	res.Verdict = verdict.Worst(res.Checks)
}

// fillLatency merges the shards' histograms (with the censored misses of
// lost) into res.Latency and res.Histograms.
func (r *run) fillLatency(res *Result, lost missing) {
	merged := func(extra *latency.Recorder, pick func(*shard) *latency.Recorder) *latency.Recorder {
		m := latency.New()
		m.Merge(extra)
		for _, s := range r.shards {
			s.mu.Lock()
			m.Merge(pick(s))
			s.mu.Unlock()
		}
		return m
	}
	hists := [5]*latency.Recorder{
		merged(nil, func(s *shard) *latency.Recorder { return s.connect }),
		merged(nil, func(s *shard) *latency.Recorder { return s.ack }),
		merged(lost.e2e, func(s *shard) *latency.Recorder { return s.e2e }),
		merged(nil, func(s *shard) *latency.Recorder { return s.warmAck }),
		merged(lost.warmE2E, func(s *shard) *latency.Recorder { return s.warmE2E }),
	}
	res.Latency = Latencies{Connect: hists[0].Summary(), Ack: hists[1].Summary(), E2E: hists[2].Summary(),
		WarmupAck: hists[3].Summary(), WarmupE2E: hists[4].Summary(), SchedulerLag: r.schedLag.Summary()}
	res.Histograms = snapshots(hists)
}

// connects counts the connects by outcome and reason, and returns the
// first error of each reason (keyed "connect:", "conn:", "sub:" + reason).
// Clients never attempted (the run ended early) are NotStarted, and in an
// interrupted run the connects the interrupt cut short are Canceled:
// neither counts as failed.
func (r *run) connects() (Connects, map[string]string) {
	r.mu.Lock()
	cn := Connects{Target: r.n, OK: r.connectOK, StartedLate: r.startedLate.Load(), FailedBy: map[string]int64{}, LostBy: map[string]int64{},
		Subscribers: r.cfg.Subscribers, SubscribersLostBy: map[string]int64{}}
	for k, v := range r.connectFailed {
		cn.FailedBy[k] = v
		cn.Failed += v
	}
	for k, v := range r.disconnects {
		cn.LostBy[k] = v
		cn.Lost += v
	}
	for k, v := range r.subLost {
		cn.SubscribersLostBy[k] = v
		cn.SubscribersLost += v
	}
	first := map[string]string{}
	for k, v := range r.firstFailure {
		first[k] = v
	}
	r.mu.Unlock()
	if v := cn.FailedBy["canceled"]; v > 0 && r.wasInterrupted.Load() {
		cn.Canceled = v
		cn.Failed -= v
		delete(cn.FailedBy, "canceled")
	}
	if missing := int64(r.n) - cn.OK - cn.Failed - cn.Canceled; missing > 0 {
		cn.NotStarted = missing
	}
	cn.setFailRate()
	return cn, first
}

// messages accounts the publishes: scheduled, published, acknowledged,
// received (minus the unexpected ones in lost), lost and their rates.
func (r *run) messages(lost missing) Messages {
	m := Messages{
		Scheduled: r.scheduled.Load(),
		Published: r.published.Load(),
		Acked:     r.acked.Load(),
		AckErrors: r.ackErrors.Load(),
		Resent:    r.resent.Load(),
		Overruns:  r.overruns.Load(),

		LateConnect: r.lateConnect.Load(),
		LateDial:    r.lateDial.Load(),
	}
	m.SendFailed = m.Scheduled - m.Published
	if r.cfg.QoS > 0 {
		m.AckInFlight = lost.ackInFlight
		// Answered with another flow (Protocol): not acknowledged at
		// the QoS asked, but answered, so not unacked either.
		m.Unacked = m.Published - m.Acked - m.AckInFlight - r.downgraded.Load() - r.wrongAcks.Load()
	}
	m.Expected = m.Published
	m.Received = r.received.Load() - lost.unexpected
	m.InFlight = lost.inFlight
	m.Lost = m.Expected - m.Received - m.InFlight
	if r.cfg.QoS > 0 && m.Lost > m.Unacked {
		m.LostAfterAck = m.Lost - m.Unacked
	}
	m.Duplicated = r.dup.Load()
	m.OutOfOrder = r.ooo.Load()
	return m
}

// lossRate is m.Lost over the asked load (o.Asked), or over m.Expected
// for a result that does not account for the asked load.
func lossRate(m Messages, o Offered) float64 {
	switch {
	case o.Asked > 0:
		return float64(m.Lost) / float64(o.Asked)
	case m.Expected > 0:
		return float64(m.Lost) / float64(m.Expected)
	}
	return 0
}

// inFlightText is ", in flight at the interrupt N, awaiting their ack at
// the interrupt M" for an interrupted run (each part only when not 0).
func (m Messages) inFlightText() string {
	s := ""
	if m.InFlight > 0 {
		s = fmt.Sprintf(", in flight at the interrupt %d", m.InFlight)
	}
	if m.AckInFlight > 0 {
		s += fmt.Sprintf(", awaiting their ack at the interrupt %d", m.AckInFlight)
	}
	return s
}

// failuresInWords says each failure of res in one sentence: failed and
// lost connects by reason (with the first error of each), unacknowledged
// and lost messages, listen-queue overflows, schedule overruns.
func failuresInWords(cfg *Config, res *Result, n int, first map[string]string) []string {
	var out []string
	cn, m := res.Connects, res.Messages
	if cn.Failed > 0 {
		out = append(out, fmt.Sprintf("%d of %d connects failed: %s", cn.Failed, n, byReason(cn.FailedBy, first, "connect:")))
	}
	if cn.Lost > 0 {
		out = append(out, fmt.Sprintf("%d of %d established publisher connections were lost mid-run: %s", cn.Lost, cn.OK, byReason(cn.LostBy, first, "conn:")))
	}
	if cn.SubscribersLost > 0 {
		out = append(out, fmt.Sprintf("%d of %d subscriber connections were lost mid-run: %s", cn.SubscribersLost, cn.Subscribers, byReason(cn.SubscribersLostBy, first, "sub:")))
	}
	if m.Unacked > 0 {
		out = append(out, fmt.Sprintf("%d of %d QoS %d publishes got no %s within the %v grace", m.Unacked, m.Published, cfg.QoS, flowEnd(cfg.QoS), cfg.Grace))
	}
	if p := res.Protocol; p.Downgraded > 0 {
		out = append(out, fmt.Sprintf("%d of %d QoS 2 publishes were answered with PUBACK (QoS 1's flow), not PUBREC/PUBCOMP: downgraded, not counted as acknowledged, their latency not reported as QoS 2", p.Downgraded, m.Published))
	}
	if m.Lost > 0 {
		out = append(out, fmt.Sprintf("%d of %d published messages never reached a subscriber (%d of them acknowledged by the broker)", m.Lost, m.Expected, m.LostAfterAck))
	}
	if res.Host.ListenOverflows > 0 {
		out = append(out, fmt.Sprintf("the kernel counted %d listen-queue overflows and %d SYN retransmits during the run: a listener's accept queue was full (the broker's listen backlog or net.core.somaxconn), and clients waited 1 s or more to retry — see connect latency", res.Host.ListenOverflows, res.Host.TCPSynRetrans))
	}
	if m.Overruns > 0 {
		why, _ := res.CPU.Behind(fmt.Sprintf("the probe fell behind its schedule %s (> %v late)", plural.N(m.Overruns, "time"), overrunThreshold))
		out = append(out, why)
	}
	return out
}

func byReason(m map[string]int64, first map[string]string, prefix string) string {
	return counts.Each(m, func(k string, n int64) string {
		p := fmt.Sprintf("%s %d", k, n)
		if e, ok := first[prefix+k]; ok {
			p += fmt.Sprintf(" (first: %s)", e)
		}
		return p
	})
}

// judge turns the thresholds into checks: mqtt.complete (fails when
// the run was interrupted or stopped early), mqtt.loss,
// mqtt.unacked (QoS>0, against the loss threshold),
// mqtt.connect_fail_rate, mqtt.connect_p95, mqtt.ack_p95, mqtt.e2e_p99,
// mqtt.delivery (duplicates at QoS 2, order), mqtt.connections_lost,
// mqtt.schedule.
//
// A run that ended early (interrupted, stopped early) fails on
// mqtt.complete; its checks that had nothing to measure (no publish, no
// connect attempted, no sample in the steady window) skip and say why,
// rather than fail on a rate nobody measured. In a run that went its
// full window, nothing measured fails.
func judge(cfg *Config, res *Result) []verdict.Check {
	t := cfg.Thresholds
	cs := []verdict.Check{completeCheck(res)}
	m := res.Messages
	cut, cutSteady := endedEarly(res, false), endedEarly(res, true)
	loss := fracCheck("mqtt.loss", "messages lost", m.LossRate, t.Loss,
		"check the broker's queue limits (mosquitto max_queued_messages), subscriber speed and the failures above")
	if o := res.Offered; o.Asked > 0 && loss.Status != verdict.Skip {
		loss.Summary += fmt.Sprintf(": %d of the %d asked sent and never received", m.Lost, o.Asked)
		if n := o.NotSent(); n > 0 {
			loss.Summary += fmt.Sprintf("; %d not sent, apart (see mqtt.schedule)", n)
		}
	}
	if m.Expected == 0 && t.Loss != nil {
		loss = nothingToJudge("mqtt.loss", "messages lost", "no message was published", cut)
	}
	cs = append(cs, loss)
	if cfg.QoS > 0 {
		what := fmt.Sprintf("QoS %d publishes without %s", cfg.QoS, flowEnd(cfg.QoS))
		var c verdict.Check
		if m.Published > 0 || t.Loss == nil {
			var rate float64
			if m.Published > 0 {
				rate = float64(m.Unacked) / float64(m.Published)
			}
			c = fracCheck("mqtt.unacked", what, rate, t.Loss,
				"the broker did not acknowledge: check its inflight/queue limits, its log, and the failures above")
		} else {
			// Nothing published: mqtt.loss already fails a complete run.
			c = verdict.Check{ID: "mqtt.unacked", Status: verdict.Skip, Summary: what + ": nothing was measured (no message was published)"}
			if cut != "" {
				c.Summary = what + ": nothing was measured (no message was published: " + cut + ")"
			}
		}
		cs = append(cs, c)
	}
	cn := res.Connects
	connFail := fracCheck("mqtt.connect_fail_rate", "connects failed", cn.FailRate, t.ConnectFailRate,
		"see connects failed by reason: fd limit (ulimit -n), listen backlog (net.core.somaxconn), broker max_connections, ephemeral ports")
	if t.ConnectFailRate != nil {
		if cn.attempted() == 0 {
			connFail = nothingToJudge("mqtt.connect_fail_rate", "connects failed", "no connect was attempted", cut)
		} else if skipped := cn.NotStarted + cn.Canceled; skipped > 0 {
			connFail.Summary += fmt.Sprintf(" of the %d connects attempted; %d of %d never got an outcome", cn.attempted(), skipped, cn.Target)
			if cut != "" {
				connFail.Summary += " (" + cut + ")"
			}
		}
	}
	if e := res.Evidence; e != nil && e.Cause != "" && connFail.Status == verdict.Fail {
		connFail.Summary = e.Cause + ": " + connFail.Summary
		connFail.Remedy = e.Fix
	}
	cs = append(cs, connFail)
	cs = append(cs, durCheck(cfg, "mqtt.connect_p95", "connect p95 (scheduled -> CONNACK)", res.Latency.Connect.P95, res.Latency.Connect, t.ConnectP95, cut,
		connectRemedy(cn)))
	if p := res.Protocol; cfg.QoS > 0 && res.Latency.Ack.Count == 0 && p.Downgraded+p.WrongAck > 0 {
		cs = append(cs, verdict.Check{ID: "mqtt.ack_p95", Status: verdict.Skip,
			Summary: fmt.Sprintf("publish -> ack p95: no QoS %d flow was completed (the broker answered with another flow: see mqtt.protocol)", cfg.QoS)})
	} else if cfg.QoS > 0 {
		cs = append(cs, durCheck(cfg, "mqtt.ack_p95", "publish -> ack p95", res.Latency.Ack.P95, res.Latency.Ack, t.AckP95, cutSteady,
			"the broker acknowledges slowly: check its CPU, persistence and inflight limits"))
	} else {
		cs = append(cs, verdict.Check{ID: "mqtt.ack_p95", Status: verdict.Skip, Summary: "QoS 0 has no PUBACK"})
	}
	cs = append(cs, durCheck(cfg, "mqtt.e2e_p99", "end-to-end p99", res.Latency.E2E.P99, res.Latency.E2E, t.E2EP99, cutSteady,
		"deliveries are slow: check the broker's CPU and the subscribers (more --subscribers with a shared subscription)"))
	cpuFirst(cs, res.CPU)
	return append(cs, deliveryCheck(cfg, m), connectionsLostCheck(cn), scheduleCheck(m, res.Offered, res.CPU, cut), protocolCheck(cfg, res.Protocol))
}

// cpuFirst puts what the run's CPU figures say (contention.Figures.
// Delayed: a host busy with other work, or the probe itself the load)
// before the remedy of each failed latency check: a latency measured
// while the probe waited for a CPU is not yet the broker's.
func cpuFirst(cs []verdict.Check, cpu contention.Figures) {
	d := cpu.Delayed()
	for i := range cs {
		switch c := &cs[i]; c.ID {
		case "mqtt.connect_p95", "mqtt.ack_p95", "mqtt.e2e_p99":
			if c.Status == verdict.Fail && d != "" && c.Remedy != "" {
				c.Remedy = d + "; if it stays: " + c.Remedy
			}
		}
	}
}

// connectRemedy is mqtt.connect_p95's remedy: the probe's own lag when
// it started more than 5% of the attempted connects late (enough to make
// the p95), else the broker's side.
func connectRemedy(cn Connects) string {
	if n := cn.attempted() + cn.Canceled; n > 0 && float64(cn.StartedLate) > 0.05*float64(n) {
		return fmt.Sprintf("the probe itself started %d of %s more than %v late (its scheduler was paused or starved of CPU; see scheduler lag): the connect latency holds the probe's own delay, not the broker's. Run the probe on an idle host and do not stop it, then judge again",
			cn.StartedLate, plural.N(n, "connect"), overrunThreshold)
	}
	return "lower --conn-rate or raise net.core.somaxconn / net.ipv4.tcp_max_syn_backlog and the broker's accept rate"
}

// deliveryCheck judges what the subscribers got beyond counts: QoS 2
// promises each message exactly once (MQTT 3.1.1 §4.3.3), so a duplicate
// fails; QoS 0 and 1 allow duplicates (at least once). A topic delivers
// one client's messages in the order it sent them (§4.6, the same topic
// and QoS): out of order fails at QoS 2 and warns below it, where a
// shared subscription (--subscribers > 1) may spread one publisher's
// messages over members.
func deliveryCheck(cfg *Config, m Messages) verdict.Check {
	c := verdict.Check{ID: "mqtt.delivery", Status: verdict.Pass,
		Observed: fmt.Sprintf("%d duplicated, %d out of order", m.Duplicated, m.OutOfOrder),
		Expected: "no duplicate at QoS 2, none out of order"}
	c.Summary = fmt.Sprintf("deliveries: %s", c.Observed)
	var bad []string
	if m.Duplicated > 0 && cfg.QoS == 2 {
		bad = append(bad, fmt.Sprintf("%s delivered more than once at QoS 2, which promises exactly once (MQTT 3.1.1 §4.3.3)", plural.N(m.Duplicated, "message")))
	}
	if m.OutOfOrder > 0 {
		bad = append(bad, fmt.Sprintf("%s delivered out of the order their publisher sent them (MQTT 3.1.1 §4.6)", plural.N(m.OutOfOrder, "message")))
	}
	if len(bad) == 0 {
		return c
	}
	c.Summary = strings.Join(bad, "; ")
	c.Remedy = "check the broker's QoS 2 and inflight handling, a bridge or proxy in between, and its log"
	c.Status = verdict.Warn
	if cfg.QoS == 2 {
		c.Status = verdict.Fail
	}
	return c
}

// endedEarly says why res could not measure everything: "" for a run
// that went its full window. steady asks about the steady window (the
// ack and end-to-end percentiles), which a run ended during the connect
// ramp never reached.
func endedEarly(res *Result, steady bool) string {
	var why string
	switch {
	case res.Interrupted:
		why = "the run was interrupted"
	case res.StoppedEarlyReason != "":
		why = "the run stopped early"
	default:
		return ""
	}
	if steady && res.WindowSeconds == 0 {
		return why + " during the connect ramp, before the steady window"
	}
	return why
}

// nothingToJudge is check id when what had no sample (none, e.g. "no
// message was published"): skipped when the run ended early (cut says
// how; mqtt.complete fails it), failed when the run went its full
// window.
func nothingToJudge(id, what, none, cut string) verdict.Check {
	if cut != "" {
		return verdict.Check{ID: id, Status: verdict.Skip, Summary: fmt.Sprintf("%s: nothing was measured (%s: %s)", what, none, cut)}
	}
	return verdict.Check{ID: id, Status: verdict.Fail, Summary: fmt.Sprintf("%s: %s, cannot be judged", what, none),
		Remedy: "see the failures above: no sample reached this point"}
}

// completeCheck fails when the run was interrupted or stopped early.
func completeCheck(res *Result) verdict.Check {
	complete := verdict.Check{ID: "mqtt.complete", Status: verdict.Pass, Summary: "the run went its full window", Expected: "the full window", Observed: "complete"}
	if res.Interrupted || res.StoppedEarlyReason != "" {
		complete.Status, complete.Summary, complete.Observed = verdict.Fail, res.StoppedEarlyReason, "stopped early"
		complete.Remedy = "see the failures above; partial results are not a verdict: run the probe again to its end"
		if res.Interrupted {
			complete.Observed = "interrupted"
			complete.Remedy = "partial results are not a verdict: run the probe again without interrupting it"
		}
	}
	return complete
}

// fracCheck judges a fraction got (0..1) against max; a nil max skips.
func fracCheck(id, what string, got float64, max *float64, remedy string) verdict.Check {
	c := verdict.Check{ID: id, Observed: fmt.Sprintf("%.4f%%", got*100)}
	if max == nil {
		c.Status, c.Summary = verdict.Skip, what+": no threshold"
	} else {
		c.Expected = fmt.Sprintf("<= %.4f%%", *max*100)
		c.Status = verdict.Pass
		if got > *max {
			c.Status, c.Remedy = verdict.Fail, remedy
		}
		c.Summary = fmt.Sprintf("%s %s (limit %s)", what, c.Observed, c.Expected)
	}
	return c
}

// durCheck judges a latency got (ms) of sum against max; max <= 0 skips,
// and nothing measured fails, or skips when the run ended early (cut
// says how, see endedEarly).
func durCheck(cfg *Config, id, what string, got float64, sum latency.Summary, max time.Duration, cut, remedy string) verdict.Check {
	n := sum.Count
	c := verdict.Check{ID: id, Observed: fmt.Sprintf("%.3f ms", got) + censoredNote(cfg, id, sum, cut)}
	switch {
	case max <= 0:
		c.Status, c.Summary = verdict.Skip, what+": no threshold"
	case n == 0 && cut != "":
		c.Status, c.Summary, c.Observed = verdict.Skip, what+": nothing was measured ("+cut+")", ""
	case n == 0:
		c.Status, c.Summary = verdict.Fail, what+": nothing was measured"
		c.Expected = fmt.Sprintf("<= %v", max)
		c.Remedy = "see the failures above: no sample reached this point"
	default:
		c.Expected = fmt.Sprintf("<= %.3f ms", float64(max)/1e6)
		c.Status = verdict.Pass
		if latency.Duration(got) > max {
			c.Status, c.Remedy = verdict.Fail, remedy
		}
		c.Summary = fmt.Sprintf("%s %s (limit %s)", what, c.Observed, c.Expected)
	}
	return c
}

// censoredNote says how many of sum's values are censored and at what:
// failed connects (mqtt.connect_p95) at the time they waited, publishes
// never answered at the grace or, in flight at an interrupt, at their
// wait. "" when none is.
func censoredNote(cfg *Config, id string, sum latency.Summary, cut string) string {
	if sum.Censored == 0 {
		return ""
	}
	if id == "mqtt.connect_p95" {
		return fmt.Sprintf(" (%d of %s censored at the time they waited: failed connects, a lower bound)", sum.Censored, plural.N(sum.Count, "value"))
	}
	at := fmt.Sprintf("at >= the %v grace", cfg.Grace)
	if strings.Contains(cut, "interrupted") {
		at += ", or at the time they had waited when in flight at the interrupt"
	}
	return fmt.Sprintf(" (%d of %s censored %s: never answered)", sum.Censored, plural.N(sum.Count, "value"), at)
}

// connectionsLostCheck fails when any established connection was lost.
func connectionsLostCheck(cn Connects) verdict.Check {
	lost := verdict.Check{ID: "mqtt.connections_lost", Status: verdict.Pass,
		Observed: fmt.Sprintf("%d of %s, %d of %s", cn.Lost, plural.N(cn.OK, "publisher"), cn.SubscribersLost, plural.N(cn.Subscribers, "subscriber")), Expected: "0",
		Summary: fmt.Sprintf("%d of %d established publisher connections and %d of %d subscriber connections lost mid-run", cn.Lost, cn.OK, cn.SubscribersLost, cn.Subscribers)}
	if cn.Lost > 0 || cn.SubscribersLost > 0 {
		lost.Status = verdict.Fail
		lost.Remedy = "the broker closed or reset connections: see lost by reason and the broker's log"
	}
	return lost
}

// scheduleCheck: the probe may fall behind its schedule for up to 1% of
// publishes (GC pauses, a busy core) before its latencies stop being the
// broker's: within that allowance the check passes, above it warns. With
// no publish scheduled it skips (cut: why the run ended early, if it did).
// cpu is the run's contention, which a warning blames the lateness on.
func scheduleCheck(m Messages, o Offered, cpu contention.Figures, cut string) verdict.Check {
	if short := offeredShort(o); short.ID != "" {
		return short
	}
	if m.Scheduled == 0 {
		sum := "probe schedule: nothing was measured (no publish was scheduled)"
		if cut != "" {
			sum = "probe schedule: nothing was measured (no publish was scheduled: " + cut + ")"
		}
		return verdict.Check{ID: "mqtt.schedule", Status: verdict.Skip, Summary: sum}
	}
	var lateFrac float64
	if m.Scheduled > 0 {
		lateFrac = float64(m.Overruns) / float64(m.Scheduled)
	}
	sch := verdict.Check{ID: "mqtt.schedule", Status: verdict.Pass,
		Observed: fmt.Sprintf("%d of %d (%.2f%%)", m.Overruns, m.Scheduled, lateFrac*100),
		Expected: fmt.Sprintf("<= %g%% of publishes more than %v late", scheduleAllowance*100, overrunThreshold)}
	sch.Summary = fmt.Sprintf("probe kept its schedule: %s publishes more than %v late, within the %g%% allowance", sch.Observed, overrunThreshold, scheduleAllowance*100)
	if lateFrac > scheduleAllowance {
		sch.Status = verdict.Warn
		sch.Summary, sch.Remedy = behindSchedule(m, cpu, sch.Observed)
	}
	if m.LateConnect+m.LateDial > 0 {
		sch.Summary += fmt.Sprintf("; %s published late because their client was not yet connected (%d while it waited for its CONNACK, %d before the probe started its connect), latency measured from the slot",
			plural.N(m.LateConnect+m.LateDial, "publish slot"), m.LateConnect, m.LateDial)
	}
	return sch
}

// offeredShort is mqtt.schedule failing because the window's offered
// rate fell more than offerAllowance below the asked rate, whatever the
// cause (clients that failed to connect, connections lost, the run
// cut); the zero Check when it did not.
func offeredShort(o Offered) verdict.Check {
	if o.WindowAsked == 0 || o.share() >= 1-offerAllowance {
		return verdict.Check{}
	}
	c := verdict.Check{ID: "mqtt.schedule", Status: verdict.Fail,
		Observed: fmt.Sprintf("%d of %d window messages sent (%.1f%%)", o.WindowSent, o.WindowAsked, o.share()*100),
		Expected: fmt.Sprintf(">= %g%% of the asked load offered", (1-offerAllowance)*100)}
	c.Summary = fmt.Sprintf("offered %.1f msg/s of the %.1f msg/s asked (%.1f%% short, beyond the %g%% allowance): %s",
		o.OfferedPerSec, o.AskedPerSec, (1-o.share())*100, offerAllowance*100, o.notSentText())
	var fix []string
	if o.WindowNotSentConnect > 0 {
		fix = append(fix, "clients failed to connect: see mqtt.connect_fail_rate and connects failed by reason")
	}
	if o.WindowNotSentLost > 0 {
		fix = append(fix, "the broker closed or reset connections mid-run: see mqtt.connections_lost and the broker's log")
	}
	if o.WindowNotSentCut > 0 {
		fix = append(fix, "the run ended before they were sent (interrupted, stopped early, or the probe behind its schedule by more than the grace): run it to its end, on a host with CPU to spare")
	}
	c.Remedy = strings.Join(fix, "; ") + "; the latencies and loss above are of the load that was offered, not of the load asked"
	return c
}

// behindSchedule is mqtt.schedule's summary and remedy for a run beyond
// the allowance (observed: its "N of M (x%)"), blaming what made the
// publishes late: slow connects (LateConnect, the broker or the path to
// it) when they are most of the overruns, else what the CPU figures of
// the run show (contention.Figures.Behind): the host's other work, the
// probe itself, or neither.
func behindSchedule(m Messages, cpu contention.Figures, observed string) (summary, remedy string) {
	if 2*m.LateConnect >= m.Overruns {
		return fmt.Sprintf("%s publishes more than %v late, beyond the %g%% allowance, mostly because their client's connect took that long: latencies include the slow connects", observed, overrunThreshold, scheduleAllowance*100),
			"connects were slow (see mqtt.connect_p95): lower --conn-rate or raise net.core.somaxconn / net.ipv4.tcp_max_syn_backlog and the broker's accept rate"
	}
	why, fix := cpu.Behind(fmt.Sprintf("the probe fell behind its schedule for %s publishes more than %v late, beyond the %g%% allowance", observed, overrunThreshold, scheduleAllowance*100))
	return why + "; latencies include that delay", fix
}

// WriteText prints the result as a human table.
func (res *Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	p := func(f string, a ...any) { fmt.Fprintf(tw, f, a...) }
	c := res.Config
	p("MQTT probe\t%s\n", res.Broker)
	if res.BrokerNote != "" {
		p("\t%s\n", res.BrokerNote)
	}
	merged := c.Shard.On() && c.Shard.K == 0 // MergeShards: the whole fleet
	switch {
	case merged:
		p("fleet\t%s of run %s, %s, schedule from %s\n", plural.N(c.Shard.N, "shard"), res.RunID, plural.N(res.Connects.Target, "client"), res.ScheduleStart.Format(time.RFC3339Nano))
	case c.Shard.On():
		p("shard\t%s of run %s: %d of the fleet's %s, schedule from %s\n", c.Shard, res.RunID, res.Connects.Target, plural.N(c.Clients, "client"), res.ScheduleStart.Format(time.RFC3339Nano))
	}
	p("load\t%s at %g conn/s, QoS %d, %d B every %v, window %.1fs after a %.1fs ramp, MQTT %s, %s on %s\n",
		plural.N(c.Clients, "client"), c.ConnRate, c.QoS, c.Size, c.PubInterval, res.WindowSeconds, res.RampSeconds, c.MQTTVersion, plural.N(c.Subscribers, "subscriber"), res.Filter)
	if res.StoppedEarlyReason != "" {
		p("stopped\t%s\n", res.StoppedEarlyReason)
	}
	b := res.Baseline
	if !merged {
		p("baseline\tconnect %.3f ms, round trip p50 %.3f ms max %.3f ms, scheduler jitter p50 %.3f ms p99 %.3f ms\n",
			b.ConnectMs, b.RoundTrip.P50, b.RoundTrip.Max, b.SchedulerJitter.P50, b.SchedulerJitter.P99)
	}
	cn := res.Connects
	p("connects\t%d of %s ok, %d failed%s%s, %d lost mid-run%s; %s, %d lost mid-run%s\n",
		cn.OK, plural.N(cn.Target, "publisher"), cn.Failed, reasons(cn.FailedBy), unfinished(cn), cn.Lost, reasons(cn.LostBy), plural.N(cn.Subscribers, "subscriber"), cn.SubscribersLost, reasons(cn.SubscribersLostBy))
	m := res.Messages
	p("messages\tscheduled %d, published %d, acked %d, unacked %d, received %d, lost %d%s, duplicated %d, out of order %d, overruns %d\n",
		m.Scheduled, m.Published, m.Acked, m.Unacked, m.Received, m.Lost, m.inFlightText(), m.Duplicated, m.OutOfOrder, m.Overruns)
	p("kernel\t%d listen overflows, %d SYN retransmits, %d receive-queue prunes (TcpExt, whole netns)\n",
		res.Host.ListenOverflows, res.Host.TCPSynRetrans, res.Host.PruneCalled)
	if res.CPU.Seconds > 0 {
		p("cpu\t%s\n", res.CPU.Text())
	}
	th := res.Throughput
	p("throughput\t%.1f msg/s published, %.1f msg/s received%s (requested %.1f msg/s)\n",
		th.PublishedPerSec, th.ReceivedPerSec, res.ArrivalNote(), th.RequestedPerSec)
	if o := res.Offered; o.Asked > 0 {
		p("offered\t%s\n", o.text())
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "latency (ms)\tcount\tcensored\tmin\tp50\tp90\tp95\tp99\tp99.9\tmax\t\n")
	row := func(name string, s latency.Summary) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", name, s.Count, s.Censored, s.Min, s.P50, s.P90, s.P95, s.P99, s.P999, s.Max)
	}
	row("connect", res.Latency.Connect)
	if c.QoS > 0 {
		row("publish->ack", res.Latency.Ack)
	}
	row("end-to-end", res.Latency.E2E)
	if c.QoS > 0 {
		row("warm-up ack", res.Latency.WarmupAck)
	}
	row("warm-up e2e", res.Latency.WarmupE2E)
	if !merged {
		row("scheduler lag", res.Latency.SchedulerLag)
	}
	tw.Flush()
	res.writeCensored(w)
	fmt.Fprintln(w)
	// What went wrong during the run, in words; whether it fails the run
	// is the checks' business (59 late publishes of 650,000 pass
	// mqtt.schedule), so the lines are "observed", not "failure".
	for _, f := range res.Failures {
		fmt.Fprintf(w, "observed: %s\n", f)
	}
	for _, ch := range res.Checks {
		fmt.Fprintf(w, "%-5s %-24s %s\n", strings.ToUpper(string(ch.Status)), ch.ID, ch.Summary)
		if ch.Remedy != "" && ch.Status != verdict.Pass {
			fmt.Fprintf(w, "      fix: %s\n", ch.Remedy)
		}
	}
	_, err := fmt.Fprintf(w, "verdict: %s\n", strings.ToUpper(string(res.Verdict)))
	return err
}

// writeCensored says under the latency table how many of its values are
// censored, and at what.
func (res *Result) writeCensored(w io.Writer) {
	if n := res.Latency.Ack.Censored + res.Latency.E2E.Censored + res.Latency.WarmupAck.Censored + res.Latency.WarmupE2E.Censored; n > 0 {
		in := ""
		if res.Interrupted {
			in = " (those in flight at the interrupt at the time they had waited)"
		}
		fmt.Fprintf(w, "censored: %s never acknowledged or never delivered are counted at >= the %v grace%s in the percentiles above\n", plural.N(n, "publish"), res.Config.Grace, in)
	}
	if n := res.Latency.Connect.Censored; n > 0 {
		fmt.Fprintf(w, "censored: %s that failed are counted at the time they waited (a lower bound) in the connect percentiles\n", plural.N(n, "connect"))
	}
}

// ArrivalNote is " (by arrival: ...)" when the window's messages took
// noticeably longer than the window to arrive (a stall delivered in the
// drain), else "".
func (res *Result) ArrivalNote() string {
	if took := res.Throughput.ReceiveSeconds; took > res.WindowSeconds+0.5 {
		return fmt.Sprintf(" (by arrival: the window's messages took %.1f s to arrive)", took)
	}
	return ""
}

// unfinished says how many connects the run ended before (not failed):
// ", 2 canceled by the interrupt, 60 not started (the run ended first)".
func unfinished(cn Connects) string {
	var s string
	if cn.Canceled > 0 {
		s += fmt.Sprintf(", %d canceled by the interrupt", cn.Canceled)
	}
	if cn.NotStarted > 0 {
		s += fmt.Sprintf(", %d not started (the run ended first)", cn.NotStarted)
	}
	return s
}

func reasons(m map[string]int64) string {
	if len(m) == 0 {
		return ""
	}
	return " (" + counts.List(m, "%s %d") + ")"
}

// csvMS is a ms value with 3 decimals, empty for NaN (no sample).
func csvMS(v float64) string {
	if math.IsNaN(v) {
		return ""
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// WriteCSV writes the per-second series (Second): t_s, connected,
// published, acked and received per second (per real second: the last
// row is shorter), ack/e2e p95 in ms (empty in a second with no ack, or
// no delivery and no loss), the messages scheduled in the second and
// never delivered, whether its e2e p95 is censored at the grace because
// of them, and the row's length in seconds.
func (res *Result) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	_ = cw.Write([]string{"t_s", "connected", "published_per_s", "acked_per_s", "received_per_s", "ack_p95_ms", "e2e_p95_ms", "lost", "e2e_censored", "duration_s"})
	perS := func(s Second, n int64) string { return strconv.FormatFloat(s.rate(n), 'f', -1, 64) }
	for _, s := range res.Series {
		_ = cw.Write([]string{strconv.Itoa(s.T), strconv.FormatInt(s.Connected, 10), perS(s, s.Published),
			perS(s, s.Acked), perS(s, s.Received),
			csvMS(noSample(s.AckP95, s.Acked)), csvMS(noSample(s.E2EP95, s.e2eSamples())), strconv.FormatInt(s.Lost, 10), strconv.FormatBool(s.E2ECensored),
			strconv.FormatFloat(s.length(), 'f', 3, 64)})
	}
	cw.Flush()
	return cw.Error()
}
