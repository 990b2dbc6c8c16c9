package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
)

// Three shards of one fleet run, as three hostprep processes with source
// addresses 127.0.0.2, .3 and .4, against the real mosquitto, merged by
// `hostprep report merge`: the merged counts are the sums, every shard
// wrote its first PUBLISH within 20 ms of its slot on the common
// schedule, and the merged p50/p99 are those of one histogram of every
// shard's recorded values.
func TestFleetThreeProcessesMosquitto(t *testing.T) {
	url := testenv.MQTTBroker(t)
	bin := testenv.Binary(t)
	dir := t.TempDir()
	start := time.Now().Add(6 * time.Second).UTC().Truncate(time.Millisecond)
	var wg sync.WaitGroup
	paths := make([]string, 3)
	for k := 1; k <= 3; k++ {
		paths[k-1] = filepath.Join(dir, fmt.Sprintf("lg%d.json", k))
		cmd := exec.Command(bin, "probe", "mqtt", "--broker", url, "--clients", "30", "--conn-rate", "300",
			"--pub-interval", "100ms", "--duration", "2s", "--grace", "2s",
			"--shard", fmt.Sprintf("%d/3", k), "--start-at", start.Format(time.RFC3339Nano), "--max-clock-error", "0",
			"--source-ips", fmt.Sprintf("127.0.0.%d", k+1), "--connect-p95", "0", "--ack-p95", "0", "--e2e-p99", "0", "-o", "json")
		wg.Add(1)
		go func(k int, cmd *exec.Cmd) {
			defer wg.Done()
			stdout, stderr, code := testenv.Exec(t, cmd)
			if code != 0 {
				t.Errorf("shard %d/3: exit %d\n%s\n%s", k, code, stderr, stdout)
			}
			if err := os.WriteFile(paths[k-1], []byte(stdout), 0o644); err != nil {
				t.Error(err)
			}
		}(k, cmd)
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	var shards []*mqtt.Result
	ack, e2e := latency.New(), latency.New()
	var sum mqtt.Messages
	for k, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r mqtt.Result
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("shard %d: %v", k+1, err)
		}
		shards = append(shards, &r)
		if fp := r.FirstPublish; fp == nil || fp.LateMs > 20 || fp.Scheduled.Before(start) || !r.ScheduleStart.Equal(start) {
			t.Errorf("shard %d/3: schedule start %v, first publish %+v: want the schedule at %v and the first PUBLISH within 20 ms of its slot", k+1, r.ScheduleStart, fp, start)
		}
		for _, pair := range []struct {
			dst  *latency.Recorder
			snap latency.Snapshot
		}{{ack, r.Histograms.Ack}, {e2e, r.Histograms.E2E}} {
			h, err := latency.FromSnapshot(pair.snap)
			if err != nil {
				t.Fatal(err)
			}
			pair.dst.Merge(h)
		}
		sum.Published += r.Messages.Published
		sum.Acked += r.Messages.Acked
		sum.Received += r.Messages.Received
		sum.Lost += r.Messages.Lost
		sum.Scheduled += r.Messages.Scheduled
	}
	stdout, stderr, code := testenv.Run(t, nil, append([]string{"report", "merge", "-o", "json"}, paths...)...)
	if code != 0 {
		t.Fatalf("report merge: exit %d\n%s\n%s", code, stderr, stdout)
	}
	var f Fleet
	if err := json.Unmarshal([]byte(stdout), &f); err != nil {
		t.Fatal(err)
	}
	if f.Run == nil || f.Run.Merged == nil {
		t.Fatalf("no fleet run in %s", stdout)
	}
	m := f.Run.Merged
	if m.Messages.Published != sum.Published || m.Messages.Acked != sum.Acked || m.Messages.Received != sum.Received ||
		m.Messages.Lost != sum.Lost || m.Messages.Scheduled != sum.Scheduled || sum.Published == 0 {
		t.Errorf("merged messages %+v, want the shards' sums %+v", m.Messages, sum)
	}
	if m.Connects.Target != 30 || m.Connects.OK != 30 {
		t.Errorf("merged connects %+v, want the fleet's 30", m.Connects)
	}
	a, e := ack.Summary(), e2e.Summary()
	if m.Latency.Ack.P50 != a.P50 || m.Latency.Ack.P99 != a.P99 || m.Latency.E2E.P50 != e.P50 || m.Latency.E2E.P99 != e.P99 {
		t.Errorf("merged ack p50/p99 %v/%v e2e %v/%v, want one histogram of all values: %v/%v %v/%v",
			m.Latency.Ack.P50, m.Latency.Ack.P99, m.Latency.E2E.P50, m.Latency.E2E.P99, a.P50, a.P99, e.P50, e.P99)
	}
	text, _, _ := testenv.Run(t, nil, append([]string{"report", "merge"}, paths...)...)
	if !strings.Contains(text, "fleet verdict: ") {
		t.Errorf("text report has no fleet verdict:\n%s", text)
	}
	t.Log("\n" + text)
}

