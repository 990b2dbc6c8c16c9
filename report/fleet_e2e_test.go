package report

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
