package facts

import (
	"cmp"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/profiles"
)

// Role is what the host does with its sockets.
type Role string

const (
	// Broker accepts N client connections (an MQTT broker): accept path
	// checks apply, ephemeral ports do not.
	Broker Role = "broker"
	// Loadgen opens N outgoing connections: every one needs an ephemeral
	// port per (source address, destination) pair.
	Loadgen Role = "loadgen"
	// IoTDB accepts client sessions like a broker (DataNode RPC port).
	IoTDB Role = "iotdb"
)

// Roles lists the valid roles.
var Roles = []Role{Broker, Loadgen, IoTDB}

// DefaultConnRate is the connect rate (connections/s) assumed when neither
// --conn-rate nor the profile says: the default.
const DefaultConnRate = 2000

// Target is the load the host must carry.
type Target struct {
	// Sockets is the number of concurrently open TCP sockets (connections,
	// from the holding process's point of view: one fd each).
	Sockets int `json:"sockets"`
	// Role is broker, loadgen or iotdb.
	Role Role `json:"role"`
	// ConnRate is the rate of new connections, connections/s (default
	// DefaultConnRate).
	ConnRate int `json:"conn_rate"`
	// Destinations are ip:port endpoints a loadgen connects to; empty means
	// one destination is assumed.
	Destinations []string `json:"destinations,omitempty"`
	// SourceIPs are the addresses the loadgen binds its sockets to
	// (--source-ips); empty means a plain connect(), one source address
	// (the route's preferred source) per destination.
	SourceIPs []string `json:"source_ips,omitempty"`
	// ServicePorts are ports a service on this host must be able to bind
	// (from the profile: reserve_ports and probe ports); they must not lie
	// in the ephemeral range unreserved.
	ServicePorts []int `json:"service_ports,omitempty"`
	// Service is the systemd unit that will hold the sockets (from the
	// profile's systemd.services when --service/--pid are not given).
	Service string `json:"service,omitempty"`
	// AltServices are the profile's other systemd.services (emqx,
	// mosquitto: whichever broker the host has): when Service is not
	// installed, the first of them that is is judged instead.
	AltServices []string `json:"alt_services,omitempty"`
	// Ports are the TCP ports the target listens on (--port, repeatable);
	// empty means the role's usual ports (DefaultPorts).
	Ports []int `json:"ports,omitempty"`
	// InProcess says the server that will hold the sockets runs inside
	// hostprep itself: a broker target whose profile's probe.mqtt names
	// no broker, which the probe and ready then run embedded, on
	// loopback, in their own process. That process (ProcessFacts.Self)
	// is then judged, not a login shell's limits nor a listener on the
	// role's usual ports.
	InProcess bool `json:"in_process,omitempty"`
	// IoTDB holds what the iotdb role's configuration checks compare the
	// DataNode's settings against.
	IoTDB IoTDBLoad `json:"iotdb,omitempty"`
	// Profile is how --profile named the profile the target came from
	// (profiles.Profile.Source, else its name), for remedies that apply
	// it with hostprep tune; "" without --profile.
	Profile string `json:"profile,omitempty"`
	// ProfileTasksMax is that profile's systemd.tasks_max, the TasksMax=
	// `hostprep tune apply` writes for its services (tasks; Unlimited for
	// infinity; 0: none).
	ProfileTasksMax uint64 `json:"profile_tasks_max,omitempty"`
	// ProfileSysctl, ProfileNofile and ProfileUnitNofile are that
	// profile's sysctl values (as written), its limits.nofile and the
	// LimitNOFILE its systemd.services get (systemd.limit_nofile, else
	// limits.nofile; zero without services), in file descriptors, so that
	// a remedy that applies the profile never asks for less than it has.
	ProfileSysctl map[string]string `json:"-"`
	// ProfileSets are the --set overrides the profile was loaded with
	// (profiles.Profile.Sets), which a remedy's command repeats.
	ProfileSets       []string       `json:"-"`
	ProfileNofile     profiles.Limit `json:"-"`
	ProfileUnitNofile profiles.Limit `json:"-"`
}

