package mqtt

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/capacity"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/loadprobe/contention"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/hostprep/hostprep/loadprobe/pacer"
)

// overrunThreshold: a publish dispatched more than this after its
// scheduled time counts as an overrun (the probe fell behind schedule).
const overrunThreshold = 10 * time.Millisecond

// fdHeadroom is kept free of connections for the process's own files,
// listeners, resolver and logs.
const fdHeadroom = 64

// shards is the number of lock-protected histogram sets. Four keep
// contention low (the hot path records from the ack poller, a few
// subscriber readers and at most GOMAXPROCS of them at once) while the
// once-a-second merge of the per-second latencies for the progress
// series (secP95), which walks every bucket up to the largest value of
// each set, costs a quarter of what 16 sets cost: with 16 it was ~8% of
// the probe's user time at 10,000 msg/s. Only the seconds recorded in
// since the last look are merged (secLat.dirty): one or two a second.
const shards = 4

// shard is a lock-protected set of histograms; goroutines record into the
// shard of their client number and the shards are merged at the end.
type shard struct {
	mu                         sync.Mutex
	connect                    *latency.Recorder
	ack, e2e, warmAck, warmE2E *latency.Recorder
	// secs are the latencies of the last secRing seconds of the
	// schedule, by the second each was recorded in, for the series'
	// per-second p95s (secLat).
	secs [secRing]secLat
}

func newShard() *shard {
	s := &shard{connect: latency.New(), ack: latency.New(), e2e: latency.New(),
		warmAck: latency.New(), warmE2E: latency.New()}
	for i := range s.secs {
		s.secs[i].t = -1
	}
	return s
}

// pubTrack is what the subscribers saw of one publisher.
type pubTrack struct {
	bits   []uint64
	maxSeq int64   // highest sequence number seen by any subscriber
	subMax []int64 // per subscriber, with more than one (shared subscription)
	count  int64
}

// run is one probe run: what it was asked for and its identity, plus
// three parts with one job each (embedded, so their fields read as r.x):
// the timeline and its scheduler, the connection core, and the
// accounting of what happened.
type run struct {
	cfg   Config
	base  time.Time
	runID string
	tag   uint32
	// topics are the publishers' topics, by local number.
	topics []string
	// n is the number of this host's publishers: Config.Clients, or the
	// shard's share of them; publisher j is the fleet's client
	// cfg.Shard.Global(j), which names it and fixes its schedule.
	n int
	// topicRun replaces {run} in topics and the shared-subscription
	// group: the run id, with "-sK" for shard K so shards never see each
	// other's messages.
	topicRun string

	timeline
	connCore
	accounting
}

// timeline is when things happen: the schedule's landmarks (ns since
// run.base), the scheduler that fires due events and the goroutines the
// run starts.
type timeline struct {
	ctx    context.Context
	cancel context.CancelFunc
	sched  *scheduler
	inline *encoder // scheduler goroutine's encoder when Workers == 0
	work   chan event
	stop   chan struct{}
	wg     sync.WaitGroup // every goroutine the run starts

	// start is when the schedule starts; rampEnd the end of the connect
	// ramp; pubEnd bounds the last scheduled publish.
	start, rampEnd, pubEnd int64
	// winEnd is when the steady window really ended: pubEnd, or earlier
	// when the run stopped early or was interrupted; 0 until then.
	winEnd atomic.Int64
	// wasInterrupted: the caller's ctx ended the run (Ctrl-C, SIGTERM,
	// deadline); interruptAt is when (monotonic ns, as now()).
	wasInterrupted atomic.Bool
	interruptAt    atomic.Int64
	// firstPubAt and firstPubSched are the first publish's write and
	// scheduled times (0 until then).
	firstPubAt, firstPubSched atomic.Int64
	schedLag                  *latency.Recorder // scheduler goroutine only
	// prog samples the per-second series (nil before the schedule).
	prog *progress
	// perSec counts the series' events by second (nil before the
	// schedule).
	perSec atomic.Pointer[secCounts]
}

// connCore is the connections: where they go, from which addresses,
// the publishers (by local number) and subscribers, and the poller that
// reads the publishers' acks.
type connCore struct {
	addr   brokerAddr
	tls    *tls.Config
	srcIPs []net.IP
	poll   *poller // nil: a reader goroutine per publisher
	conns  []atomic.Pointer[conn]
	subs   []*conn
}

// accounting is what happened: counters, failures by reason, the latency
// histograms (shards) and what the subscribers saw of each publisher.
type accounting struct {
	scheduled, published, sendFailed, acked, ackErrors, strayAcks, resent atomic.Int64
	overruns, inflight, connecting, connected                             atomic.Int64
	// pendingPub counts publish events in the scheduler (each due before
	// pubEnd): the drain waits for them, so a probe behind its schedule
	// still sends every slot, late, instead of ending before it.
	pendingPub atomic.Int64
	// lateConnect and lateDial are the publish slots that passed before
	// their client connected, published more than overrunThreshold late
	// as soon as it did: lateDial those that passed more than
	// overrunThreshold before the probe even started the connect (its
	// own lag), lateConnect the rest (the connect took that long).
	// startedLate counts connects the probe started more than
	// overrunThreshold after their scheduled time.
	lateConnect, lateDial, startedLate atomic.Int64
	winPublished, winReceived          atomic.Int64
	received, dup, ooo, unexpected     atomic.Int64
	stopping                           atomic.Bool
	// downgraded and wrongAcks count answers that do not fit the flow
	// the PUBLISH began (see Protocol); firstFault is set once
	// firstFaultText (under mu) describes the first.
	downgraded, wrongAcks atomic.Int64
	firstFault            atomic.Bool
	firstFaultText        string
	// grantedQoS is each subscriber's SUBACK grant (set before the load).
	grantedQoS []int

	mu            sync.Mutex
	connectFailed map[string]int64
	connectOK     int64
	disconnects   map[string]int64  // publishers
	subLost       map[string]int64  // subscribers
	firstFailure  map[string]string // reason -> first error text

	shards [shards]*shard

	trackMu sync.Mutex
	track   []pubTrack
	// lastWinArrival is when the last message scheduled in the steady
	// window reached a subscriber (under trackMu).
	lastWinArrival int64
}

