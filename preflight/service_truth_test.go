package preflight

import (
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Checks that judge the real service, by check ID and status on recorded
// hosts.
func TestServiceTruthStatuses(t *testing.T) {
	cases := []struct {
		name   string
		host   string
		target facts.Target
		id     string
		status verdict.Status
	}{
		{"orphans over the limit now fail whatever the target", `sockstat: {orphan: 65738}
sysctl: {net.ipv4.tcp_max_orphans: "65536"}`, facts.Target{Sockets: 10, Role: facts.Broker}, "tcp.orphans", verdict.Fail},
		{"orphans below the limit", `sockstat: {orphan: 100}
sysctl: {net.ipv4.tcp_max_orphans: "65536"}`, facts.Target{Sockets: 10, Role: facts.Broker}, "tcp.orphans", verdict.Pass},
		{"tcp_mem max above RAM warns at 10 sockets", `mem_total_bytes: 8589934592
sysctl: {net.ipv4.tcp_mem: "1000000 1500000 4000000"}`, facts.Target{Sockets: 10, Role: facts.Broker}, "mem.tcp_mem", verdict.Warn},
		{"tcp_mem pressure above RAM warns", `mem_total_bytes: 8589934592
sysctl: {net.ipv4.tcp_mem: "1000000 3000000 3000001"}`, facts.Target{Sockets: 10, Role: facts.Loadgen}, "mem.tcp_mem", verdict.Warn},
		{"tcp_mem of the kernel's own sizing passes", `mem_total_bytes: 8589934592`, facts.Target{Sockets: 10, Role: facts.Broker}, "mem.tcp_mem", verdict.Pass},
		// The kernel's sk_acceptq_is_full: full when more wait than the
		// backlog (listen(3) holds 4, listen(0) holds 1).
		{"accept queue full now", `listeners: [{port: 1883, backlog: 4096, accept_queue: 4097, process: mosquitto}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 100}, "accept.queue", verdict.Fail},
		{"accept queue at its backlog still takes one", `listeners: [{port: 1883, backlog: 4096, accept_queue: 4096, process: mosquitto}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 100}, "accept.queue", verdict.Pass},
		{"listen(0) with one waiting is full", `listeners: [{port: 1883, backlog: 0, accept_queue: 1, process: mosquitto}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 100}, "accept.queue", verdict.Fail},
		{"listener backlog covers the rate", `listeners: [{port: 1883, backlog: 4096, process: emqx}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 100}, "accept.backlog", verdict.Pass},
		// sock_diag's backlog is already capped at somaxconn as it was at
		// listen(): one above today's somaxconn was listened before it was
		// lowered, and holds until the server listens again (measured in a
		// namespace: backlog 100 after somaxconn went to 64 queued 101)
		{"somaxconn lowered after listen(): holds now, a restart caps it", `listeners: [{port: 1883, backlog: 65535}]
sysctl: {net.core.somaxconn: "4096"}`, facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 2500}, "accept.backlog", verdict.Warn},
		{"somaxconn too small with nothing listening yet", `sysctl: {net.core.somaxconn: "4096"}`, facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 2500}, "accept.backlog", verdict.Fail},
		{"--port picks the listener", `listeners: [{port: 1883, backlog: 100}, {port: 11883, backlog: 4096}]`,
			facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 500, Ports: []int{11883}}, "accept.backlog", verdict.Pass},
		{"nothing listens yet: not judged", ``, facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 500}, "accept.backlog", verdict.Skip},
		{"listeners unreadable: cannot pass", `listening_ports: [1883]`, facts.Target{Sockets: 10, Role: facts.Broker, ConnRate: 500}, "accept.backlog", verdict.Warn},
		{"max_map_count default warns for iotdb", `sysctl: {vm.max_map_count: "65530"}`, facts.Target{Sockets: 10, Role: facts.IoTDB}, "iotdb.max_map_count", verdict.Warn},
		{"max_map_count tuned", `sysctl: {vm.max_map_count: "262144"}`, facts.Target{Sockets: 10, Role: facts.IoTDB}, "iotdb.max_map_count", verdict.Pass},
		{"iotdb config not read without --iotdb-home", ``, facts.Target{Sockets: 10, Role: facts.IoTDB}, "iotdb.clients", verdict.Skip},
		{"unnamed server process: fd.soft warns", ``, facts.Target{Sockets: 5000, Role: facts.Broker}, "fd.soft", verdict.Warn},
		{"unnamed loadgen: the login shell is the truth", ``, facts.Target{Sockets: 5000, Role: facts.Loadgen}, "fd.soft", verdict.Fail},
		{"unit asks infinity: resolved to PID 1's hard limit", `target_process: {managed_by: systemd, unit: emqx.service, nofile_soft: infinity, nofile_hard: infinity}
pid1_nofile: {soft: 65536, hard: 65536}`, facts.Target{Sockets: 70000, Role: facts.Broker}, "fd.hard", verdict.Fail},
		{"unit asks infinity, PID 1 allows it", `target_process: {managed_by: systemd, unit: emqx.service, nofile_soft: infinity, nofile_hard: infinity}
pid1_nofile: {soft: 1048576, hard: 1048576}`, facts.Target{Sockets: 70000, Role: facts.Broker}, "fd.hard", verdict.Pass},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tg := c.target
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			got := testenv.CheckByID(t, checks.Evaluate(host(t, c.host), tg), c.id)
			if got.Status != c.status {
				t.Errorf("%s: %s, want %s: %s", c.id, got.Status, c.status, message(got))
			}
		})
	}
}
