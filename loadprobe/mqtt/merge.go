package mqtt

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/brokerurl"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/counts"
	"github.com/hostprep/hostprep/loadprobe/latency"
)

// MergeShards joins the results of the N shards of one fleet run (one
// Result per shard K = 1..N, any order) into the Result one host running
// the whole load would have given, and judges it against the run's
// thresholds: counts are summed (connects, scheduled, published, acked,
// received, lost, duplicated, ...), latency percentiles come from the
// merged HdrHistograms (Result.Histograms; exact: the same as one
// histogram of every shard's values), the per-second series are added
// up (per second of the common schedule; a second's p95 is the highest
// of the shards', an upper bound). Rates are counts over the fleet's
// time, as one host would have counted them, never a sum of the shards'
// rates over their own windows: the window (WindowSeconds) runs from
// the end of the common connect ramp to the end of the last shard's
// window (the longest), the published rate is the fleet's window
// messages published over it, the received rate those that arrived over
// the longest ReceiveSeconds (by arrival). When the shards' windows
// differ (a shard stopped early), a line of Failures says so with each
// shard's window. Failures of the shards are prefixed with their shard.
//
// The caller checks that every K is present exactly once (report merge
// names a missing shard). Errors are exitcode.BadInput: shards that are
// not of one run (SameRun: run id, or a field of the load, its target or
// its judging differs; an embedded broker) or a histogram
// that does not decode.
func MergeShards(shards []*Result) (*Result, error) {
	if len(shards) == 0 {
		return nil, exitcode.BadInputf("no shard results to merge")
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].Config.Shard.K < shards[j].Config.Shard.K })
	first := shards[0]
	for _, s := range shards[1:] {
		if err := sameRun(first, s); err != nil {
			return nil, err
		}
	}
	cfg := first.Config
	cfg.Shard.K = 0 // the whole fleet
	filter := strings.Replace(first.Filter, "-s1/", "-s{K}/", 1) + " (shard K's own)"
	m := &Result{RunID: first.RunID, Broker: cfg.Broker, Filter: filter, Config: cfg,
		StartedAt: first.StartedAt, ScheduleStart: first.ScheduleStart, WindowSeconds: first.WindowSeconds}
	var hists [5]*latency.Recorder
	for i := range hists {
		hists[i] = latency.New()
	}
	var late int64 = -1
	for _, s := range shards {
		if err := m.add(s, &hists); err != nil {
			return nil, err
		}
		// The fleet's lateness is blamed on the CPU figures of the
		// shard that was late most often: each host measured its own.
		if s.Messages.Overruns > late {
			m.CPU, late = s.CPU, s.Messages.Overruns
		}
	}
	m.Connects.setFailRate()
	if th := &m.Throughput; m.WindowSeconds > 0 {
		// The fleet's window messages over the fleet's window (the
		// shards share the ramp, so the longest window), not the sum of
		// each shard's rate over its own: a shard that stopped halfway
		// published half as much, not as fast for as long.
		th.PublishedPerSec = float64(th.WindowPublished) / m.WindowSeconds
	}
	if note := windowsDiffer(shards, m); note != "" {
		m.Failures = append(m.Failures, note)
	}
	if th := &m.Throughput; th.ReceiveSeconds > 0 {
		// By arrival, as one host would have counted it: the fleet's
		// window messages that arrived over the time the last of them
		// took (the shards share the schedule, so the longest).
		th.ReceivedPerSec = float64(th.WindowReceived) / th.ReceiveSeconds
	}
	if m.WindowSeconds > 0 {
		m.Offered.OfferedPerSec = float64(m.Offered.WindowSent) / m.WindowSeconds
	}
	m.Messages.LossRate = lossRate(m.Messages, m.Offered)
	m.Latency = Latencies{Connect: hists[0].Summary(), Ack: hists[1].Summary(), E2E: hists[2].Summary(),
		WarmupAck: hists[3].Summary(), WarmupE2E: hists[4].Summary()}
	m.Histograms = snapshots(hists)
	m.Checks = judge(&m.Config, m)
	m.Verdict = verdict.Worst(m.Checks)
	return m, nil
}