func (r *run) now() int64 { return int64(time.Since(r.base)) }

// clockPair relates the wall clock (CLOCK_REALTIME, which kernel receive
// timestamps use) to the run's monotonic clock at one moment.
type clockPair struct {
	wall int64 // ns since the epoch
	mono int64 // ns since the run base
}

// clockPair reads both clocks at once (one time.Now). Taken afresh for
// each drain, so that a wall-clock slew or step between two drains does
// not move the timestamps converted with it.
func (r *run) clockPair() clockPair {
	t := time.Now()
	return clockPair{wall: t.UnixNano(), mono: int64(t.Sub(r.base))}
}

// run converts a kernel receive timestamp (ns since the epoch) to the
// run's clock; a missing one (0) is the pair's moment.
func (c *clockPair) run(wall int64) int64 {
	if wall == 0 {
		return c.mono
	}
	return c.mono - (c.wall - wall)
}

func (r *run) shard(client int) *shard {
	if client < 0 {
		client = -client
	}
	return r.shards[client%shards]
}

func (r *run) recordAck(client int, sched, now int64) {
	s := r.shard(client)
	d := time.Duration(now - sched)
	s.mu.Lock()
	if sched < r.rampEnd {
		s.warmAck.Record(d)
	} else {
		s.ack.Record(d)
	}
	if l := s.sec(r.perSec.Load().index(now)); l != nil {
		l.ack.Record(d)
	}
	s.mu.Unlock()
}

// censorAck records a QoS>0 publish (client, scheduled at sched) that
// will never be acknowledged — its connection ended, the broker answered
// with an error reason code, or the grace period ran out — in the ack
// histogram at max(Grace, now-sched), so the ack percentiles cover every
// publish and not only the acknowledged ones (latency.RecordCensored).
func (r *run) censorAck(client int, sched, now int64) { r.censorAckAt(client, sched, now, r.cfg.Grace) }

// censorAckAt records a publish never acknowledged at max(bound,
// now-sched), censored.
func (r *run) censorAckAt(client int, sched, now int64, bound time.Duration) {
	s := r.shard(client)
	s.mu.Lock()
	if sched < r.rampEnd {
		s.warmAck.RecordCensored(time.Duration(now-sched), bound)
	} else {
		s.ack.RecordCensored(time.Duration(now-sched), bound)
	}
	if l := s.sec(r.perSec.Load().index(now)); l != nil {
		l.ack.RecordCensored(time.Duration(now-sched), bound)
	}
	s.mu.Unlock()
}

// censorInflight censors every publish of c still waiting for its ack
// and forgets them; c.mu is held (lock order c.mu, then shard.mu), so a
// publish is censored exactly once whoever gets there first (connEnded
// or fill).
func (r *run) censorInflight(c *conn, now int64) {
	for _, f := range c.inflight {
		r.censorAck(c.client, f.sched, now)
	}
	r.inflight.Add(-int64(len(c.inflight)))
	c.inflight = nil
}

// censorRecent takes out of c's publishes waiting for an ack those
// scheduled after from (less than Grace before an interrupt: still in
// flight, not unacked), records each censored at the time it had waited
// by now (not at the grace: it may yet have come), and returns how many.
// They count as in flight, not as unacked, but are in the percentiles: a
// p95 over the acknowledged only would pass a broker that stopped
// answering. c.mu is held.
func (r *run) censorRecent(c *conn, from, now int64) int64 {
	kept := c.inflight[:0]
	var n int64
	for _, f := range c.inflight {
		if f.sched > from {
			n++
			r.censorAckAt(c.client, f.sched, now, 0)
			continue
		}
		kept = append(kept, f)
	}
	c.inflight = kept
	r.inflight.Add(-n)
	return n
}

// onMessage accounts one PUBLISH received by subscriber sub. Order is
// judged per publisher and subscriber: a shared subscription splits one
// publisher's messages over the group, each member seeing them in order.
func (r *run) onMessage(payload []byte, now int64, sub int) {
	tag, pub, seq, sched, ok := getHeader(payload)
	if !ok || tag != r.tag || pub < 0 || pub >= len(r.track) {
		if ok && tag == r.tag {
			r.unexpected.Add(1)
		}
		return
	}
	r.trackMu.Lock()
	t := &r.track[pub]
	w, b := int(seq/64), uint64(1)<<(seq%64)
	for len(t.bits) <= w {
		t.bits = append(t.bits, 0)
	}
	if t.bits[w]&b != 0 {
		r.trackMu.Unlock()
		r.dup.Add(1)
		return
	}
	t.bits[w] |= b
	t.count++
	last := &t.maxSeq
	if r.cfg.Subscribers > 1 && sub >= 0 && sub < r.cfg.Subscribers {
		if t.subMax == nil {
			t.subMax = make([]int64, r.cfg.Subscribers)
			for i := range t.subMax {
				t.subMax[i] = -1
			}
		}
		last = &t.subMax[sub]
	}
	if int64(seq) < *last {
		r.ooo.Add(1)
	} else {
		*last = int64(seq)
	}
	if int64(seq) > t.maxSeq {
		t.maxSeq = int64(seq)
	}
	rampEnd, pubEnd := r.rampEnd, r.pubEnd // written under trackMu
	inWindow := sched >= rampEnd && sched < pubEnd
	if inWindow {
		r.lastWinArrival = max(r.lastWinArrival, now)
	}
	r.trackMu.Unlock()
	r.received.Add(1)
	if inWindow {
		r.winReceived.Add(1)
	}
	r.recordE2E(pub, sched, now, rampEnd)
}

