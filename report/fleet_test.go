package report

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/loadprobe/latency"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
)

// shardResult is a shard's result file as `probe mqtt --shard` writes
// it, with ack and e2e histograms of random values (also added to all).
func shardResult(t *testing.T, k, n int, run string, rng *rand.Rand, all *[2]*latency.Recorder) *mqtt.Result {
	t.Helper()
	cfg := mqtt.Defaults()
	cfg.Broker, cfg.Clients, cfg.Shard, cfg.RunID = "tcp://127.0.0.1:1883", 30, fleet.Shard{K: k, N: n}, run
	cfg.StartAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ack, e2e := latency.New(), latency.New()
	pub := int64(100 + rng.IntN(50))
	for i := int64(0); i < pub; i++ {
		a, e := time.Duration(rng.ExpFloat64()*float64(3*time.Millisecond)), time.Duration(rng.ExpFloat64()*float64(8*time.Millisecond))
		ack.Record(a)
		e2e.Record(e)
		all[0].Record(a)
		all[1].Record(e)
	}
	r := &mqtt.Result{RunID: run, Config: cfg, Verdict: verdict.Pass, WindowSeconds: 10,
		Connects: mqtt.Connects{Target: 10, OK: 10, Subscribers: 1},
		Messages: mqtt.Messages{Scheduled: pub, Published: pub, Acked: pub, Expected: pub, Received: pub},
		Series:   []mqtt.Second{{T: 1, Published: pub / 2}, {T: 2, Published: pub - pub/2}},
	}
	var err error
	conn := latency.New()
	for i := 0; i < 10; i++ {
		conn.Record(time.Duration(rng.IntN(5000)) * time.Microsecond)
	}
	if r.Histograms.Connect, err = conn.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if r.Histograms.Ack, err = ack.Snapshot(); err != nil {
		t.Fatal(err)
	}
	if r.Histograms.E2E, err = e2e.Snapshot(); err != nil {
		t.Fatal(err)
	}
	r.Latency.Connect, r.Latency.Ack, r.Latency.E2E = conn.Summary(), ack.Summary(), e2e.Summary()
	return r
}

func writeResult(t *testing.T, dir, name string, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Merging the shards' files gives summed counts, the combined series and
// percentiles equal to one histogram of every shard's values.
func TestMergeShardsExact(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	all := [2]*latency.Recorder{latency.New(), latency.New()}
	var paths []string
	var pub int64
	for k := 3; k >= 1; k-- {
		r := shardResult(t, k, 3, "fleet-1", rng, &all)
		pub += r.Messages.Published
		paths = append(paths, writeResult(t, dir, "lg"+string(rune('0'+k))+".json", r))
	}
	f, err := Merge(append(paths, fleetFiles[0]))
	if err != nil {
		t.Fatal(err)
	}
	run := f.Run
	if run == nil || run.Merged == nil || len(run.Present) != 3 || len(run.Missing) != 0 {
		t.Fatalf("fleet run %+v", run)
	}
	m := run.Merged
	if m.Messages.Published != pub || m.Messages.Received != pub || m.Connects.Target != 30 || m.Connects.OK != 30 {
		t.Errorf("merged counts %+v %+v, want published %d and 30 clients", m.Messages, m.Connects, pub)
	}
	if got := m.Series[0].Published + m.Series[1].Published; got != pub {
		t.Errorf("combined series publishes %d, want %d", got, pub)
	}
	if a, w := m.Latency.Ack, all[0].Summary(); a != w {
		t.Errorf("merged ack %+v != union %+v", a, w)
	}
	if e, w := m.Latency.E2E, all[1].Summary(); e.P50 != w.P50 || e.P99 != w.P99 {
		t.Errorf("merged e2e p50/p99 %v/%v != union %v/%v", e.P50, e.P99, w.P50, w.P99)
	}
	if run.Verdict != verdict.Pass || f.Failed() || f.Hosts != 1 {
		t.Errorf("verdict %s, checks %+v, hosts %d", run.Verdict, run.Checks, f.Hosts)
	}
	var b strings.Builder
	if err := f.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "fleet verdict: PASS") || !strings.Contains(b.String(), "HOST") {
		t.Errorf("text:\n%s", b.String())
	}
	b.Reset()
	if err := f.WriteJUnit(&b); err != nil || !strings.Contains(b.String(), "fleet.shards") || !strings.Contains(b.String(), "mqtt.ack_p95") {
		t.Errorf("junit %v:\n%s", err, b.String())
	}
}