// sameRunFields are the Config fields that define a fleet run's load,
// its target or how it is judged: the shards of one run have them equal
// (Shard: its N). sameRunOwn are those each shard may have its own, and
// why. Every Config field is in one of the two (TestSameRunCoversConfig).
var sameRunFields = []string{"Broker", "MQTTVersion", "Topic", "ClientID", "Clients", "ConnRate", "Keepalive", "QoS", "Size",
	"PubInterval", "Duration", "Subscribers", "ConnectTimeout", "Grace", "RetryInterval", "Thresholds", "Shard", "StartAt", "RunID"}

var sameRunOwn = map[string]string{
	"CAFile": "a path on its own host", "CertFile": "a path on its own host", "KeyFile": "a path on its own host",
	"Username": "a per-host login", "Password": "a per-host login, never written",
	"SourceIPs": "its own host's addresses", "Workers": "the probe's own threads", "Procs": "the probe's own threads",
	"goroutinePerConn": "the probe's own threads", "NoFileLimit": "its own host's limit", "MaxClockError": "its own host's clock check",
	"SettingNames": "how its own flags were named", "Progress": "its own terminal", "ProgressTTY": "its own terminal", "ProgressEvery": "its own terminal",
}

// SameRun refuses shard b (read from file nameB) when it is not of a's
// (from nameA) fleet run: the first Config field of sameRunFields that
// differs is named with both values and both files, in one line. A shard
// that probed its own embedded broker (no --broker) is refused too: the
// shards measured different brokers.
func SameRun(a, b *Result, nameA, nameB string) error {
	if a.RunID != b.RunID {
		return exitcode.BadInputf("%s and %s are not shards of one fleet run: run id %q in %s, %q in %s", nameB, nameA, b.RunID, nameB, a.RunID, nameA)
	}
	for _, r := range []struct {
		res  *Result
		name string
	}{{a, nameA}, {b, nameB}} {
		if r.res.Config.Broker == "" {
			return exitcode.BadInputf("%s probed its own embedded broker (%s, no --broker): the shards of a fleet run load one broker, give every shard the same --broker", r.name, r.res.Broker)
		}
	}
	va, vb := reflect.ValueOf(a.Config), reflect.ValueOf(b.Config)
	for _, f := range sameRunFields {
		x, y := configValue(va, f), configValue(vb, f)
		if x == y || f == "Broker" && brokerEndpoint(a.Config) == brokerEndpoint(b.Config) {
			continue
		}
		sf, _ := va.Type().FieldByName(f)
		name := "--" + sf.Tag.Get("flag")
		return exitcode.BadInputf("%s and %s are not shards of one fleet run: %s %s in %s, %s in %s; give every shard the same flags", nameB, nameA, name, y, nameB, x, nameA)
	}
	return nil
}

// configValue is Config field f of v as text, as SameRun compares it.
func configValue(v reflect.Value, f string) string {
	c := v.Interface().(Config)
	switch f {
	case "Shard":
		return fmt.Sprintf("x/%d", c.Shard.N)
	case "StartAt":
		return c.StartAt.UTC().Format(time.RFC3339Nano)
	case "Thresholds":
		return thresholdText(c)
	}
	x := v.FieldByName(f).Interface()
	if s, ok := x.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(x)
}

// brokerEndpoint is the broker c loads as SameRun compares it: plain or
// TLS, and host:port with the scheme's default port filled in, as
// checkBroker parses --broker (so tcp:// and mqtt:// to one host and
// port are one broker, and so are mqtts://, ssl:// and tls://). The host
// is compared as written (case aside): a name and its address differ.
// A URL that does not parse is compared as written.
func brokerEndpoint(c Config) string {
	c.CAFile, c.CertFile, c.KeyFile = "", "", "" // the TLS flags are the shard's own
	b, err := c.checkBroker()
	if err != nil {
		return strconv.Quote(c.Broker)
	}
	class := "plain"
	if b.tls {
		class = "TLS"
	}
	return class + " " + strings.ToLower(b.hostport)
}