// recordE2E records one delivery of client pub's publish scheduled at
// sched, received at now (ns since the run base; rampEnd as read under
// trackMu): its latency in the shard's totals and in its second's
// (secLat), and its count in that second (secCounts), both by now.
func (r *run) recordE2E(pub int, sched, now, rampEnd int64) {
	s := r.shard(pub)
	d := time.Duration(now - sched)
	counts := r.perSec.Load()
	s.mu.Lock()
	if sched < rampEnd {
		s.warmE2E.Record(d)
	} else {
		s.e2e.Record(d)
	}
	if l := s.sec(counts.index(now)); l != nil {
		l.e2e.Record(d)
	}
	s.mu.Unlock()
	counts.count(rcvs, now)
}

func (r *run) failConnect(reason string, err error) {
	r.mu.Lock()
	r.connectFailed[reason]++
	if _, ok := r.firstFailure["connect:"+reason]; !ok {
		r.firstFailure["connect:"+reason] = err.Error()
	}
	r.mu.Unlock()
}

// lostConn accounts an established connection that ended before the run
// did: a publisher's in disconnects, a subscriber's in subLost.
func (r *run) lostConn(sub bool, reason string, err error) {
	m, prefix := r.disconnects, "conn:"
	if sub {
		m, prefix = r.subLost, "sub:"
	}
	r.mu.Lock()
	m[reason]++
	if _, ok := r.firstFailure[prefix+reason]; !ok {
		r.firstFailure[prefix+reason] = err.Error()
	}
	r.mu.Unlock()
}

// newRun sets up the run's state for n clients (this shard's share):
// its clock base, connection table, delivery tracking, run id and topics.
func newRun(cfg *Config, n int, addr brokerAddr, ips []net.IP) *run {
	r := &run{cfg: *cfg, n: n, base: time.Now()}
	r.timeline.stop, r.schedLag = make(chan struct{}), latency.New()
	r.connCore = connCore{addr: addr, srcIPs: ips, conns: make([]atomic.Pointer[conn], n)}
	r.connectFailed, r.disconnects, r.subLost = map[string]int64{}, map[string]int64{}, map[string]int64{}
	r.firstFailure, r.track = map[string]string{}, make([]pubTrack, n)
	for i := range r.shards {
		r.shards[i] = newShard()
	}
	for i := range r.track {
		r.track[i].maxSeq = -1
	}
	var rb [8]byte
	_, _ = rand.Read(rb[:])
	r.tag = binary.BigEndian.Uint32(rb[:4])
	r.runID = runID(cfg, hex.EncodeToString(rb[4:]))
	r.topicRun = r.runID
	if cfg.Shard.On() {
		r.topicRun += "-s" + strconv.Itoa(cfg.Shard.K)
	}
	r.topics = make([]string, n)
	for j := range r.topics {
		r.topics[j] = expand(cfg.Topic, r.topicRun, cfg.Shard.Global(j))
	}
	return r
}

// Run runs the probe described by cfg and returns what it measured.
//
// Errors: exitcode.BadInput for an invalid cfg (see Config.Validate, which
// Run calls first); exitcode.Environment when
// the run could not happen (RLIMIT_NOFILE too low for Clients — checked
// before anything starts and naming the number that fits —, broker
// unreachable or refusing the calibration client, embedded broker failed,
// interrupted by ctx); with such an error the Result is nil when the load
// had not started yet (nothing measured) and partial otherwise (e.g.
// interrupted mid-run). A run that happened returns a Result with
// Verdict/Checks and a nil error, even when the broker failed mid-run
// (the failure is in Result.Failures and the checks). Run returns within
// ramp + Duration + Grace + ConnectTimeout (+ 1 s, and up to 5 s more
// reading a local broker's facts when connects failed: BrokerEvidence),
// and no goroutine it started outlives it.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	addr, err := cfg.check() // Validate, keeping the parsed address
	if err != nil {
		return nil, err
	}
	cfg.fill()
	ips, err := parseSourceIPs(cfg.SourceIPs)
	if err != nil {
		return nil, err
	}
	embedded := cfg.Broker == ""
	n := cfg.Shard.Count(cfg.Clients)
	if err := checkFDs(&cfg, n, embedded); err != nil {
		return nil, err
	}
	if err := checkPorts(&cfg, n, ips); err != nil {
		return nil, err
	}
	clock, err := checkStart(&cfg)
	if err != nil {
		return nil, err
	}
	r := newRun(&cfg, n, addr, ips)
	res := &Result{RunID: r.runID, Config: cfg, Broker: cfg.Broker, StartedAt: r.base.UTC(), Clock: clock}
	res.Hostname, _ = os.Hostname()

	if embedded {
		eb, err := startEmbedded()
		if err != nil {
			return nil, exitcode.Environmentf("starting the embedded MQTT broker on 127.0.0.1: %v", err)
		}
		defer eb.close()
		r.addr = brokerAddr{hostport: eb.addr}
		res.Broker = "embedded mochi-mqtt broker at tcp://" + eb.addr
		res.BrokerNote = "embedded broker (measures this host's network stack and the probe itself, not a real broker)"
	} else if addr.tls {
		host := addr.hostport[:strings.LastIndex(addr.hostport, ":")]
		if r.tls, err = cfg.tlsConfig(strings.Trim(host, "[]")); err != nil {
			return nil, err
		}
	}

	if procs := cfg.procs(embedded); procs > 0 {
		prev := runtime.GOMAXPROCS(procs)
		defer runtime.GOMAXPROCS(prev)
		res.Procs = procs
	} else {
		res.Procs = runtime.GOMAXPROCS(0)
	}

	r.ctx, r.cancel = context.WithCancel(ctx)
	defer r.cancel()

	defer keepTimestamps()()
	host0, cpu0 := readHostCounters(), contention.Take()
	runErr := r.execute(res)
	if r.poll != nil {
		r.poll.drainTick() // a run that ended before its drain (interrupted, failed) still reads the acks already here
	}
	if r.wasInterrupted.Load() {
		res.Interrupted = true
		res.StoppedEarlyReason = r.interruptedWhen() + ": partial results (Ctrl-C, SIGTERM or the caller's deadline ended the run)"
	}
	r.shutdown()
	// Every goroutine of the run (scheduler, workers, poller, readers)
	// has ended before its recorders are read: nothing outlives Run, and
	// fill sees every Record (an early stop leaves the scheduler running
	// until shutdown closes r.stop).
	r.waitAll()
	res.Host, res.CPU = readHostCounters().sub(host0), cpu0.Since()
	r.fill(res)
	if runErr != nil {
		if r.sched == nil { // failed before the load started: nothing measured
			return nil, runErr
		}
		return res, runErr
	}
	return res, nil
}