// A missing shard, a shard of another run, two files for one shard: each
// a clear error (the missing shard is named and fails the fleet).
func TestMergeShardsRefused(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 4))
	all := [2]*latency.Recorder{latency.New(), latency.New()}
	s1 := writeResult(t, dir, "s1.json", shardResult(t, 1, 3, "fleet-1", rng, &all))
	s2 := writeResult(t, dir, "s2.json", shardResult(t, 2, 3, "fleet-1", rng, &all))
	s3 := writeResult(t, dir, "s3.json", shardResult(t, 3, 3, "fleet-1", rng, &all))
	other := writeResult(t, dir, "other.json", shardResult(t, 3, 3, "fleet-2", rng, &all))
	dup := writeResult(t, dir, "dup.json", shardResult(t, 2, 3, "fleet-1", rng, &all))
	ofFour := writeResult(t, dir, "four.json", shardResult(t, 3, 4, "fleet-1", rng, &all))
	subs := shardResult(t, 3, 3, "fleet-1", rng, &all)
	subs.Config.Subscribers = 3
	otherSubs := writeResult(t, dir, "subs.json", subs)
	emb := shardResult(t, 3, 3, "fleet-1", rng, &all)
	emb.Config.Broker, emb.Broker = "", "embedded mochi-mqtt broker at tcp://127.0.0.1:40000"
	embedded := writeResult(t, dir, "embedded.json", emb)

	f, err := Merge([]string{s1, s3})
	if err != nil {
		t.Fatal(err)
	}
	if !f.Failed() || len(f.Run.Missing) != 1 || f.Run.Missing[0] != 2 || !strings.Contains(f.Run.Checks[0].Summary, "shard 2/3 of run fleet-1 missing") {
		t.Errorf("missing shard: %+v", f.Run)
	}
	for name, tc := range map[string]struct {
		files []string
		want  string
	}{
		"other run": {[]string{s1, s2, other}, "different runs"},
		"same K":    {[]string{s1, s2, dup, s3}, "are both shard 2/3"},
		"other N":   {[]string{s1, s2, ofFour}, "not the same fleet run"},
		// Shards of another load or broker: one line naming the flag,
		// both values and both files (they merged into a PASS).
		"other subscribers": {[]string{s1, s2, otherSubs}, "--subscribers 3 in " + otherSubs + ", 1 in " + s1},
		"embedded broker":   {[]string{s1, s2, embedded}, embedded + " probed its own embedded broker"},
	} {
		_, err := Merge(tc.files)
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want bad input with %q", name, err, tc.want)
		}
	}
	// A probe result without --shard is not a fleet shard.
	r := shardResult(t, 1, 3, "solo", rng, &all)
	r.Config.Shard = fleet.Shard{}
	solo := writeResult(t, dir, "solo.json", r)
	if _, err := Merge([]string{solo}); exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "without --shard") {
		t.Errorf("solo probe result: %v", err)
	}
}

// A file report merge cannot use says what it is: a shard result cut
// short, or several results in one JSON array (never "not JSON from
// `hostprep ready --output json`"), and an IoTDB probe result without
// --shard (not an IoTDB shard result).
func TestBadInputSaysWhatTheFileIs(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 6))
	all := [2]*latency.Recorder{latency.New(), latency.New()}
	b, err := json.Marshal(shardResult(t, 1, 2, "fleet-1", rng, &all))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	iotdb, err := os.ReadFile("testdata/iotdb-shard-1of2.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		data      []byte
		want, not string
	}{
		"truncated shard": {b[:len(b)/2], "not a whole probe result", "hostprep ready"},
		"array":           {append(append([]byte("["), b...), ']'), "a JSON array, not a result file", "not JSON from"},
		"iotdb solo":      {bytes.Replace(iotdb, []byte(`"shard": "1/2",`), nil, 1), "is a `hostprep probe iotdb` result: report merge takes", "shard results are not merged"},
	} {
		p := write(strings.ReplaceAll(name, " ", "-")+".json", tc.data)
		_, err := Merge([]string{"testdata/lg-01.json", p})
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), tc.not) {
			t.Errorf("%s: %v (code %d), want bad input naming the file with %q and without %q", name, err, exitcode.Code(err), tc.want, tc.not)
		}
	}
}