// IoTDBLoad is the client load an IoTDB DataNode must take.
type IoTDBLoad struct {
	// PoolSize is the SessionPool size of one load generator (sessions,
	// each one TCP connection to the DataNode's client port); 0 = not
	// given, the client-count check is then skipped.
	PoolSize int `json:"pool_size,omitempty"`
	// LoadGenerators is how many hosts or processes run such a pool
	// (default 1).
	LoadGenerators int `json:"load_generators,omitempty"`
	// BatchPoints is the points (rows x measurements) in the largest
	// insertTablet/insertRecords call; 0 = not given.
	BatchPoints int `json:"batch_points,omitempty"`
}

// DefaultPorts are the ports a role's service usually listens on: MQTT
// 1883 and MQTT over TLS 8883 for a broker, the DataNode's client RPC
// port 6667 (dn_rpc_port) for iotdb; none for a loadgen.
var DefaultPorts = map[Role][]int{Broker: {1883, 8883}, IoTDB: {6667}}

// ListenerPorts are the ports whose listeners are the target's: Ports, or
// the role's DefaultPorts.
func (t Target) ListenerPorts() []int {
	if len(t.Ports) > 0 {
		return t.Ports
	}
	return DefaultPorts[t.Role]
}

// MaxSockets is the most sockets a target may ask for: 2^30 (1073741824),
// a thousand times the million hostprep tunes for and near the kernel's
// own ceiling on one process's file descriptors (sysctl_nr_open_max,
// INT_MAX rounded down to a multiple of BITS_PER_LONG: 2147483584). A
// number past it is a typo, not a plan, and every count derived from it
// (fds, ports, kernel memory) would no longer mean anything.
const MaxSockets = 1 << 30

// Validate checks the target and fills defaults. Errors are
// exitcode.BadInput and name the flag.
func (t *Target) Validate() error {
	if t.Sockets <= 0 {
		return exitcode.BadInputf("--sockets %d: want a positive number of sockets (e.g. --sockets 1000000), or --profile with a preflight section", t.Sockets)
	}
	if t.Sockets > MaxSockets {
		return exitcode.BadInputf("--sockets %d: want at most %d (preflight.MaxSockets, near the kernel's ceiling on one process's file descriptors); split the load over more processes or hosts", t.Sockets, MaxSockets)
	}
	ok := false
	for _, r := range Roles {
		if t.Role == r {
			ok = true
		}
	}
	if !ok {
		return exitcode.BadInputf("--role %q: want broker, loadgen or iotdb", t.Role)
	}
	if t.ConnRate < 0 {
		return exitcode.BadInputf("--conn-rate %d: want connections/s >= 0 (0 means the default %d)", t.ConnRate, DefaultConnRate)
	}
	if t.ConnRate == 0 {
		t.ConnRate = DefaultConnRate
	}
	for _, d := range t.Destinations {
		host, port, err := net.SplitHostPort(d)
		if err != nil || net.ParseIP(host) == nil {
			return exitcode.BadInputf("--dest %q: want ip:port, e.g. 192.0.2.10:1883", d)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return exitcode.BadInputf("--dest %q: port must be 1..65535", d)
		}
	}
	for _, s := range t.SourceIPs {
		if net.ParseIP(s) == nil {
			return exitcode.BadInputf("--source-ips %q: want IP addresses separated by commas, e.g. 192.0.2.20,192.0.2.21", s)
		}
	}
	for _, p := range t.ServicePorts {
		if p < 1 || p > 65535 {
			return exitcode.BadInputf("service port %d: must be 1..65535", p)
		}
	}
	for _, p := range t.Ports {
		if p < 1 || p > 65535 {
			return exitcode.BadInputf("--port %d: want the TCP port the service listens on, 1..65535 (e.g. --port 1883)", p)
		}
	}
	if t.Role == Loadgen && len(t.Ports) > 0 {
		return exitcode.BadInputf("--port %v with --role loadgen: a load generator listens on nothing; --port names a broker's or DataNode's listener (use --dest for where a loadgen connects)", t.Ports)
	}
	if d := t.IoTDB; d.PoolSize < 0 || d.LoadGenerators < 0 || d.BatchPoints < 0 {
		return exitcode.BadInputf("--pool-size %d, --loadgens %d, --batch-points %d: want counts >= 0 (0 means not given)", d.PoolSize, d.LoadGenerators, d.BatchPoints)
	}
	if t.IoTDB.LoadGenerators == 0 {
		t.IoTDB.LoadGenerators = 1
	}
	return nil
}