// waitAll waits for every goroutine of the run, then stops the
// per-second sampler (its last row is the run's end).
func (r *run) waitAll() {
	r.wg.Wait()
	if r.prog != nil {
		r.prog.stop()
	}
}

// execute runs the calibration, the ramp, the steady window and the
// drain. It returns an exitcode.Environment error when the run could not
// happen at all.
func (r *run) execute(res *Result) error {
	// Subscribers first: they must see every message.
	if err := r.subscribe(res); err != nil {
		return err
	}
	// Calibration: one client's round trip and the scheduler's jitter.
	if err := r.calibrate(res); err != nil {
		return err
	}

	start, err := r.schedule(res)
	if err != nil {
		return err
	}
	// Run stops it once every goroutine of the run has ended, so the
	// series' last second holds every ack and delivery.
	r.prog = r.startProgress(res)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	if err := r.waitWindow(res, start, tick); err != nil {
		return err
	}
	return r.drain(res, tick)
}

// subscribe connects the subscribers and subscribes each to the run's
// topics (a shared subscription when there are several), waiting for
// every SUBACK.
func (r *run) subscribe(res *Result) error {
	cfg := &r.cfg
	qos := byte(cfg.QoS)
	filter := filterFor(cfg.Topic, r.topicRun)
	if cfg.Subscribers > 1 {
		filter = "$share/hostprep-" + r.topicRun + "/" + filter
	}
	res.Filter = filter
	for i := 0; i < cfg.Subscribers; i++ {
		t0 := r.now()
		c, err := r.dial(r.ctx, -1-i, expand(cfg.ClientID, r.runID, cfg.Shard.Global(0))+"-sub"+strconv.Itoa(i), true)
		if err != nil {
			return r.unreachable("subscriber", err)
		}
		res.Baseline.SubscriberConnectMs = ms(r.now() - t0)
		c.suback = make(chan []byte, 1)
		r.subs = append(r.subs, c)
		r.startReader(c)
		if err := c.subscribe(filter, qos); err != nil {
			return r.unreachable("subscriber", err)
		}
		select {
		case codes := <-c.suback:
			if len(codes) != 1 || codes[0] >= 0x80 {
				return exitcode.Environmentf("broker %s refused the subscription %q (SUBACK %x): check the ACL for the probe's user, or --topic", r.addr.hostport, filter, codes)
			}
			r.grantedQoS = append(r.grantedQoS, int(codes[0])) // mqtt.protocol judges it
		case <-time.After(cfg.ConnectTimeout):
			return exitcode.Environmentf("broker %s sent no SUBACK within %v", r.addr.hostport, cfg.ConnectTimeout)
		case <-r.ctx.Done():
			return r.interrupted()
		}
	}

	return nil
}

// schedule lays out the run's events (client g of the fleet connects at
// start + g/R; pings; retries), starts the ack poller, the workers and
// the scheduler loop, and returns the schedule's start (ns on r's clock).
func (r *run) schedule(res *Result) (int64, error) {
	cfg := &r.cfg
	r.sched = newScheduler(r.now, r.n+cfg.Subscribers+4)
	r.work = make(chan event, 8192)
	start := r.now() + int64(20*time.Millisecond)
	if !cfg.StartAt.IsZero() {
		start = int64(cfg.StartAt.Sub(r.base))
		if late := r.now() - start; late > 0 {
			return 0, exitcode.Environmentf("--start-at %s passed %v before the subscribers were connected and the calibration done: hand out a start time further ahead",
				cfg.StartAt.UTC().Format(time.RFC3339Nano), time.Duration(late).Round(time.Millisecond))
		}
	}
	r.start = start
	res.ScheduleStart = r.base.Add(time.Duration(start)).UTC()
	connects := pacer.Constant{Rate: cfg.ConnRate}
	// Under trackMu: the subscribers' readers, already running, read
	// them in onMessage (the schedule below orders every publish after
	// this, but through the broker, which the race detector cannot see).
	r.trackMu.Lock()
	r.rampEnd = start + int64(connects.At(cfg.Clients))
	r.pubEnd = r.rampEnd + int64(cfg.Duration)
	r.trackMu.Unlock()
	res.RampSeconds = float64(r.rampEnd-start) / 1e9
	// Every second an event can happen in: the ramp, the window, the
	// drain and a connect's timeout, and a margin (later ones count in
	// the last).
	span := time.Duration(r.pubEnd-start) + cfg.Grace + cfg.ConnectTimeout
	r.perSec.Store(newSecCounts(start, int(span/time.Second)+3))
	for j := 0; j < r.n; j++ {
		r.sched.add(event{at: start + int64(connects.At(cfg.Shard.Global(j))), client: int32(j), kind: evConnect})
	}
	for i := range r.subs {
		r.sched.add(event{at: start + int64(cfg.Keepalive/2), client: int32(-1 - i), kind: evPing})
	}
	if cfg.Keepalive*3/4 <= cfg.PubInterval {
		// Publishers idle longer than keepalive/2 get a PINGREQ.
		r.sched.add(event{at: start + int64(cfg.Keepalive/4), client: 0, kind: evPing})
	}
	if cfg.RetryInterval > 0 && cfg.QoS > 0 && cfg.MQTTVersion == "3.1.1" {
		r.sched.add(event{at: start + int64(cfg.RetryInterval/4), client: 0, kind: evRetry})
	}
	if r.tls == nil && !cfg.goroutinePerConn {
		if p, err := newPoller(r); err == nil {
			r.poll = p
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				p.loop(r.stop)
			}()
		}
	}
	if cfg.Workers <= 0 {
		r.inline = newEncoder(cfg.Size)
	}
	for w := 0; w < cfg.Workers; w++ {
		r.wg.Add(1)
		go r.worker()
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.sched.loop(r.stop, r.fire, r.beforeFire)
	}()
	return start, nil
}

