package preflight

import (
	"slices"
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
// listeners, against this host's range. The owners are found the way
// preflight finds a listener's owner: every listening port is named a
// target port, so Gather looks up the process of each.
func TestLiveTestServicesPassPortsCollision(t *testing.T) {
	var services []int
	for _, addr := range []string{testenv.MQTTBroker(t), testenv.RabbitMQ(t), testenv.IoTDB(t)} {
		services = append(services, servicePort(t, addr))
	}
	host, err := Gather(t.Context(), GatherOptions{Role: facts.Broker})
	if err != nil {
		t.Fatal(err)
	}
	f, err := Gather(t.Context(), GatherOptions{Role: facts.Broker, Ports: host.ListeningPorts})
	if err != nil {
		t.Fatal(err)
	}
	owners := map[int]string{}
	for _, l := range f.Listeners {
		if slices.Contains(services, l.Port) {
			if l.PID == 0 {
				t.Fatalf("no owner found for the test service on port %d", l.Port)
			}
			owners[l.PID] = l.Process
		}
	}
	var ports []int
	for _, l := range f.Listeners {
		if _, ok := owners[l.PID]; ok {
			ports = append(ports, l.Port)
		}
	}
	slices.Sort(ports)
	f.ListeningPorts = slices.Compact(ports)
	t.Logf("the test services' owners %v listen on %v", owners, f.ListeningPorts)
	c := testenv.CheckByID(t, checks.Evaluate(f, facts.Target{Sockets: 100, Role: facts.Broker}), "ports.collision")
	if c.Status != verdict.Pass {
		t.Errorf("a test service listens in the ephemeral range, where a connection's local port can take it first: %s", message(c))
	}
}
