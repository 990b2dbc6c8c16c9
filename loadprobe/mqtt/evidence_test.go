package mqtt

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// TestLocalBrokerOutOfFDsNamesItsNofile guards the field case
// local-broker-out-of-fds.md with a real mosquitto started on its own
// loopback port under prlimit --nofile=200:200: the clients beyond its
// limit fail and are counted as failed, and because the broker is on
// this host the verdict names its listener owner's nofile first ("pid N
// (mosquitto) has nofile 200: C clients + K of its own files"), with the
// fix, instead of a generic list of causes.
func TestLocalBrokerOutOfFDsNamesItsNofile(t *testing.T) {
	testenv.RequireRoot(t) // mosquitto's "user root": no drop to the mosquitto user
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	noLeak(t)
	m := startMosquittoUnder(t, []string{prlimit, "--nofile=200:200"}, "allow_anonymous true", "max_connections -1")
	cfg := small(m.url, 300)
	cfg.Duration = time.Second
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	checkCounts(t, res)
	cn := res.Connects
	if cn.Failed == 0 || cn.OK+int64(cn.Subscribers) > 200 {
		t.Fatalf("connects ok %d, failed %d: want the clients beyond nofile 200 to fail", cn.OK, cn.Failed)
	}
	e := res.Evidence
	if e == nil || e.Cause == "" {
		t.Fatalf("no cause named from the local broker's limits: %+v", e)
	}
	want := fmt.Sprintf("pid %d (mosquitto) has nofile 200: %d clients + %d of its own files", m.cmd.Process.Pid, cn.OK+1, 200-(cn.OK+1))
	if e.Cause != want {
		t.Errorf("cause %q, want %q", e.Cause, want)
	}
	c := testenv.CheckByID(t, res.Checks, "mqtt.connect_fail_rate")
	t.Logf("%s %s\nfix: %s", c.Status, c.Summary, c.Remedy)
	if c.Status != verdict.Fail || !strings.HasPrefix(c.Summary, want) || !strings.Contains(c.Remedy, "LimitNOFILE") {
		t.Errorf("mqtt.connect_fail_rate = %s %q fix %q, want the nofile cause first and LimitNOFILE", c.Status, c.Summary, c.Remedy)
	}
	if len(res.Failures) == 0 || !strings.Contains(res.Failures[0], want) {
		t.Errorf("first observed line %q, want the cause", res.Failures)
	}
}