// waitWindow waits for the end of the steady window, or stops early when
// no client connected or every subscriber is gone.
func (r *run) waitWindow(res *Result, start int64, tick *time.Ticker) error {
	cfg := &r.cfg
	for r.now() < r.pubEnd {
		select {
		case <-r.ctx.Done():
			return r.interrupted()
		case <-tick.C:
		}
		if r.now() > r.rampEnd+int64(cfg.ConnectTimeout) && r.connected.Load() == 0 && r.connecting.Load() == 0 {
			res.StoppedEarlyReason = fmt.Sprintf("no client connected at %.1fs: stopped early", float64(r.now()-start)/1e9)
			res.Failures = append(res.Failures, res.StoppedEarlyReason)
			break
		}
		if len(r.subs) > 0 && r.subsDead() {
			res.StoppedEarlyReason = fmt.Sprintf("every subscriber lost its connection at %.1fs: stopped early (deliveries can no longer be counted)", float64(r.now()-start)/1e9)
			res.Failures = append(res.Failures, res.StoppedEarlyReason)
			break
		}
	}
	return nil
}

// drain ends the window and waits for outstanding acks and deliveries,
// bounded by Grace.
func (r *run) drain(res *Result, tick *time.Ticker) error {
	cfg := &r.cfg
	r.markWindowEnd()
	r.stopping.Store(true)
	if r.poll != nil {
		r.poll.handOff() // no more publishes to wake the scheduler: read acks as they come
	}
	began := time.Now()
	deadline := began.Add(cfg.Grace)
	// The drain as it ran, up to the interrupt when one ends it (the
	// series' rows after the window are the drain's).
	defer func() { res.DrainSeconds = min(time.Since(began), cfg.Grace).Seconds() }()
	for time.Now().Before(deadline) {
		if r.inflight.Load() == 0 && r.received.Load() >= r.published.Load() && r.connecting.Load() == 0 && r.pendingPub.Load() == 0 {
			break
		}
		if r.subsDead() && r.inflight.Load() == 0 {
			break
		}
		select {
		case <-r.ctx.Done():
			return r.interrupted()
		case <-tick.C:
		}
	}
	return nil
}

func (r *run) subsDead() bool {
	for _, s := range r.subs {
		s.mu.Lock()
		d := s.dead
		s.mu.Unlock()
		if !d {
			return false
		}
	}
	return true
}

// markWindowEnd records the real end of the steady window: now, or
// pubEnd if that came first. Only the first call counts.
func (r *run) markWindowEnd() {
	if r.sched == nil || r.winEnd.Load() != 0 {
		return
	}
	end := r.now()
	if end > r.pubEnd {
		end = r.pubEnd
	}
	r.winEnd.CompareAndSwap(0, end)
}

// windowSeconds is the steady window as it really ran: from the end of
// the connect ramp to winEnd (0 when the run ended during the ramp).
func (r *run) windowSeconds() float64 {
	end := r.winEnd.Load()
	if end <= r.rampEnd {
		return 0
	}
	return float64(end-r.rampEnd) / 1e9
}

// interruptedWhen says when the interrupt came by the schedule's clock
// (s since its start, the time the series and the window count in; not
// the wait for --start-at, the subscribers and the calibration before
// it), or that it came before the schedule started.
func (r *run) interruptedWhen() string {
	at := r.interruptAt.Load()
	if r.sched == nil || at < r.start {
		return "interrupted before the schedule started"
	}
	return fmt.Sprintf("interrupted after %.1f s of the schedule", float64(at-r.start)/1e9)
}

func (r *run) interrupted() error {
	if r.wasInterrupted.CompareAndSwap(false, true) {
		r.interruptAt.Store(r.now())
	}
	r.markWindowEnd()
	return exitcode.Environmentf("interrupted: the run was cancelled (Ctrl-C or deadline); partial results follow")
}

