package iotdb

import (
	"strconv"
	"testing"
	"time"

	"github.com/apache/iotdb-client-go/client"
	"github.com/hostprep/hostprep/internal/iotdbfault"
)

// These tests pin down the behaviour of the v1.3.7 client that the probe
// works around (see the package doc), against the fault server. If a
// client upgrade changes it, they fail and the workarounds can be revisited.

func TestClientPoolAcceptsForeignPutBack(t *testing.T) {
	srv := iotdbfault.StartT(t, iotdbfault.None)
	host, port := srv.HostPort()
	pc := &client.PoolConfig{Host: host, Port: strconv.Itoa(port), UserName: "root", Password: "root"}
	pool := client.NewSessionPool(pc, 1, 1000, 100, false)
	a, err := pool.GetSession()
	if err != nil {
		t.Fatal(err)
	}
	// A session the pool never gave out...
	foreign := client.NewSession(&client.Config{Host: host, Port: strconv.Itoa(port), UserName: "root", Password: "root"})
	if err := foreign.Open(false, 1000); err != nil {
		t.Fatal(err)
	}
	// ...is accepted by PutBack, which frees the slot a still holds.
	pool.PutBack(foreign)
	b, err := pool.GetSession()
	if err != nil {
		t.Fatalf("after a foreign PutBack the size-1 pool gave nothing: %v", err)
	}
	// Now two sessions are out of a pool of size 1: the pool cannot be
	// trusted to count sessions in use, so the probe counts them itself.
	if a.GetSessionId() == b.GetSessionId() {
		t.Fatalf("expected two distinct sessions out, got %d twice", a.GetSessionId())
	}
	if _, err := pool.GetSession(); err == nil || err.Error() != "get session timeout" {
		t.Fatalf("third GetSession: %v, want the unexported 'get session timeout'", err)
	}
	// Both go back: b fills the one idle slot, and a's PutBack then blocks
	// on the full channel until someone takes b out again.
	pool.PutBack(b)
	done := make(chan struct{})
	go func() { pool.PutBack(a); close(done) }()
	select {
	case <-done:
		t.Fatal("PutBack of a session beyond the pool's size returned; expected it to block")
	case <-time.After(200 * time.Millisecond):
	}
	c, err := pool.GetSession()
	if err != nil {
		t.Fatal(err)
	}
	<-done
	c.Close()
	pool.Close()
}

func TestClientConnectionTimeoutDoesNotBoundCalls(t *testing.T) {
	srv := iotdbfault.StartT(t, iotdbfault.Slow)
	srv.SetDelay(1500 * time.Millisecond)
	host, port := srv.HostPort()
	s := client.NewSession(&client.Config{Host: host, Port: strconv.Itoa(port), UserName: "root", Password: "root"})
	if err := s.Open(false, 100); err != nil { // 100 ms "connection timeout"
		t.Fatal(err)
	}
	defer s.Close()
	start := time.Now()
	err := s.InsertRecord("root.x.d0", []string{"temperature"}, []client.TSDataType{client.FLOAT}, []interface{}{float32(1)}, 1)
	if took := time.Since(start); err != nil || took < 1400*time.Millisecond {
		t.Fatalf("InsertRecord returned after %v (err %v): the 100 ms connection timeout bounded the call after all", took, err)
	}
}
