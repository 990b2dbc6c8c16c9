package mqtt

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/loadprobe/fleet"
)

// Every Config field is either compared between the shards of one run or
// named as a shard's own with the reason, and a shard that differs in a
// compared field is refused with the field's flag, both values and both
// files. sameRun compared 9 fields and let shards of different brokers,
// --subscribers, --topic or --retry-interval merge into one PASS.
func TestSameRunCoversConfig(t *testing.T) {
	compared := map[string]bool{}
	for _, f := range sameRunFields {
		compared[f] = true
	}
	typ := reflect.TypeOf(Config{})
	for i := 0; i < typ.NumField(); i++ {
		name := typ.Field(i).Name
		_, own := sameRunOwn[name]
		if compared[name] == own {
			t.Errorf("Config.%s: in sameRunFields %v, in sameRunOwn %v; want exactly one: does it define the load or its target?", name, compared[name], own)
		}
	}
	base := Defaults()
	base.Broker, base.Shard, base.StartAt = "tcp://127.0.0.1:1883", fleet.Shard{K: 1, N: 2}, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a := &Result{RunID: "fleet-1", Broker: base.Broker, Config: base}
	var filled Config
	fillAll(t, &filled)
	for _, f := range sameRunFields {
		cfg := base
		cfg.Shard.K = 2
		reflect.ValueOf(&cfg).Elem().FieldByName(f).Set(reflect.ValueOf(filled).FieldByName(f))
		b := &Result{RunID: "fleet-1", Broker: cfg.Broker, Config: cfg}
		err := SameRun(a, b, "lg1.json", "lg2.json")
		sf, _ := typ.FieldByName(f)
		flag := "--" + sf.Tag.Get("flag")
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), flag+" ") ||
			!strings.Contains(err.Error(), "in lg1.json") || !strings.Contains(err.Error(), "in lg2.json") || strings.Contains(err.Error(), "\n") {
			t.Errorf("Config.%s differs: %v; want one line naming %s, both values and both files", f, err, flag)
		}
	}
	same := *a
	same.Config.Shard.K = 2
	same.Config.SourceIPs, same.Config.Username = "127.0.0.2", "other"
	if err := SameRun(a, &same, "lg1.json", "lg2.json"); err != nil {
		t.Errorf("shards differing only in their own fields: %v", err)
	}
}

// Shards that measured different brokers are not one fleet run: shard 1
// against a mosquitto, shard 2 against its own embedded broker (no
// --broker), or against the same mosquitto with --subscribers 3. Field
// case: the three merged into "MQTT probe tcp://127.0.0.1:PORT ... fleet
// verdict: PASS".
func TestMergeRefusesShardsOfOtherBrokers(t *testing.T) {
	noLeak(t)
	m := startMosquitto(t, "allow_anonymous true")
	start := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	cfgs := make([]Config, 3)
	for i := range cfgs {
		c := small(m.url, 10)
		c.Shard, c.StartAt, c.MaxClockError, c.Procs, c.Grace = fleet.Shard{K: min(i+1, 2), N: 2}, start, 0, -1, time.Second
		cfgs[i] = c
	}
	cfgs[1].Broker = ""     // shard 2: the embedded broker
	cfgs[2].Subscribers = 3 // shard 2: the mosquitto, other subscribers
	res := make([]*Result, 3)
	var wg sync.WaitGroup
	for i := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if res[i], err = Run(context.Background(), cfgs[i]); err != nil {
				t.Errorf("shard %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	for i, want := range map[int]string{1: "own embedded broker", 2: "--subscribers 3 in shard 2/2, 1 in shard 1/2"} {
		merged, err := MergeShards([]*Result{res[0], res[i]})
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), want) {
			t.Errorf("shard 1 (%s) with shard 2 (%s): %v (merged %v), want refused with %q", res[0].Broker, res[i].Broker, err, merged != nil, want)
		}
	}
}

// One broker spelled tcp:// by one shard and mqtt:// by the other is one
// broker (mqtt:// is plain MQTT like tcp://): the shards merge. SameRun
// compared the raw URL and refused them. Another port, or TLS to the
// same host and port, is another endpoint and is still refused.
func TestMergeBrokerSchemesOfOneEndpoint(t *testing.T) {
	noLeak(t)
	m := startMosquitto(t, "allow_anonymous true")
	start := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	urls := []string{m.url, strings.Replace(m.url, "tcp://", "mqtt://", 1)}
	res := make([]*Result, 2)
	var wg sync.WaitGroup
	for i := range res {
		c := small(urls[i], 10)
		c.Shard, c.StartAt, c.MaxClockError, c.Procs, c.Grace = fleet.Shard{K: i + 1, N: 2}, start, 0, -1, time.Second
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if res[i], err = Run(context.Background(), c); err != nil {
				t.Errorf("shard %d (%s): %v", i+1, c.Broker, err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	merged, err := MergeShards([]*Result{res[0], res[1]})
	if err != nil {
		t.Fatalf("shards of %s and %s: %v; want one broker", urls[0], urls[1], err)
	}
	if merged.Messages.Received != res[0].Messages.Received+res[1].Messages.Received || merged.Connects.OK != 10 {
		t.Errorf("merged %+v %+v: want the two shards' sums", merged.Messages, merged.Connects)
	}
	for _, other := range []string{"mqtts" + strings.TrimPrefix(m.url, "tcp"), "mqtt://127.0.0.1"} {
		b := *res[1]
		b.Config.Broker = other
		if err := SameRun(res[0], &b, "lg1.json", "lg2.json"); exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "--broker "+strconv.Quote(other)) {
			t.Errorf("%s with %s: %v; want refused naming --broker %q", m.url, other, err, other)
		}
	}
	same := *res[1]
	same.Config.Broker = "MQTT://127.0.0.1:1883"
	a := *res[0]
	a.Config.Broker = "tcp://127.0.0.1"
	if err := SameRun(&a, &same, "lg1.json", "lg2.json"); err != nil {
		t.Errorf("tcp://127.0.0.1 and MQTT://127.0.0.1:1883 (the default port): %v; want one broker", err)
	}
}