// unreachable turns a failed subscriber/calibration connect into the
// could-not-run error, with the reason and the fix. A CONNACK with a
// refusal code is not "unreachable": the error says the broker refused
// the login (not authorised, bad username or password) or the client,
// and never includes the password.
func (r *run) unreachable(who string, err error) error {
	if r.ctx.Err() != nil {
		return r.interrupted()
	}
	var ce connackError
	if errors.As(err, &ce) { // the broker answered: reachable, but said no
		what := fmt.Sprintf("%s (CONNACK return code 0x%02x)", connackReason(ce.code), ce.code)
		switch classify(err) {
		case "not_authorised":
			return exitcode.Environmentf("broker %s refused the login of the %s client: %s; check %s and the password (%s or $%s)",
				r.addr.hostport, who, what, r.cfg.name("username"), r.cfg.name("password-file"), PasswordEnv)
		case "server_unavailable":
			return exitcode.Environmentf("broker %s refused the %s client: %s; the broker is up but not taking clients (overloaded, max_connections, or shutting down)",
				r.addr.hostport, who, what)
		}
		return exitcode.Environmentf("broker %s refused the %s client's CONNECT: %s; check %s and %s",
			r.addr.hostport, who, what, r.cfg.name("mqtt-version"), r.cfg.name("client-id"))
	}
	reason := classify(err)
	if reason == "no_connack" {
		return exitcode.Environmentf("broker %s accepted TCP, no CONNACK within %g s to the %s client's CONNECT: something takes connections there but does not answer MQTT; check that the port is the broker's MQTT listener (a TLS listener needs mqtts://), and the broker's log and load",
			r.addr.hostport, r.cfg.ConnectTimeout.Seconds(), who)
	}
	hint := ""
	switch reason {
	case "refused":
		hint = ": nothing listens there; start the broker or fix " + r.cfg.name("broker")
	case "timeout":
		hint = fmt.Sprintf(": no answer within %v; check the address, firewall and that the broker is not overloaded", r.cfg.ConnectTimeout)
	case "tls":
		hint = fmt.Sprintf(": check %s, %s and %s", r.cfg.name("ca"), r.cfg.name("cert"), r.cfg.name("key"))
	}
	return exitcode.Environmentf("broker %s unreachable: the %s client could not connect (%s: %v)%s", r.addr.hostport, who, reason, err, hint)
}

// calibrate measures one client's connect and 20 PINGREQ->PINGRESP round
// trips, and the scheduler timer's lateness over 200 sleeps of 0.1-2 ms.
func (r *run) calibrate(res *Result) error {
	t0 := r.now()
	c, err := r.dial(r.ctx, calibClient, expand(r.cfg.ClientID, r.runID, r.cfg.Shard.Global(0))+"-calib", false)
	if err != nil {
		return r.unreachable("calibration", err)
	}
	res.Baseline.ConnectMs = ms(r.now() - t0)
	c.pong = make(chan struct{}, 1)
	r.startReader(c)
	defer c.disconnect()
	rtt := latency.New()
	for i := 0; i < 20; i++ {
		t := r.now()
		if err := c.ping(); err != nil {
			return r.unreachable("calibration", err)
		}
		select {
		case <-c.pong:
			rtt.Record(time.Duration(r.now() - t))
		case <-time.After(r.cfg.ConnectTimeout):
			return exitcode.Environmentf("broker %s answered no PINGREQ within %v", r.addr.hostport, r.cfg.ConnectTimeout)
		case <-r.ctx.Done():
			return r.interrupted()
		}
	}
	res.Baseline.RoundTrip = rtt.Summary()
	// Timer lateness for due times at arbitrary sub-millisecond offsets,
	// as the schedule has them (Go's timers wake on the poller's
	// millisecond timeouts, so expect up to ~1 ms).
	jit := latency.New()
	tm := time.NewTimer(time.Hour)
	defer tm.Stop()
	for i := 0; i < 200; i++ {
		d := 100*time.Microsecond + time.Duration(i)*9500*time.Nanosecond // 0.1 .. 2 ms
		due := time.Now().Add(d)
		tm.Reset(d)
		select {
		case <-tm.C:
		case <-r.ctx.Done():
			return r.interrupted()
		}
		jit.Record(time.Since(due))
	}
	res.Baseline.SchedulerJitter = jit.Summary()
	return nil
}

// startReader runs c's reader goroutine; when the connection ends it is
// accounted as lost (unless the run is shutting down).
func (r *run) startReader(c *conn) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.connEnded(c, c.readLoop())
	}()
}

// stoppingNow is true once shutdown began (connections are closed on
// purpose).
func (r *run) stoppingNow() bool {
	select {
	case <-r.stop:
		return true
	default:
		return false
	}
}

// beforeFire runs each time the scheduler wakes up, before it fires
// what is due: it reads the acks that arrived since (the poller's tick
// mode), so retries never re-send what was acked.
func (r *run) beforeFire() {
	if r.poll != nil {
		r.poll.drainTick()
	}
}

// fire is called by the scheduler goroutine for each due event.
func (r *run) fire(e event, now int64) {
	cfg := &r.cfg
	switch e.kind {
	case evConnect:
		r.schedLag.Record(time.Duration(now - e.at))
		if now-e.at > int64(overrunThreshold) {
			r.startedLate.Add(1)
		}
		r.connecting.Add(1)
		r.wg.Add(1)
		go r.connectClient(int(e.client), e.at, now)
	case evPublish:
		r.pendingPub.Add(-1)
		if e.at >= r.pubEnd {
			return
		}
		if end := r.winEnd.Load(); end != 0 && e.at >= end {
			return // stopped early: nothing is scheduled after the real window
		}
		c := r.conns[e.client].Load()
		if c == nil {
			return
		}
		c.mu.Lock()
		dead, dialAt, readyAt := c.dead, c.dialAt, c.readyAt
		c.mu.Unlock()
		if dead {
			return
		}
		r.scheduled.Add(1)
		late := now-e.at > int64(overrunThreshold)
		switch {
		case late && e.at+int64(overrunThreshold) < dialAt:
			r.lateDial.Add(1) // the probe started the connect well after this slot
		case late && e.at < readyAt:
			r.lateConnect.Add(1) // the slot passed while waiting for CONNACK
		default:
			r.schedLag.Record(time.Duration(now - e.at))
		}
		if next := e.at + int64(cfg.PubInterval); next < r.pubEnd {
			r.pendingPub.Add(1)
			r.sched.addNext(event{at: next, client: e.client, kind: evPublish})
		}
		r.dispatch(e, now)
	case evPing, evRetry:
		r.schedLag.Record(time.Duration(now - e.at))
		step := cfg.Keepalive / 2
		if e.client >= 0 {
			step = cfg.Keepalive / 4
		}
		if e.kind == evRetry {
			step = cfg.RetryInterval / 4
		}
		r.sched.add(event{at: e.at + int64(step), client: e.client, kind: e.kind})
		r.dispatch(e, now)
	}
}

