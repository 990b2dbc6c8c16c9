package mqtt

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/loadprobe/fleet"
)

// Three shards started together split one load exactly: disjoint
// clients (no broker takeover, no cross-talk between the shards'
// subscribers), the fleet's schedule from the common start, and counts
// that add up to one run of the fleet's --clients.
func TestShardsSplitOneLoad(t *testing.T) {
	url := testenv.MQTTBroker(t)
	noLeak(t)
	start := time.Now().Add(2 * time.Second).Truncate(time.Millisecond)
	var wg sync.WaitGroup
	res := make([]*Result, 3)
	errs := make([]error, 3)
	for k := 1; k <= 3; k++ {
		cfg := small(url, 30)
		cfg.ConnRate = 300
		cfg.PubInterval = 100 * time.Millisecond
		cfg.Shard = fleet.Shard{K: k, N: 3}
		cfg.StartAt = start
		cfg.MaxClockError = 0 // one host, one clock
		cfg.Procs = -1        // three runs in one process: leave GOMAXPROCS alone
		cfg.SourceIPs = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4"}[k-1]
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			res[i], errs[i] = Run(context.Background(), cfg)
		}(k - 1)
	}
	wg.Wait()
	var clients int
	for i, r := range res {
		if errs[i] != nil {
			t.Fatalf("shard %d: %v", i+1, errs[i])
		}
		checkCounts(t, r)
		m := r.Messages
		if r.Connects.Target != 10 || r.Connects.OK != 10 || r.Connects.Lost != 0 {
			t.Errorf("shard %d connects %+v, want its 10 of 30 all up and none taken over", i+1, r.Connects)
		}
		if m.Published == 0 || m.Received != m.Published || m.Duplicated != 0 {
			t.Errorf("shard %d messages %+v: want its own messages exactly once", i+1, m)
		}
		if r.RunID != "fleet-"+itoa(start.UnixMilli()) || !r.ScheduleStart.Equal(start) {
			t.Errorf("shard %d: run id %q, schedule start %v; want the shared id and %v", i+1, r.RunID, r.ScheduleStart, start)
		}
		if fp := r.FirstPublish; fp == nil || fp.LateMs > 20 || fp.Scheduled.Before(start) {
			t.Errorf("shard %d first publish %+v: want written within 20 ms of its slot, after %v", i+1, fp, start)
		}
		if !strings.HasSuffix(r.Filter, "-s"+itoa(int64(i+1))+"/+") {
			t.Errorf("shard %d subscribes %q: want its own topics only", i+1, r.Filter)
		}
		clients += r.Connects.Target
	}
	if clients != 30 {
		t.Errorf("shards hold %d clients, want the fleet's 30", clients)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// A start already past, or a clock that cannot keep a common start, is a
// clear error before any connection (nothing measured, nil result).
func TestStartAtRefusedBeforeConnecting(t *testing.T) {
	cfg := small("tcp://127.0.0.1:1", 5) // nothing listens: a connection attempt would fail differently
	cfg.StartAt = time.Now().Add(-time.Second)
	cfg.MaxClockError = 0
	res, err := Run(context.Background(), cfg)
	if res != nil || exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "in the past") {
		t.Fatalf("past --start-at: %v %v", res, err)
	}
	clock, cerr := fleet.ReadClock()
	if cerr != nil || clock.Synchronised && clock.MaxErrorMs < 50 {
		t.Skipf("this host's clock is synchronised (%+v, %v): the unsynchronised case cannot be shown here", clock, cerr)
	}
	cfg.StartAt = time.Now().Add(5 * time.Second)
	cfg.MaxClockError = 50 * time.Millisecond
	res, err = Run(context.Background(), cfg)
	if res != nil || exitcode.Code(err) != exitcode.Environment || !strings.Contains(err.Error(), "max-clock-error") {
		t.Fatalf("unsynchronised clock: %v %v", res, err)
	}
}

func TestShardBadInput(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Shard = fleet.Shard{K: 1, N: 2} }, "--start-at"},
		{func(c *Config) { c.Shard, c.StartAt, c.Clients = fleet.Shard{K: 1, N: 9}, time.Now(), 5 }, "at least one client"},
		{func(c *Config) { c.Shard, c.StartAt, c.Topic = fleet.Shard{K: 1, N: 2}, time.Now(), "t/{client}" }, "{run}"},
		{func(c *Config) { c.RunID = "a/b" }, "--run-id"},
		{func(c *Config) { c.MaxClockError = -1 }, "--max-clock-error"},
	} {
		c := Defaults()
		tc.mod(&c)
		err := c.Validate()
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want bad input naming %s, got %v", tc.want, err)
		}
	}
}