// sameRun refuses a shard b that is not of a's run.
func sameRun(a, b *Result) error {
	return SameRun(a, b, "shard "+a.Config.Shard.String(), "shard "+b.Config.Shard.String())
}

func thresholdText(c Config) string {
	t := c.Thresholds
	f := func(p *float64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("loss=%s connect_fail=%s connect_p95=%v ack_p95=%v e2e_p99=%v", f(t.Loss), f(t.ConnectFailRate), t.ConnectP95, t.AckP95, t.E2EP99)
}

// add sums shard s into m and merges its histograms into hists.
func (m *Result) add(s *Result, hists *[5]*latency.Recorder) error {
	prefix := "shard " + s.Config.Shard.String() + ": "
	h := s.Histograms
	for i, snap := range []latency.Snapshot{h.Connect, h.Ack, h.E2E, h.WarmupAck, h.WarmupE2E} {
		r, err := latency.FromSnapshot(snap)
		if err != nil {
			return exitcode.BadInputf("%srun %s: %v", prefix, s.RunID, err)
		}
		hists[i].Merge(r)
	}
	c, sc := &m.Connects, s.Connects
	counts.Sum([2]*int{&c.Target, &sc.Target}, [2]*int{&c.Subscribers, &sc.Subscribers})
	counts.Sum([2]*int64{&c.OK, &sc.OK}, [2]*int64{&c.Failed, &sc.Failed}, [2]*int64{&c.NotStarted, &sc.NotStarted},
		[2]*int64{&c.Canceled, &sc.Canceled}, [2]*int64{&c.StartedLate, &sc.StartedLate}, [2]*int64{&c.Lost, &sc.Lost},
		[2]*int64{&c.SubscribersLost, &sc.SubscribersLost})
	c.FailedBy = counts.Add(c.FailedBy, sc.FailedBy)
	c.LostBy = counts.Add(c.LostBy, sc.LostBy)
	c.SubscribersLostBy = counts.Add(c.SubscribersLostBy, sc.SubscribersLostBy)
	// A shard result of an older hostprep counted the clients it never
	// started as failed ("not_attempted"): they are NotStarted.
	if v := c.FailedBy["not_attempted"]; v > 0 {
		c.Failed -= v
		c.NotStarted += v
		delete(c.FailedBy, "not_attempted")
	}
	mm, sm := &m.Messages, s.Messages
	counts.Sum([2]*int64{&mm.Scheduled, &sm.Scheduled}, [2]*int64{&mm.Published, &sm.Published}, [2]*int64{&mm.SendFailed, &sm.SendFailed},
		[2]*int64{&mm.Acked, &sm.Acked}, [2]*int64{&mm.Unacked, &sm.Unacked}, [2]*int64{&mm.AckInFlight, &sm.AckInFlight}, [2]*int64{&mm.AckErrors, &sm.AckErrors}, [2]*int64{&mm.Resent, &sm.Resent},
		[2]*int64{&mm.Expected, &sm.Expected}, [2]*int64{&mm.Received, &sm.Received}, [2]*int64{&mm.Lost, &sm.Lost}, [2]*int64{&mm.InFlight, &sm.InFlight}, [2]*int64{&mm.LostAfterAck, &sm.LostAfterAck},
		[2]*int64{&mm.Duplicated, &sm.Duplicated}, [2]*int64{&mm.OutOfOrder, &sm.OutOfOrder}, [2]*int64{&mm.Overruns, &sm.Overruns},
		[2]*int64{&mm.LateConnect, &sm.LateConnect}, [2]*int64{&mm.LateDial, &sm.LateDial})
	mo, so := &m.Offered, s.Offered
	counts.Sum([2]*int64{&mo.Asked, &so.Asked}, [2]*int64{&mo.Sent, &so.Sent}, [2]*int64{&mo.NotSentConnect, &so.NotSentConnect},
		[2]*int64{&mo.NotSentLost, &so.NotSentLost}, [2]*int64{&mo.NotSentCut, &so.NotSentCut}, [2]*int64{&mo.WindowAsked, &so.WindowAsked},
		[2]*int64{&mo.WindowSent, &so.WindowSent}, [2]*int64{&mo.WindowNotSentConnect, &so.WindowNotSentConnect},
		[2]*int64{&mo.WindowNotSentLost, &so.WindowNotSentLost}, [2]*int64{&mo.WindowNotSentCut, &so.WindowNotSentCut})
	mo.AskedPerSec += so.AskedPerSec
	m.Protocol.Downgraded += s.Protocol.Downgraded
	m.Protocol.WrongAck += s.Protocol.WrongAck
	m.Protocol.GrantedQoS = append(m.Protocol.GrantedQoS, s.Protocol.GrantedQoS...)
	m.Protocol.First = cmp.Or(m.Protocol.First, s.Protocol.First)
	m.Throughput.WindowPublished += s.Throughput.windowPublished(s.WindowSeconds)
	m.Throughput.WindowReceived += s.Throughput.windowReceived()
	m.Throughput.ReceiveSeconds = max(m.Throughput.ReceiveSeconds, s.Throughput.ReceiveSeconds)
	m.Throughput.RequestedPerSec += s.Throughput.RequestedPerSec
	m.Host.ListenOverflows += s.Host.ListenOverflows
	m.Host.ListenDrops += s.Host.ListenDrops
	m.Host.TCPSynRetrans += s.Host.TCPSynRetrans
	m.Host.PruneCalled += s.Host.PruneCalled
	m.RampSeconds = max(m.RampSeconds, s.RampSeconds)
	m.WindowSeconds = max(m.WindowSeconds, s.WindowSeconds)
	m.DrainSeconds = max(m.DrainSeconds, s.DrainSeconds)
	m.Interrupted = m.Interrupted || s.Interrupted
	if s.StoppedEarlyReason != "" {
		m.StoppedEarlyReason = strings.TrimPrefix(m.StoppedEarlyReason+"; "+prefix+s.StoppedEarlyReason, "; ")
	}
	for _, f := range s.Failures {
		m.Failures = append(m.Failures, prefix+f)
	}
	if fp := s.FirstPublish; fp != nil && (m.FirstPublish == nil || fp.At.Before(m.FirstPublish.At)) {
		m.FirstPublish = fp
	}
	m.addSeries(s.Series)
	return nil
}

// addSeries adds a shard's per-second rows to m's, second by second of
// the common schedule.
func (m *Result) addSeries(series []Second) {
	for _, sec := range series {
		for len(m.Series) < sec.T {
			m.Series = append(m.Series, Second{T: len(m.Series) + 1})
		}
		d := &m.Series[sec.T-1]
		d.Seconds = max(d.Seconds, sec.length())
		d.Connected += sec.Connected
		d.Published += sec.Published
		d.Acked += sec.Acked
		d.Received += sec.Received
		d.Lost += sec.Lost
		d.E2ECensored = d.E2ECensored || sec.E2ECensored
		d.AckP95 = max(d.AckP95, sec.AckP95)
		d.E2EP95 = max(d.E2EP95, sec.E2EP95)
	}
}

// windowPublished is WindowPublished, or for a shard result of an older
// hostprep that did not carry it, PublishedPerSec × window (its
// WindowSeconds).
func (th Throughput) windowPublished(window float64) int64 {
	if th.WindowPublished > 0 {
		return th.WindowPublished
	}
	return int64(math.Round(th.PublishedPerSec * window))
}

// windowsDiffer says, when the shards' windows are not all m's (the
// longest, by more than a millisecond: a shard stopped early), each
// shard's window and what the merged rates are over; "" when they are
// the same.
func windowsDiffer(shards []*Result, m *Result) string {
	var each []string
	differ := false
	for _, s := range shards {
		differ = differ || m.WindowSeconds-s.WindowSeconds > 0.001
		each = append(each, fmt.Sprintf("%s %.3f s", s.Config.Shard, s.WindowSeconds))
	}
	if !differ {
		return ""
	}
	return fmt.Sprintf("the shards' windows differ (%s): the fleet's window is the longest, %.3f s, and published_per_s is the fleet's %s over it, not the sum of the shards' rates over their own windows",
		strings.Join(each, ", "), m.WindowSeconds, plural.N(m.Throughput.WindowPublished, "window message"))
}

// windowReceived is WindowReceived, or for a shard result of an older
// hostprep that did not carry it, ReceivedPerSec × ReceiveSeconds.
func (th Throughput) windowReceived() int64 {
	if th.WindowReceived > 0 {
		return th.WindowReceived
	}
	return int64(math.Round(th.ReceivedPerSec * th.ReceiveSeconds))
}

// CheckShardFile checks that r, decoded from a shard's result file, is
// whole and possible, as the probe writes it: K in 1..N; every latency
// histogram present and holding as many values as its summary counts
// (without them MergeShards would merge the percentiles of the other
// shards only); a window of more than 0 s (0 only for a run that ended
// during its ramp and published no window message) and no longer than
// Config.Duration; no more window messages published than scheduled;
// a broker URL the probe accepts (brokerurl.Parse: one with a password,
// a path or a query, written by a probe before it refused them, is not
// merged and never echoed);
// series rows that are seconds of the schedule, in order. The
// error describes the first fault (the caller names the file); nil when
// there is none.
func (r *Result) CheckShardFile() error {
	sh := r.Config.Shard
	if sh.K < 1 || sh.K > sh.N {
		return fmt.Errorf("config.shard is %d/%d: a shard K/N has 1 <= K <= N", sh.K, sh.N)
	}
	if b := r.Config.Broker; b != "" { // "" (embedded): SameRun refuses it, saying why
		if _, err := brokerurl.Parse(b, "config.broker", brokerurl.Login{User: "--username", Password: "--password-file or $" + PasswordEnv}); err != nil {
			return err
		}
	}
	h, l := r.Histograms, r.Latency
	for _, x := range []struct {
		name string
		snap latency.Snapshot
		sum  latency.Summary
	}{{"connect", h.Connect, l.Connect}, {"ack", h.Ack, l.Ack}, {"e2e", h.E2E, l.E2E}, {"warmup_ack", h.WarmupAck, l.WarmupAck}, {"warmup_e2e", h.WarmupE2E, l.WarmupE2E}} {
		rec, err := latency.FromSnapshot(x.snap)
		if err != nil {
			return fmt.Errorf("histograms.%s: %v", x.name, err)
		}
		if got := rec.Summary().Count; got != x.sum.Count {
			return fmt.Errorf("histograms.%s holds %s but latency.%s counts %d: without them the fleet's percentiles would leave this shard's out", x.name, plural.N(got, "value"), x.name, x.sum.Count)
		}
	}
	for i, sec := range r.Series {
		if sec.T < 1 || (i > 0 && sec.T <= r.Series[i-1].T) {
			return fmt.Errorf("series row %d is second %d: the rows are seconds 1, 2, ... of the schedule, in order", i, sec.T)
		}
	}
	win, pub := r.WindowSeconds, r.Throughput.windowPublished(r.WindowSeconds)
	endedEarly := r.Interrupted || r.StoppedEarlyReason != ""
	switch {
	case win < 0 || math.IsNaN(win) || (win == 0 && (!endedEarly || pub > 0)):
		return fmt.Errorf("window_s is %g: a run that went its course has a window of more than 0 s", win)
	case win > r.Config.Duration.Seconds()+1e-3:
		return fmt.Errorf("window_s is %g, longer than the run's --duration %v", win, r.Config.Duration)
	case pub > r.Messages.Scheduled:
		return fmt.Errorf("throughput.window_published is %d, more than the %s scheduled", pub, plural.N(r.Messages.Scheduled, "message"))
	}
	return nil
}