// dispatch hands e, dispatched at now, to the worker pool, or performs
// it right here.
func (r *run) dispatch(e event, now int64) {
	if r.inline != nil {
		r.do(e, r.inline, now)
		return
	}
	select {
	case r.work <- e:
	case <-r.stop:
	}
}

// worker performs scheduled writes (Config.Workers > 0).
func (r *run) worker() {
	defer r.wg.Done()
	e := newEncoder(r.cfg.Size)
	for {
		select {
		case <-r.stop:
			return
		case ev := <-r.work:
			r.do(ev, e, r.now())
		}
	}
}

// do performs one scheduled write with encoder e; now is when it was
// taken from the schedule or the work queue (ns since the run base), the
// time the overrun check judges.
func (r *run) do(ev event, e *encoder, now int64) {
	switch ev.kind {
	case evPublish:
		if late := now - ev.at; late > int64(overrunThreshold) {
			r.overruns.Add(1)
		}
		c := r.conns[ev.client].Load()
		e.now = now
		if err := c.publish(e, ev.at); err != nil {
			r.sendFailed.Add(1)
			if !errors.Is(err, net.ErrClosed) {
				c.fail(err) // the reader accounts the lost connection
			}
			return
		}
		r.published.Add(1)
		r.perSec.Load().count(pubs, now)
		if r.firstPubAt.Load() == 0 && r.firstPubAt.CompareAndSwap(0, r.now()) {
			r.firstPubSched.Store(ev.at)
		}
		if ev.at >= r.rampEnd {
			r.winPublished.Add(1)
		}
	case evPing:
		if ev.client < 0 {
			if i := int(-1 - ev.client); i < len(r.subs) {
				_ = r.subs[i].ping()
			}
		} else {
			for i := range r.conns {
				if c := r.conns[i].Load(); c != nil && r.now()-c.lastSentAtomic() > int64(r.cfg.Keepalive/2) {
					_ = c.ping()
				}
			}
		}
	case evRetry:
		older := r.now() - int64(r.cfg.RetryInterval)
		for i := range r.conns {
			if c := r.conns[i].Load(); c != nil {
				r.resent.Add(int64(c.resend(e, older)))
			}
		}
	}
}

// connectClient dials client i (scheduled at sched, started by the
// scheduler at dialAt, ns since the run base) and becomes its reader
// goroutine.
func (r *run) connectClient(i int, sched, dialAt int64) {
	defer r.wg.Done()
	c, err := r.dial(r.ctx, i, expand(r.cfg.ClientID, r.runID, r.cfg.Shard.Global(i)), false)
	now := r.now()
	s := r.shard(i)
	if err != nil {
		// A connect that failed (timed out, refused, canceled) is in the
		// connect percentiles too, censored at the time it waited (a
		// lower bound: it never connected), so a p95 is never one of the
		// connects that succeeded only.
		s.mu.Lock()
		s.connect.RecordCensored(time.Duration(now-sched), 0)
		s.mu.Unlock()
		r.connecting.Add(-1)
		if r.ctx.Err() == nil && !r.stoppingNow() {
			r.failConnect(classify(err), err)
		} else {
			r.failConnect("canceled", err)
		}
		return
	}
	s.mu.Lock()
	s.connect.Record(time.Duration(now - sched))
	s.mu.Unlock()
	r.mu.Lock()
	r.connectOK++
	r.mu.Unlock()
	// Register with the poller before publishing c: the atomic Store
	// orders c.polled for the poller; an event before it is seen again
	// (level-triggered).
	polled := r.poll != nil && r.poll.add(c)
	r.conns[i].Store(c)
	r.connected.Add(1)
	r.connecting.Add(-1)
	if r.stoppingNow() {
		c.close()
		return
	}
	// First publish: the first slot of client i's fixed grid (scheduled
	// connect time + spread offset + k*interval), even when it is already
	// past: the slots that passed while the client connected are
	// published now, late, their latency measured from their slot and
	// each counted as an overrun (lateConnect or lateDial), never left
	// out of the schedule (open loop: a slow connect shows as latency,
	// not as a lower rate).
	first := r.firstSlot(i)
	c.mu.Lock()
	c.firstSched, c.dialAt, c.readyAt = first, dialAt, now
	c.mu.Unlock()
	if first < r.pubEnd {
		r.pendingPub.Add(1)
		r.sched.add(event{at: first, client: int32(i), kind: evPublish})
	}
	if polled {
		return // the poller reads its acks from now on
	}
	err = c.readLoop()
	r.connEnded(c, err)
}

// connEnded accounts a connection whose reader returned err: lost, unless
// the run closed it on purpose while shutting down.
func (r *run) connEnded(c *conn, err error) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	c.markDeadLocked()
	if c.failErr != nil {
		err = c.failErr
	}
	byUs := c.byUs && c.failErr == nil
	// Lost: ended by the broker or the path, not by the probe's own
	// close; its slots from now on are not sent because of it.
	c.lost = !byUs && !r.stoppingNow() && (c.client >= 0 || c.sub)
	// Its unacknowledged publishes can no longer be acked: stop waiting,
	// and count them in the ack percentiles as censored.
	r.censorInflight(c, r.now())
	c.mu.Unlock()
	_ = c.nc.Close()
	if c.client >= 0 {
		r.connected.Add(-1)
	}
	if c.lost {
		r.lostConn(c.sub, classify(err), err)
		slog.Debug("mqtt connection lost", "client", c.client, "err", err)
	}
}

func (c *conn) lastSentAtomic() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastSent
}