// startShard starts `hostprep probe mqtt` as shard k/2 of a fleet run
// against url starting at start, writing its JSON to stdout; extra
// flags come last (and win).
func startShard(t *testing.T, url string, k int, start time.Time, stdout *bytes.Buffer, extra ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"probe", "mqtt", "--broker", url, "--clients", "20", "--conn-rate", "200",
		"--pub-interval", "100ms", "--duration", "2s", "--grace", "3s",
		"--shard", fmt.Sprintf("%d/2", k), "--start-at", start.Format(time.RFC3339Nano), "--max-clock-error", "0",
		"--connect-p95", "0", "--ack-p95", "0", "--e2e-p99", "0", "-o", "json"}, extra...)
	cmd := exec.Command(testenv.Binary(t), args...)
	cmd.Stdout = stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// shardRun is shards 1/2 and 2/2 of one fleet run started by twoShards:
// a directory for their results, their common start time, the processes
// and their stdout.
type shardRun struct {
	dir   string
	start time.Time
	cmds  [2]*exec.Cmd
	out   [2]bytes.Buffer
}

// twoShards starts shards 1/2 and 2/2 of one fleet run (startShard, each
// with the extra flags) against the test broker, 4 s from now, the
// binary built first: a cold build could push the start into the past.
func twoShards(t *testing.T, extra ...string) *shardRun {
	url := testenv.MQTTBroker(t)
	testenv.Binary(t)
	r := &shardRun{dir: t.TempDir(), start: time.Now().Add(4 * time.Second).UTC().Truncate(time.Millisecond)}
	for k := range r.cmds {
		r.cmds[k] = startShard(t, url, k+1, r.start, &r.out[k], extra...)
	}
	return r
}

// wait is waitShards for the run's two shards.
func (r *shardRun) wait(t *testing.T) (paths []string, shards []*mqtt.Result) {
	return waitShards(t, r.dir, r.cmds[:], r.out[:])
}

