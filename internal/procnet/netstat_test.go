package procnet

import (
	"strings"
	"testing"
)

func TestParseTcpExt(t *testing.T) {
	in := "TcpExt: SyncookiesSent ListenOverflows ListenDrops\nTcpExt: 1 7 9\nIpExt: InNoRoutes\nIpExt: 3\n"
	m, err := ParseTcpExt(strings.NewReader(in))
	if err != nil || m["ListenOverflows"] != 7 || m["ListenDrops"] != 9 || m["SyncookiesSent"] != 1 || len(m) != 3 {
		t.Fatalf("got %v %v", m, err)
	}
	if _, err := ParseTcpExt(strings.NewReader("TcpExt: A B\nTcpExt: 1\n")); err == nil || !strings.Contains(err.Error(), "2 names but 1 value") {
		t.Fatalf("mismatched line: %v", err)
	}
	// The live /proc parses too and has the counters the probes report.
	live, err := TcpExt("")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := live["ListenOverflows"]; !ok {
		t.Fatalf("live /proc/net/netstat has no ListenOverflows: %v", live)
	}
}