// shutdown stops the scheduler and workers, disconnects every client and
// waits (bounded by socket close) for every goroutine of the run.
func (r *run) shutdown() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.cancel() // aborts dials in progress
	for i := range r.conns {
		if c := r.conns[i].Load(); c != nil {
			c.disconnect()
		}
	}
	for _, c := range r.subs {
		c.disconnect()
	}
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// procs is the GOMAXPROCS to run with, 0 to leave it.
func (c *Config) procs(embedded bool) int {
	switch {
	case c.Procs > 0:
		return c.Procs
	case c.Procs < 0 || embedded:
		return 0
	}
	if rate := float64(c.Clients) / c.PubInterval.Seconds(); rate <= 20000 {
		return 1
	}
	return 0
}

// checkFDs refuses a run RLIMIT_NOFILE cannot hold, before anything
// starts: each client needs one fd, plus the broker's side when the broker
// is embedded, plus the headroom every process needs for its other files
// (capacity.FDNeed: the rule of preflight's fd.soft). The immediate fix
// comes first: the number of clients that fit, and an external --broker
// only when the embedded one is in use. The way to more file descriptors
// depends on facts the probe does not judge (whether this host can raise
// the hard limit: CAP_SYS_RESOURCE, systemd, PID 1's limit), so the error
// names the preflight run that judges them for this load instead of
// guessing a `ulimit -Hn` that may not work here.
func checkFDs(cfg *Config, clients int, embedded bool) error {
	limit := cfg.NoFileLimit
	if limit == 0 {
		var rl unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
			return nil
		}
		if rl.Cur < rl.Max { // Go raises it at start; make sure
			rl2 := unix.Rlimit{Cur: rl.Max, Max: rl.Max}
			if unix.Setrlimit(unix.RLIMIT_NOFILE, &rl2) == nil {
				rl.Cur = rl.Max
			}
		}
		limit = rl.Cur
	}
	per := uint64(1)
	if embedded {
		per = 2
	}
	fds := uint64(clients+cfg.Subscribers+1) * per
	need := capacity.FDNeed(int(fds))
	if limit == capacity.Unlimited || limit >= need {
		return nil
	}
	fits := max(0, (capacity.UsableFDs(limit)-int64(cfg.Subscribers+1)*int64(per))/int64(per))
	where := ""
	if embedded {
		where = " (2 per client: the embedded broker's side is in this process too)"
	}
	other := "or spread the clients over several probe hosts (--source-ips does not help: every connection needs an fd whatever its source address)"
	if embedded {
		other = "or use an external --broker (then 1 fd per client)"
	}
	return exitcode.Environmentf("RLIMIT_NOFILE %d is too low for --clients %d: the run needs about %d file descriptors%s and %d for its own files; at most %s fit. Fix now: lower --clients to %d or fewer, %s. For more clients this process needs nofile >= %d: `hostprep preflight --role loadgen --sockets %d` says whether this host can give it and how (fd.soft, fd.raise)",
		limit, clients, fds, where, uint64(int64(limit)-capacity.UsableFDs(limit)), plural.N(fits, "client"), fits, other, need, fds)
}

// checkPorts refuses a run that needs more source ports towards the one
// broker address than this network namespace's ephemeral ports give
// (capacity.ReadPorts: ip_local_port_range less ip_local_reserved_ports).
// With --source-ips every connection is bound to its source before
// connect() (bind(src, 0)), which holds the port on that source whatever
// the destination: ports x sources. Without, the kernel picks one source
// per destination: ports x 1. An unreadable range is not judged.
func checkPorts(cfg *Config, clients int, ips []net.IP) error {
	p, err := capacity.ReadPorts("/")
	if err != nil {
		return nil
	}
	sources := int64(max(len(ips), 1))
	conns := int64(clients + cfg.Subscribers + 1)
	if p.PerPair*sources >= conns {
		return nil
	}
	reserved := ""
	if p.Reserved > 0 {
		reserved = fmt.Sprintf(" less %d in ip_local_reserved_ports", p.Reserved)
	}
	fix := "widen net.ipv4.ip_local_port_range (hostprep tune)"
	if p.PerPair > 0 {
		fix = fmt.Sprintf("spread over %d or more source addresses with --source-ips (e.g. 127.0.0.2-127.0.0.%d on loopback), or %s", (conns+p.PerPair-1)/p.PerPair, 1+(conns+p.PerPair-1)/p.PerPair, fix)
	}
	return exitcode.Environmentf("--clients %d: ephemeral ports: %s per source address (net.ipv4.ip_local_port_range %s%s) x %s hold %d < %s to the broker: %s",
		clients, plural.N(p.PerPair, "port"), p.Range, reserved, plural.N(sources, "source address"), p.PerPair*sources, plural.N(conns, "connection"), fix)
}

// checkStart refuses a StartAt already past or too near, and a clock
// that cannot keep a common start (fleet.CheckStart, fleet.CheckClock),
// before any connection. It returns the clock as adjtimex reports it
// (nil without StartAt).
func checkStart(cfg *Config) (*fleet.Clock, error) {
	if cfg.StartAt.IsZero() {
		return nil, nil
	}
	if err := fleet.CheckStart(cfg.StartAt, time.Now()); err != nil {
		return nil, err
	}
	clock, err := fleet.ReadClock()
	if err != nil {
		if cfg.MaxClockError > 0 {
			return nil, exitcode.Environmentf("--start-at: cannot read this host's clock error (%v) to check it against --max-clock-error %v; pass --max-clock-error 0 when every shard runs on this host", err, cfg.MaxClockError)
		}
		return nil, nil
	}
	if err := fleet.CheckClock(clock, cfg.MaxClockError); err != nil {
		return nil, err
	}
	return &clock, nil
}

// runID is cfg.RunID, else with a shard one derived from StartAt (the
// same for every shard handed the same start: "fleet-" and its Unix
// time in ms), else random.
func runID(cfg *Config, random string) string {
	switch {
	case cfg.RunID != "":
		return cfg.RunID
	case cfg.Shard.On():
		return "fleet-" + strconv.FormatInt(cfg.StartAt.UnixMilli(), 10)
	}
	return random
}