// waitShards waits for the shard processes cmds, whatever their exit
// code, and reads each one's JSON result from out; it writes them to
// dir/lgK.json for `report merge` and returns those paths and results.
func waitShards(t *testing.T, dir string, cmds []*exec.Cmd, out []bytes.Buffer) (paths []string, shards []*mqtt.Result) {
	t.Helper()
	for k, cmd := range cmds {
		_ = cmd.Wait()
		var r mqtt.Result
		if err := json.Unmarshal(out[k].Bytes(), &r); err != nil {
			t.Fatalf("shard %d/%d: %v\n%s", k+1, len(cmds), err, out[k].String())
		}
		shards = append(shards, &r)
		paths = append(paths, filepath.Join(dir, fmt.Sprintf("lg%d.json", k+1)))
		if err := os.WriteFile(paths[k], out[k].Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return paths, shards
}

// The fleet's received rate is the fleet's window messages that arrived
// over the time the last of them took, as one host would count it, not
// the sum of the shards' rates, each over its own receive_s, next to the
// longest receive_s (the field case: 194.10 msg/s received with
// receive_s 5.313 s for 1000 messages, 188.2). Here shard 2's process is
// stopped (SIGSTOP) across the end of the window, so its messages take
// about 1.4 s longer to arrive than shard 1's.
func TestFleetReceivedRateByArrival(t *testing.T) {
	r := twoShards(t)
	p := r.cmds[1].Process // our own child, stopped from 1.5 s into its schedule to 3.5 s
	stop := time.AfterFunc(time.Until(r.start.Add(1500*time.Millisecond)), func() { _ = p.Signal(syscall.SIGSTOP) })
	cont := time.AfterFunc(time.Until(r.start.Add(3500*time.Millisecond)), func() { _ = p.Signal(syscall.SIGCONT) })
	t.Cleanup(func() { stop.Stop(); cont.Stop(); _ = p.Signal(syscall.SIGCONT) })
	// exit 1 is fine: shard 2 fell behind its schedule while stopped
	paths, shards := r.wait(t)
	a, b := shards[0].Throughput, shards[1].Throughput
	if b.ReceiveSeconds < a.ReceiveSeconds+0.5 {
		t.Fatalf("receive_s %.3f s (shard 1), %.3f s (shard 2): want shard 2's messages to arrive well after shard 1's", a.ReceiveSeconds, b.ReceiveSeconds)
	}
	stdout, stderr, _ := testenv.Run(t, nil, append([]string{"report", "merge", "-o", "json"}, paths...)...)
	var f Fleet
	if err := json.Unmarshal([]byte(stdout), &f); err != nil || f.Run == nil || f.Run.Merged == nil {
		t.Fatalf("report merge: %v\n%s\n%s", err, stdout, stderr)
	}
	got := f.Run.Merged.Throughput
	n := math.Round(a.ReceivedPerSec*a.ReceiveSeconds) + math.Round(b.ReceivedPerSec*b.ReceiveSeconds)
	want := n / max(a.ReceiveSeconds, b.ReceiveSeconds)
	if got.ReceiveSeconds != max(a.ReceiveSeconds, b.ReceiveSeconds) || math.Abs(got.ReceivedPerSec-want) > 0.01 {
		t.Errorf("merged %.2f msg/s over %.3f s; want %.0f messages over the longest receive_s %.3f s = %.2f msg/s (shards %.2f over %.3f s, %.2f over %.3f s)",
			got.ReceivedPerSec, got.ReceiveSeconds, n, max(a.ReceiveSeconds, b.ReceiveSeconds), want, a.ReceivedPerSec, a.ReceiveSeconds, b.ReceivedPerSec, b.ReceiveSeconds)
	}
}

// The fleet's published rate is the fleet's window messages over the
// fleet's window, as one host would count them, and the merge says when
// the shards' windows differ. Shard 2's process is interrupted (SIGINT)
// halfway through its 2 s window, so it published about half of its
// share: the merge added the shards' rates, each over its own window
// (shard 2's full rate over 1 s), and reported the requested 200 msg/s
// for a fleet that published ~300 messages in 2 s.
func TestFleetPublishedRateOverTheFleetsWindow(t *testing.T) {
	r := twoShards(t)
	p := r.cmds[1].Process // our own child: interrupted 1 s into its window (the ramp is 0.1 s)
	stop := time.AfterFunc(time.Until(r.start.Add(1100*time.Millisecond)), func() { _ = p.Signal(syscall.SIGINT) })
	t.Cleanup(func() { stop.Stop() })
	// shard 2 exits 3 (interrupted), with its partial result
	paths, shards := r.wait(t)
	a, b := shards[0], shards[1]
	if !b.Interrupted || b.WindowSeconds > a.WindowSeconds-0.5 || b.WindowSeconds < 0.5 {
		t.Fatalf("window %.3f s (shard 1), %.3f s (shard 2, interrupted %v): want shard 2 cut about halfway", a.WindowSeconds, b.WindowSeconds, b.Interrupted)
	}
	// By the schedule's clock, the wait for --start-at not counted (that
	// would say "after 5.x s").
	if !regexp.MustCompile(`^interrupted after 1\.[1-3] s of the schedule: `).MatchString(b.StoppedEarlyReason) {
		t.Errorf("shard 2 stopped early: %q, want it interrupted after 1.1 s of the schedule", b.StoppedEarlyReason)
	}
	stdout, stderr, _ := testenv.Run(t, nil, append([]string{"report", "merge", "-o", "json"}, paths...)...)
	var f Fleet
	if err := json.Unmarshal([]byte(stdout), &f); err != nil || f.Run == nil || f.Run.Merged == nil {
		t.Fatalf("report merge: %v\n%s\n%s", err, stdout, stderr)
	}
	m := f.Run.Merged
	n := math.Round(a.Throughput.PublishedPerSec*a.WindowSeconds) + math.Round(b.Throughput.PublishedPerSec*b.WindowSeconds)
	window := max(a.WindowSeconds, b.WindowSeconds)
	if got := m.Throughput.PublishedPerSec; m.WindowSeconds != window || math.Abs(got-n/window) > 0.01 || float64(m.Throughput.WindowPublished) != n {
		t.Errorf("merged %.2f msg/s published over %.3f s (%d messages); want the fleet's %.0f window messages over its %.3f s window = %.2f msg/s (shards %.2f over %.3f s, %.2f over %.3f s)",
			got, m.WindowSeconds, m.Throughput.WindowPublished, n, window, n/window, a.Throughput.PublishedPerSec, a.WindowSeconds, b.Throughput.PublishedPerSec, b.WindowSeconds)
	}
	if m.Throughput.PublishedPerSec > 0.9*m.Throughput.RequestedPerSec {
		t.Errorf("merged %.1f msg/s published, requested %.1f: a fleet with a shard stopped halfway did not publish at the requested rate", m.Throughput.PublishedPerSec, m.Throughput.RequestedPerSec)
	}
	text, _, _ := testenv.Run(t, nil, append([]string{"report", "merge"}, paths...)...)
	for _, want := range []string{"the shards' windows differ (1/2 ", fmt.Sprintf("2/2 %.3f s)", b.WindowSeconds)} {
		if !strings.Contains(text, want) {
			t.Errorf("report merge text lacks %q:\n%s", want, text)
		}
	}
	t.Log("\n" + text)
}

// editShard writes src's JSON, changed by edit, to dir/name.
func editShard(t *testing.T, src, dir, name string, edit func(map[string]any)) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	edit(v)
	return writeResult(t, dir, name, v)
}

// A shard file that is not as the probe wrote it is refused, naming the
// file: without its histograms the merge would leave its latencies out of
// the fleet's percentiles (a fleet PASS on ack p95 over 300 of 700
// values), and impossible windows, window counts and shards must not be
// merged as given.
func TestMergeRefusesEditedShards(t *testing.T) {
	r := twoShards(t)
	paths, _ := r.wait(t)
	if _, stderr, code := testenv.Run(t, nil, append([]string{"report", "merge"}, paths...)...); code != 0 {
		t.Fatalf("the files as written: exit %d: %s", code, stderr)
	}
	sub := func(v map[string]any, key string) map[string]any { return v[key].(map[string]any) }
	for name, edit := range map[string]func(map[string]any){
		"no histograms":    func(v map[string]any) { delete(v, "histograms") },
		"no ack histogram": func(v map[string]any) { delete(sub(v, "histograms"), "ack") },
		"no e2e histogram": func(v map[string]any) { delete(sub(v, "histograms"), "e2e") },
		"window 0":         func(v map[string]any) { v["window_s"] = 0 },
		"window negative":  func(v map[string]any) { v["window_s"] = -2 },
		"window too long":  func(v map[string]any) { v["window_s"] = 20 },
		"window published": func(v map[string]any) {
			sub(v, "throughput")["window_published"] = sub(v, "messages")["scheduled"].(float64) + 1
		},
		"shard 3 of 2": func(v map[string]any) { sub(sub(v, "config"), "shard")["k"] = 3 },
		"shard 0 of 2": func(v map[string]any) { sub(sub(v, "config"), "shard")["k"] = 0 },
		// written by a probe from before it refused a password in the
		// URL's query: never merged, never echoed
		"broker with a password": func(v map[string]any) {
			sub(v, "config")["broker"] = sub(v, "config")["broker"].(string) + "?password=Zq9ShardPW"
		},
	} {
		bad := editShard(t, paths[1], r.dir, strings.ReplaceAll(name, " ", "-")+".json", edit)
		_, stderr, code := testenv.Run(t, nil, "report", "merge", paths[0], bad)
		line := strings.TrimSpace(stderr)
		if code != 2 || strings.Count(line, "\n") != 0 || !strings.Contains(line, bad) || !strings.Contains(line, "merge the files the probe wrote, unedited") || strings.Contains(stderr, "Zq9ShardPW") {
			t.Errorf("%s: exit %d, stderr %q: want exit 2 and one line naming %s and the fix", name, code, stderr, bad)
		}
	}
}

// A shard whose process is stopped (SIGSTOP) from before the start to
// 1.5 s into its 2 s window connects late: its clients publish the slots
// they missed, late, so the fleet's window holds every message of the
// fixed schedule (a fleet that dropped the late clients' missed slots
// would PASS with messages missing), mqtt.schedule blames the probe, and
// the failed connect p95's remedy says the probe itself started the
// connects late rather than blame the broker's somaxconn.
func TestFleetStoppedShardKeepsSchedule(t *testing.T) {
	r := twoShards(t, "--connect-p95", "500ms")
	p := r.cmds[1].Process // our own child, stopped from 0.5 s before its schedule to 1.5 s into it
	stop := time.AfterFunc(time.Until(r.start.Add(-500*time.Millisecond)), func() { _ = p.Signal(syscall.SIGSTOP) })
	cont := time.AfterFunc(time.Until(r.start.Add(1500*time.Millisecond)), func() { _ = p.Signal(syscall.SIGCONT) })
	t.Cleanup(func() { stop.Stop(); cont.Stop(); _ = p.Signal(syscall.SIGCONT) })
	paths, shards := r.wait(t)
	if b := shards[1]; b.Connects.StartedLate != 10 || b.Messages.LateDial < 100 {
		t.Errorf("stopped shard: connects %+v, messages %+v: want all 10 connects started late and their missed slots counted as late_dial", b.Connects, b.Messages)
	}
	stdout, stderr, code := testenv.Run(t, nil, append([]string{"report", "merge", "-o", "json"}, paths...)...)
	var f Fleet
	if err := json.Unmarshal([]byte(stdout), &f); err != nil || f.Run == nil || f.Run.Merged == nil {
		t.Fatalf("report merge: %v\n%s\n%s", err, stdout, stderr)
	}
	m := f.Run.Merged
	// 20 clients × 20 slots of 100 ms in the 2 s window.
	if got := m.Throughput.WindowPublished; got != 400 || m.Messages.Published != m.Messages.Scheduled {
		t.Errorf("fleet window published %d, messages %+v: the fixed schedule holds 400 window messages, all published", got, m.Messages)
	}
	if code != 1 || f.Run.Verdict != "fail" {
		t.Errorf("report merge exit %d, fleet verdict %s: want a failed fleet (connect p95)", code, f.Run.Verdict)
	}
	for _, c := range f.Run.Checks {
		switch c.ID {
		case "mqtt.connect_p95":
			// At least the stopped shard's 10 connects; the running shard's
			// may be late too on a loaded host, and are then counted as well.
			var late int
			_, err := fmt.Sscanf(c.Remedy[max(0, strings.Index(c.Remedy, "the probe itself started ")):], "the probe itself started %d of", &late)
			if c.Status != "fail" || err != nil || late < 10 {
				t.Errorf("connect p95 %+v: want a failure whose remedy names the probe's own lag for at least the stopped shard's 10 connects", c)
			}
		case "mqtt.schedule":
			if c.Status != "warn" || !strings.Contains(c.Summary, "the probe fell behind") {
				t.Errorf("schedule %+v: want a warning that blames the probe", c)
			}
		}
	}
}

// The per-second series is indexed by the schedule's clock, not by
// ticker ticks: a process stopped for 2 s must not shift every later row
// by a second (rows whose lengths sum to less than the run, the burst
// that ends the stall a second early, and report merge adding the
// shards' rows into the wrong seconds). Shard 2's process is stopped
// (SIGSTOP) from 1.5 s to 3.5 s of the schedule.
func TestSeriesByScheduleClockAcrossAStop(t *testing.T) {
	r := twoShards(t, "--duration", "4s")
	p := r.cmds[1].Process // our own child
	stop := time.AfterFunc(time.Until(r.start.Add(1500*time.Millisecond)), func() { _ = p.Signal(syscall.SIGSTOP) })
	cont := time.AfterFunc(time.Until(r.start.Add(3500*time.Millisecond)), func() { _ = p.Signal(syscall.SIGCONT) })
	t.Cleanup(func() { stop.Stop(); cont.Stop(); _ = p.Signal(syscall.SIGCONT) })
	paths, shards := r.wait(t)
	b := shards[1]
	var sum float64
	for i, s := range b.Series {
		if s.T != i+1 {
			t.Fatalf("shard 2's row %d is second %d: want every second of the schedule in order\n%+v", i, s.T, b.Series)
		}
		sum += s.Seconds
	}
	if run := b.RampSeconds + b.WindowSeconds + b.DrainSeconds; math.Abs(sum-run) > 0.1 {
		t.Errorf("shard 2's rows last %.3f s in all, its run %.3f s (ramp, window, drain)\n%+v", sum, run, b.Series)
	}
	// Stopped through second 3 ([2, 3) s): nothing published in it; the
	// 2 s of its 10 clients' slots it missed (200) published in second
	// 4, when it resumed at 3.5 s.
	if len(b.Series) < 5 || b.Series[2].Published != 0 || b.Series[3].Published < 200 {
		t.Fatalf("shard 2's series %+v: want second 3 empty and the burst of 200+ in second 4", b.Series)
	}
	stdout, stderr, _ := testenv.Run(t, nil, append([]string{"report", "merge", "-o", "json"}, paths...)...)
	var f Fleet
	if err := json.Unmarshal([]byte(stdout), &f); err != nil || f.Run == nil || f.Run.Merged == nil {
		t.Fatalf("report merge: %v\n%s\n%s", err, stdout, stderr)
	}
	a, m := shards[0].Series, f.Run.Merged.Series
	for i := range 5 {
		if m[i].T != i+1 || m[i].Published != a[i].Published+b.Series[i].Published {
			t.Errorf("merged second %d: %+v, want the shards' second %d added: %+v and %+v", i+1, m[i], i+1, a[i], b.Series[i])
		}
	}
}

// The fleet HTML of report merge draws the merged run as the whole
// fleet: it drew it as "Shard 0/2: 11 clients of the fleet's 20" (the
// merged result carries shard K 0 of N) and the connections chart's
// target line at one shard's share while the whole fleet connected.
func TestFleetHTMLDrawsTheWholeFleet(t *testing.T) {
	r := twoShards(t)
	paths, _ := r.wait(t)
	page := filepath.Join(r.dir, "fleet.html")
	if _, stderr, code := testenv.Run(t, nil, append([]string{"report", "merge", "--html", page}, paths...)...); code != 0 {
		t.Fatalf("report merge --html: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	html := string(b)
	i := strings.Index(html, "The fleet as one run")
	if i < 0 {
		t.Fatalf("no merged run in the page")
	}
	merged := html[i:]
	for _, bad := range []string{"Shard 0/2", "of the fleet&#39;s", "target (10 clients)"} {
		if strings.Contains(merged, bad) {
			t.Errorf("the merged run's section says %q: it is the whole fleet", bad)
		}
	}
	for _, want := range []string{"2 shards merged: 20 clients connecting at 200 connections/s", "target (20 clients)"} {
		if !strings.Contains(merged, want) {
			t.Errorf("the merged run's section lacks %q", want)
		}
	}
}