// TargetFromProfile returns the preflight target a profile carries
// (`preflight: {sockets, role, conn_rate, destinations}`), with the
// profile's reserve_ports and probe ports as service ports, a probe's
// port on this host as the listener of its role (Ports), and its systemd
// services as the process that will hold the sockets (the first one
// installed: Service, AltServices).
//
// It returns an exitcode.BadInput error when the profile has no preflight
// section.
func TargetFromProfile(p *profiles.Profile) (Target, error) {
	if p == nil || p.Preflight == nil {
		name := ""
		if p != nil {
			name = cmp.Or(p.Source, p.Name) // a file's path, as --profile loads it
		}
		return Target{}, exitcode.BadInputf("profile %q has no preflight section: add `preflight: {sockets: N, role: broker}` or pass --sockets N (and --role, default broker)", name)
	}
	t := Target{
		Profile:      cmp.Or(p.Source, p.Name),
		Sockets:      p.Preflight.Sockets,
		Role:         Role(p.Preflight.Role),
		ConnRate:     p.Preflight.ConnRate.Ceil(),
		Destinations: append([]string(nil), p.Preflight.Destinations...),
	}
	t.ServicePorts = append(t.ServicePorts, p.ReservePorts...)
	// A probe aimed at a server on this host names the port that server
	// listens on: for that role it is the target's listener (--port), so
	// its owner and backlog are judged, not the role's usual ports.
	if m := p.Probe.MQTT; m != nil && m.Broker != "" {
		if u, err := url.Parse(m.Broker); err == nil && u.Port() != "" && IsLocalHost(u.Hostname()) {
			if n, err := strconv.Atoi(u.Port()); err == nil {
				t.ServicePorts = AppendUnique(t.ServicePorts, n)
				if t.Role == Broker {
					t.Ports = AppendUnique(t.Ports, n)
				}
			}
		}
	}
	// Without a broker (and without a unit of its own) the profile's MQTT
	// probe runs the broker embedded: hostprep holds the broker's sockets.
	if m := p.Probe.MQTT; m != nil && m.Broker == "" && t.Role == Broker && len(p.Systemd.Services) == 0 {
		t.InProcess = true
	}
	if d := p.Probe.IoTDB; d != nil && d.Port > 0 && IsLocalHost(d.Host) && t.Role == IoTDB {
		t.ServicePorts = AppendUnique(t.ServicePorts, d.Port)
		t.Ports = AppendUnique(t.Ports, d.Port)
	}
	if d := p.Probe.IoTDB; d != nil && t.Role == IoTDB {
		t.IoTDB.PoolSize = d.PoolSize
	}
	if len(p.Systemd.Services) > 0 {
		t.Service, t.AltServices = p.Systemd.Services[0], p.Systemd.Services[1:]
	}
	if m := p.Systemd.TasksMax; m != nil && len(p.Systemd.Services) > 0 {
		t.ProfileTasksMax = uint64(*m)
	}
	t.ProfileSets = slices.Clone(p.Sets)
	t.ProfileSysctl = map[string]string{}
	for k, s := range p.Sysctl {
		t.ProfileSysctl[k] = s.Value
	}
	if l := p.Limits.Nofile; l != nil {
		t.ProfileNofile = *l
	}
	if len(p.Systemd.Services) > 0 {
		t.ProfileUnitNofile = *cmp.Or(p.Systemd.LimitNOFILE, p.Limits.Nofile, &profiles.Limit{})
	}
	return t, nil
}

func IsLocalHost(h string) bool {
	switch h {
	case "", "localhost", "127.0.0.1", "::1", "0.0.0.0", "::":
		return true
	}
	return false
}

func AppendUnique(xs []int, x int) []int {
	for _, v := range xs {
		if v == x {
			return xs
		}
	}
	return append(xs, x)
}

func (t Target) String() string {
	return fmt.Sprintf("%s, role %s, %d connections/s", plural.N(t.Sockets, "socket"), t.Role, t.ConnRate)
}
