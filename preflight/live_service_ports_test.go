package preflight

import (
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// TestLiveTestServicesPassPortsCollision: every port the test services
// listen on (mosquitto, IoTDB, RabbitMQ with its AMQP and Erlang
// distribution listeners) passes hostprep's own ports.collision check.
// Field case: CI's RabbitMQ died at boot with dist_port_already_used,
// because its distribution port, 38672 (RabbitMQ's AMQP port + 20000),
// lay in net.ipv4.ip_local_port_range and a connection opened just
// before held it as its local port; ports.collision warns of exactly
// that, and here judges the services' own ports, all of each owner's
// listeners, against this host's range.
func TestLiveTestServicesPassPortsCollision(t *testing.T) {
	owners := map[int]string{}
	for _, addr := range []string{testenv.MQTTBroker(t), testenv.RabbitMQ(t), testenv.IoTDB(t)} {
		pid, name := portOwner(t, servicePort(t, addr))
		owners[pid] = name
	}
	f, err := Gather(t.Context(), GatherOptions{Role: facts.Broker})
	if err != nil {
		t.Fatal(err)
	}
	var ports []int
	for pid, name := range owners {
		own := listenPortsOf(t, pid)
		if len(own) == 0 {
			t.Fatalf("ss shows no listener of %s (pid %d)", name, pid)
		}
		t.Logf("%s (pid %d) listens on %v", name, pid, own)
		ports = append(ports, own...)
	}
	slices.Sort(ports)
	f.ListeningPorts = slices.Compact(ports)
	c := testenv.CheckByID(t, checks.Evaluate(f, facts.Target{Sockets: 100, Role: facts.Broker}), "ports.collision")
	if c.Status != verdict.Pass {
		t.Errorf("a test service listens in the ephemeral range, where a connection's local port can take it first: %s", message(c))
	}
}

// ssUsers matches one process of ss -p's users:((...)) column.
var ssUsers = regexp.MustCompile(`\("([^"]+)",pid=(\d+),`)

// portOwner is the process (pid, comm) listening on port, from ss -ltnp.
func portOwner(t *testing.T, port int) (int, string) {
	t.Helper()
	out, err := exec.Command("ss", "-ltnpH", "sport", "=", ":"+strconv.Itoa(port)).Output()
	if err != nil {
		t.Fatalf("ss -ltnp: %v", err)
	}
	m := ssUsers.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("ss -ltnp names no process on port %d:\n%s", port, out)
	}
	pid, _ := strconv.Atoi(m[2])
	return pid, m[1]
}

// listenPortsOf is every TCP port pid listens on, from ss -ltnp.
func listenPortsOf(t *testing.T, pid int) []int {
	t.Helper()
	out, err := exec.Command("ss", "-ltnpH").Output()
	if err != nil {
		t.Fatalf("ss -ltnp: %v", err)
	}
	var ports []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || !strings.Contains(line, "pid="+strconv.Itoa(pid)+",") {
			continue
		}
		local := f[3]
		p, err := strconv.Atoi(local[strings.LastIndexByte(local, ':')+1:])
		if err == nil {
			ports = append(ports, p)
		}
	}
	return ports
}
