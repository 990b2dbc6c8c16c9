package iotdb

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A cluster's NodeUrls with a dead address listed first and the live
// DataNode second: the run passes (every session goes to the live node)
// and the report names the unreachable node.
func TestNodeURLsDeadFirstPassesAndNamesTheDeadNode(t *testing.T) {
	cfg := realConfig(t, ScenarioWrite)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close() // nothing listens there now: connect is refused
	live := net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port))
	cfg.Host, cfg.Port = "", 0
	cfg.NodeURLs = []string{dead, live}
	cfg.Steps, cfg.StepDuration = []int{2, 4}, time.Second

	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run with node URLs %v: %v", cfg.NodeURLs, err)
	}
	var text strings.Builder
	if err := res.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + text.String())
	if res.Verdict != "pass" {
		t.Errorf("verdict %s, want pass (the live node carried the load)", res.Verdict)
	}
	for _, s := range res.Steps {
		if s.OK == 0 || s.Errors != 0 {
			t.Errorf("%d workers: %d ok, %d errors; want all operations to succeed on %s", s.Workers, s.OK, s.Errors, live)
		}
	}
	if len(res.UnreachableNodes) != 1 || !strings.HasPrefix(res.UnreachableNodes[0], dead+": ") {
		t.Errorf("unreachable nodes %q, want only %s", res.UnreachableNodes, dead)
	}
	if !strings.Contains(text.String(), "unreachable  "+dead) {
		t.Errorf("the text report does not name the unreachable node %s", dead)
	}
	if res.Target != dead+","+live {
		t.Errorf("target %q, want both node URLs", res.Target)
	}
}

func TestNodeURLsValidated(t *testing.T) {
	err := Config{NodeURLs: []string{"127.0.0.1"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "host:port") {
		t.Errorf("node URL without a port: %v, want a bad-input error asking for host:port", err)
	}
}
