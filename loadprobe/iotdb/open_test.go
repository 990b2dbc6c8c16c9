package iotdb

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/iotdbfault"
)

// A call timeout far below a handshake (the tester used 50us to 1ms)
// does not keep sessions from opening: the OpenSession handshake has
// --connect-timeout. Before, the probe reported such a server as
// unreachable ("cannot open a session ... i/o timeout").
func TestSessionOpenIgnoresCallTimeout(t *testing.T) {
	srv := iotdbfault.StartT(t, iotdbfault.None)
	for _, raw := range []bool{false, true} {
		for _, call := range []time.Duration{50 * time.Microsecond, time.Millisecond} {
			cfg := Config{NodeURLs: []string{srv.Addr}, PoolSize: 1, CallTimeout: call, ConnectTimeout: 5 * time.Second}.withDefaults()
			p := newSessionPool(&cfg)
			p.raw = raw
			s, err := p.get(context.Background(), "")
			if err != nil {
				t.Errorf("raw %v, --call-timeout %v: opening a session: %v", raw, call, err)
			} else {
				p.put(s, false)
			}
			p.close(time.Second)
		}
	}
}

// A failed open says whether the TCP connect failed or the connection was
// made and the OpenSession handshake did not answer within
// --connect-timeout, and the probe's error names --connect-timeout for the
// latter.
func TestSessionOpenErrorsTellConnectFromHandshake(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close() // nothing listens there now
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer hung.Close() // never accepts: the kernel connects, nobody answers
	for _, tc := range []struct {
		addr       string
		want, bans []string
	}{
		{closedAddr, []string{"TCP connect failed", "is IoTDB running there"}, []string{"OpenSession"}},
		{hung.Addr().String(), []string{"TCP connect succeeded, but OpenSession did not answer within 300ms (--connect-timeout)", "--connect-timeout 300ms"}, []string{"TCP connect failed"}},
	} {
		host, port, _ := net.SplitHostPort(tc.addr)
		pn, _ := net.LookupPort("tcp", port)
		_, err := Run(context.Background(), Config{Host: host, Port: pn, Steps: []int{1}, StepDuration: time.Second,
			SettingNames:   probeFlags(&Config{}), // as `hostprep probe iotdb` names them
			ConnectTimeout: 300 * time.Millisecond, CallTimeout: 50 * time.Millisecond})
		if exitcode.Code(err) != exitcode.Environment {
			t.Fatalf("%s: %v (code %d), want exit 3", tc.addr, err, exitcode.Code(err))
		}
		t.Log(err)
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.addr, err, w)
			}
		}
		for _, b := range tc.bans {
			if strings.Contains(err.Error(), b) {
				t.Errorf("%s: error %q has %q", tc.addr, err, b)
			}
		}
	}
}
