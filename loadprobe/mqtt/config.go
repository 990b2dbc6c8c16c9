// Package mqtt is hostprep's MQTT mini-load: an open-loop (wrk2-style)
// probe that connects N clients on a schedule fixed in advance, has each
// publish on its own interval, counts every message again at one or more
// subscribers, and gives a verdict against thresholds.
//
// The client is hostprep's own lean connection core (writes issued by a
// central scheduler; the acks of all plain-TCP publishers read by one
// epoll poller goroutine, a reader goroutine only for subscribers and TLS
// connections) on top of the MQTT 3.1.1/5 packet codec of
// github.com/mochi-mqtt/server/v2/packets (PUBLISH is encoded by hostprep
// into a reused buffer, byte for byte as that codec does); see
// bench/README.md for why it is not paho and what a message costs. Without a broker URL it starts an embedded mochi-mqtt
// broker on a loopback port in the same process.
package mqtt

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/brokerurl"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/rate"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/profiles"
)

// PasswordEnv is the environment variable the command reads the broker
// password from when no --password-file is given.
const PasswordEnv = "HOSTPREP_MQTT_PASSWORD"

// Config is one probe run. Start from Defaults() or ConfigFromProfile
// and change fields: Validate (called by Run) refuses a zero where zero
// has no meaning (Clients, ConnRate, Subscribers, Keepalive,
// ConnectTimeout, Grace, ...) instead of silently defaulting it. Zero is
// meaningful, and documented, for Broker (embedded), RetryInterval
// (never), Workers, Procs, NoFileLimit, SourceIPs and the latency
// thresholds (not judged).
type Config struct {
	// Broker is a URL: tcp://HOST:PORT or mqtt:// for plain MQTT (port
	// 1883 when omitted), mqtts://, ssl:// or tls:// for MQTT over TLS
	// (port 8883); schemes are the BrokerSchemes. Nothing else: user
	// information, a path, a query or a fragment is refused
	// (brokerurl.Parse). Empty starts the embedded broker on 127.0.0.1.
	Broker string `json:"broker,omitempty" flag:"broker"`
	// CAFile, CertFile, KeyFile are PEM files for mqtts://.
	CAFile   string `json:"ca,omitempty" flag:"ca"`
	CertFile string `json:"cert,omitempty" flag:"cert"`
	KeyFile  string `json:"key,omitempty" flag:"key"`
	// Username and Password go in CONNECT; Password is never printed,
	// logged or serialised. MQTT 3.1.1 allows no Password without a
	// Username (Validate refuses it); MQTT 5 does.
	Username string `json:"username,omitempty" flag:"username"`
	Password string `json:"-"`
	// MQTTVersion is "3.1.1" or "5".
	MQTTVersion string `json:"mqtt_version" flag:"mqtt-version"`
	// Topic and ClientID are patterns: {client} is the client number
	// (0-based), {run} the run id.
	Topic    string `json:"topic" flag:"topic"`
	ClientID string `json:"client_id" flag:"client-id"`
	// SourceIPs spreads connections over local addresses (round robin by
	// client number): "127.0.0.2-127.0.0.9", "10.0.0.1,10.0.0.2" or an
	// interface name. Empty lets the kernel choose.
	SourceIPs string `json:"source_ips,omitempty" flag:"source-ips"`

	Clients     int           `json:"clients" flag:"clients"`
	ConnRate    float64       `json:"conn_rate" flag:"conn-rate"` // connections/s
	Keepalive   time.Duration `json:"keepalive_ns" flag:"keepalive"`
	QoS         int           `json:"qos" flag:"qos"`
	Size        int           `json:"size" flag:"size"` // payload bytes, >= MinSize
	PubInterval time.Duration `json:"pub_interval_ns" flag:"pub-interval"`
	// Duration is the steady-state measurement window after the connect
	// ramp (Clients/ConnRate seconds).
	Duration time.Duration `json:"duration_ns" flag:"duration"`
	// Subscribers receive everything (1 to 64); more than one uses a
	// shared subscription ($share/hostprep-{run}/...).
	Subscribers int `json:"subscribers" flag:"subscribers"`

	// ConnectTimeout bounds dial + TLS + CONNECT->CONNACK; > 0 (Defaults:
	// 10 s).
	ConnectTimeout time.Duration `json:"connect_timeout_ns" flag:"connect-timeout"`
	// Grace bounds the drain after the last scheduled publish, waiting
	// for outstanding PUBACK/PUBCOMP and deliveries; > 0 (Defaults: 5 s).
	Grace time.Duration `json:"grace_ns" flag:"grace"`
	// RetryInterval re-sends an unacknowledged QoS>0 PUBLISH with DUP set
	// after this long (MQTT 3.1.1 only: MQTT 5 forbids re-sending on a
	// live connection; 0 = never, the default; negative is refused).
	RetryInterval time.Duration `json:"retry_interval_ns,omitempty" flag:"retry-interval"`
	// Workers, when > 0, is a pool of goroutines issuing the scheduled
	// writes; 0 (the default) writes from the scheduler goroutine itself,
	// which costs the fewest wake-ups per message. A write only blocks
	// when the broker stops reading, and then the schedule's overrun
	// counter shows it.
	Workers int `json:"workers"`

	Thresholds profiles.MQTTThresholds `json:"thresholds" flag:"thresholds"`

	// SettingNames is how the caller names settings in the errors of a
	// run and of Validate, by flag tag ("broker", "username",
	// "password-file", "ca"...): `hostprep ready` maps broker to --mqtt. A
	// setting not in it is named as `hostprep probe mqtt` does, "--" + tag.
	SettingNames map[string]string `json:"-"`

	// Shard, when set (K/N), makes this run shard K of a fleet run of N
	// load generators: Clients and ConnRate stay the fleet's figures and
	// this host runs the clients g with g mod N = K-1 on the fleet's
	// schedule (client g connects at g/ConnRate), so it connects at
	// ConnRate/N and the N shards together are exactly one Clients run.
	// Needs StartAt. Client ids use g; topics put the shard in {run}
	// ("RUN-sK") so each shard's subscribers get only its own messages.
	Shard fleet.Shard `json:"shard,omitzero" flag:"shard"`
	// StartAt, when set, is the wall-clock instant the schedule starts
	// (client 0 of the fleet connects then); zero starts right after the
	// calibration. It must be at least fleet.MinLead ahead when Run
	// starts, and this host's clock within MaxClockError of true time
	// (adjtimex), else Run fails before any connection.
	StartAt time.Time `json:"start_at,omitzero" flag:"start-at"`
	// MaxClockError is the bound on this clock's maximum error (adjtimex
	// maxerror) for a StartAt run (Defaults: 50 ms); 0 = not checked
	// (all shards on one host share one clock).
	MaxClockError time.Duration `json:"max_clock_error_ns,omitempty" flag:"max-clock-error"`
	// RunID names the run in topics, client ids and the result; a fleet's
	// shards share it. Empty: random, or with Shard derived from StartAt
	// (every shard given the same start gets the same id). Letters,
	// digits, '-', '_' and '.', at most 64.
	RunID string `json:"run_id,omitempty" flag:"run-id"`

	// Procs is GOMAXPROCS during the run: 0 picks 1 when the broker is
	// external and the requested rate is at most 20,000 msg/s (the probe's
	// hot path is two goroutines, and more Ps only add wake-ups: measured
	// 21.6 vs 35.2 µs CPU per message at 10,000 msg/s, bench/README.md),
	// else leaves it; -1 never changes it. The previous value is restored.
	Procs int `json:"procs,omitempty"`

	// goroutinePerConn reads each publisher from its own goroutine instead
	// of the shared epoll poller (tests cover both paths).
	goroutinePerConn bool

	// NoFileLimit overrides RLIMIT_NOFILE (hard) for the pre-start fd
	// check; 0 reads it from the process. For tests.
	NoFileLimit uint64 `json:"-"`
	// Progress, when set, gets a progress line: an updating bar when
	// ProgressTTY, else a plain line every ProgressEvery (default 5 s).
	Progress      ProgressWriter `json:"-"`
	ProgressTTY   bool           `json:"-"`
	ProgressEvery time.Duration  `json:"-"`
}

// ProgressWriter receives progress output (usually os.Stderr).
type ProgressWriter interface{ Write(p []byte) (int, error) }

// MinSize is the smallest payload: publisher id, sequence number,
// scheduled time and run id (24 bytes).
const MinSize = 24

func f64(v float64) *float64 { return &v }

// DefaultThresholds are the reference thresholds: no loss, no
// failed connects, connect p95 500 ms, ack p95 100 ms, e2e p99 250 ms.
func DefaultThresholds() profiles.MQTTThresholds {
	return profiles.MQTTThresholds{
		Loss:            f64(0),
		ConnectP95:      500 * time.Millisecond,
		AckP95:          100 * time.Millisecond,
		E2EP99:          250 * time.Millisecond,
		ConnectFailRate: f64(0),
	}
}

// Defaults is a small run that fits any host: 100 clients at 100/s,
// QoS 1, 200 B every 1 s, 10 s, one subscriber, MQTT 3.1.1, embedded
// broker.
func Defaults() Config {
	return Config{
		MQTTVersion:    "3.1.1",
		Topic:          "hostprep/{run}/{client}",
		ClientID:       "hostprep-{run}-{client}",
		Clients:        100,
		ConnRate:       100,
		Keepalive:      300 * time.Second,
		QoS:            1,
		Size:           200,
		PubInterval:    time.Second,
		Duration:       10 * time.Second,
		Subscribers:    1,
		ConnectTimeout: 10 * time.Second,
		Grace:          5 * time.Second,
		Thresholds:     DefaultThresholds(),
		MaxClockError:  fleet.DefaultMaxClockError,
	}
}

// ConfigFromProfile turns a profile's probe.mqtt section into a Config:
// a key the section sets (profiles.MQTTProbe.Has) is taken as written,
// even 0 (qos: 0 is QoS 0; clients: 0 is then refused by Validate), and a
// key it leaves out keeps its Defaults value (QoS 1, 100 clients at 100
// connections/s...). nil p gives Defaults(). Fields the profile has no
// place for (TLS files, username, MQTT version, topic and client-id
// patterns, source IPs, subscribers) keep their defaults.
func ConfigFromProfile(p *profiles.MQTTProbe) Config {
	c := Defaults()
	if p == nil {
		return c
	}
	for _, f := range profileFields(&c, p) {
		if p.Has(f.key) {
			f.take()
		}
	}
	return c
}

// profileField is one probe.mqtt key: its YAML name, the CLI flag it
// layers under, and how to copy it from the profile into a Config.
type profileField struct {
	key, flag string
	take      func()
}

// profileFields lists every probe.mqtt key with the Config flag it sets.
func profileFields(c *Config, p *profiles.MQTTProbe) []profileField {
	t, th := &c.Thresholds, p.Thresholds
	return []profileField{
		{"broker", "broker", func() { c.Broker = p.Broker }},
		{"clients", "clients", func() { c.Clients = p.Clients }},
		{"conn_rate", "conn-rate", func() { c.ConnRate = float64(p.ConnRate) }},
		{"qos", "qos", func() { c.QoS = p.QoS }},
		{"size", "size", func() { c.Size = p.Size }},
		{"pub_interval", "pub-interval", func() { c.PubInterval = p.PubInterval }},
		{"keepalive", "keepalive", func() { c.Keepalive = p.Keepalive }},
		{"duration", "duration", func() { c.Duration = p.Duration }},
		{"thresholds.loss", "max-loss", func() { t.Loss = th.Loss }},
		{"thresholds.connect_fail_rate", "max-connect-fail-rate", func() { t.ConnectFailRate = th.ConnectFailRate }},
		{"thresholds.connect_p95", "connect-p95", func() { t.ConnectP95 = th.ConnectP95 }},
		{"thresholds.ack_p95", "ack-p95", func() { t.AckP95 = th.AckP95 }},
		{"thresholds.e2e_p99", "e2e-p99", func() { t.E2EP99 = th.E2EP99 }},
	}
}

// CheckProfile applies Validate's rules to profile p's probe.mqtt
// section as ConfigFromProfile reads it, so `hostprep profiles validate`
// and `hostprep ready` refuse what the probe would refuse, before
// anything runs. The error is exitcode.BadInput naming the key where the
// profile wrote it: "prof.yaml:7:14: probe.mqtt.size 5: want 24 to ...".
// nil when p has no probe.mqtt section or it is valid.
func CheckProfile(p *profiles.Profile) error {
	if p == nil || p.Probe.MQTT == nil {
		return nil
	}
	c := ConfigFromProfile(p.Probe.MQTT)
	err := c.Validate()
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, f := range profileFields(&c, p.Probe.MQTT) {
		if rest, ok := strings.CutPrefix(msg, "--"+f.flag+" "); ok {
			path := append([]string{"probe", "mqtt"}, strings.Split(f.key, ".")...)
			return exitcode.BadInputf("%sprobe.mqtt.%s %s", p.Where(path...), f.key, rest)
		}
	}
	return exitcode.BadInputf("%sprobe.mqtt: %s", p.Where("probe", "mqtt"), msg)
}

// name is how errors name setting (see SettingNames).
func (c *Config) name(setting string) string {
	if n, ok := c.SettingNames[setting]; ok {
		return n
	}
	return "--" + setting
}

// fill sets the output-only fields Validate does not judge.
func (c *Config) fill() {
	if c.ProgressEvery <= 0 {
		c.ProgressEvery = 5 * time.Second
	}
}

// BrokerSchemes lists the --broker URL schemes the probe accepts: the
// plain ones first, then TLS (brokerurl, the one list of them).
var BrokerSchemes = brokerurl.Schemes()

// BrokerSchemesHelp says which schemes mean what and their default
// ports, for errors and flag help: "tcp:// or mqtt:// (plain, port 1883
// by default), mqtts://, ssl:// or tls:// (TLS, port 8883)".
var BrokerSchemesHelp = brokerurl.Help

// brokerAddr is a parsed Broker URL.
type brokerAddr struct {
	hostport string
	tls      bool
}

// Validate checks c as Run would run it, before anything is started or
// touched (hostprep ready calls it before tuning). Every error is
// exitcode.BadInput, one line naming the flag, the value, the rule and
// the fix; the password is never part of it. Zero is refused where it has
// no meaning (see Config). SourceIPs naming an interface is looked up: a
// failure to read its addresses is exitcode.Environment.
func (c Config) Validate() error {
	if _, err := c.check(); err != nil {
		return err
	}
	_, err := parseSourceIPs(c.SourceIPs)
	return err
}

// check is Validate without the SourceIPs lookup; it returns the parsed
// broker address.
func (c *Config) check() (brokerAddr, error) {
	for _, check := range []func() error{c.checkLoad, c.checkClients, c.checkThresholds, c.checkFleet} {
		if err := check(); err != nil {
			return brokerAddr{}, err
		}
	}
	if c.Broker == "" {
		return brokerAddr{}, nil
	}
	return c.checkBroker()
}

// checkLoad checks the load's shape: clients, connection rate, QoS,
// payload size, interval, duration, keepalive, MQTT version, subscribers.
func (c *Config) checkLoad() error {
	bad := exitcode.BadInputf
	if c.Clients < 1 {
		return bad("--clients %d: want at least 1", c.Clients)
	}
	if !(c.ConnRate > 0) || math.IsInf(c.ConnRate, 0) {
		return bad("--conn-rate %g: want a positive rate in connections/s, e.g. 1000", c.ConnRate)
	}
	if c.QoS < 0 || c.QoS > 2 {
		return bad("--qos %d: want 0, 1 or 2", c.QoS)
	}
	if c.Size < MinSize || c.Size > 256<<20 {
		return bad("--size %d: want %d to 268435456 bytes (the payload carries a %d-byte header)", c.Size, MinSize, MinSize)
	}
	if c.PubInterval <= 0 {
		return bad("--pub-interval %v: want a positive duration, e.g. 1s", c.PubInterval)
	}
	if c.Duration <= 0 {
		return bad("--duration %v: want a positive duration, e.g. 30s", c.Duration)
	}
	if c.Keepalive < time.Second || c.Keepalive > 65535*time.Second {
		return bad("--keepalive %v: want 1s to 18h12m15s (MQTT keepalive is 16-bit seconds)", c.Keepalive)
	}
	if c.MQTTVersion != "3.1.1" && c.MQTTVersion != "5" {
		return bad("--mqtt-version %q: want 3.1.1 or 5", c.MQTTVersion)
	}
	if c.Subscribers < 1 || c.Subscribers > 64 {
		return bad("--subscribers %d: want 1 to 64 (1 is the default; more than 1 shares one subscription)", c.Subscribers)
	}
	return nil
}

// checkClients checks the clients' bounds and names: timeouts, grace,
// re-sends, a password without a user name (MQTT 3.1.1), workers,
// procs, client id and topic.
func (c *Config) checkClients() error {
	bad := exitcode.BadInputf
	if c.ConnectTimeout <= 0 {
		return bad("--connect-timeout %v: want a positive bound on dial + CONNECT -> CONNACK, e.g. 10s", c.ConnectTimeout)
	}
	if c.Grace <= 0 {
		return bad("--grace %v: want a positive bound on the wait for outstanding acks and deliveries, e.g. 5s", c.Grace)
	}
	if c.RetryInterval < 0 {
		return bad("--retry-interval %v: want 0 (never re-send) or a positive duration, e.g. 2s", c.RetryInterval)
	}
	if c.RetryInterval > 0 && c.MQTTVersion == "5" {
		return bad("--retry-interval %v with --mqtt-version 5: MQTT 5 forbids re-sending a PUBLISH on a live connection; drop --retry-interval or use --mqtt-version 3.1.1", c.RetryInterval)
	}
	if c.Password != "" && c.Username == "" && c.MQTTVersion == "3.1.1" {
		// MQTT 3.1.1 section 3.1.2.9: the Password Flag must be 0 when the
		// User Name Flag is; a broker closes such a CONNECT. MQTT 5 allows it.
		return bad("%s (or $%s) without %s: MQTT 3.1.1 forbids a password without a user name (the broker closes the connection); add %s, or use %s 5, which allows it",
			c.name("password-file"), PasswordEnv, c.name("username"), c.name("username"), c.name("mqtt-version"))
	}
	if c.Workers < 0 {
		return bad("workers %d: want 0 (write from the scheduler) or a positive pool size", c.Workers)
	}
	if c.Procs < -1 {
		return bad("procs %d: want -1 (leave GOMAXPROCS), 0 (auto) or a positive number", c.Procs)
	}
	if !strings.Contains(c.ClientID, "{client}") {
		return bad("--client-id %q: must contain {client} so every client id is unique", c.ClientID)
	}
	if strings.ContainsAny(c.Topic, "+#") || c.Topic == "" {
		return bad("--topic %q: want a topic name without wildcards, e.g. hostprep/{client}", c.Topic)
	}
	return nil
}

// checkThresholds checks the loss and fail-rate fractions (0..1) and the
// latency limits (>= 0).
func (c *Config) checkThresholds() error {
	bad := exitcode.BadInputf
	if c.Thresholds.Loss != nil && !(*c.Thresholds.Loss >= 0 && *c.Thresholds.Loss <= 1) {
		return bad("--max-loss %g: want a fraction 0..1, e.g. 0.001 for 0.1%%", *c.Thresholds.Loss)
	}
	if c.Thresholds.ConnectFailRate != nil && !(*c.Thresholds.ConnectFailRate >= 0 && *c.Thresholds.ConnectFailRate <= 1) {
		return bad("--max-connect-fail-rate %g: want a fraction 0..1, e.g. 0.01 for 1%%", *c.Thresholds.ConnectFailRate)
	}
	for _, th := range []struct {
		flag string
		v    time.Duration
	}{{"--connect-p95", c.Thresholds.ConnectP95}, {"--ack-p95", c.Thresholds.AckP95}, {"--e2e-p99", c.Thresholds.E2EP99}} {
		if th.v < 0 {
			return bad("%s %v: want a positive latency limit, e.g. 250ms, or 0 to not judge it", th.flag, th.v)
		}
	}
	return nil
}

// checkBroker parses --broker into the address to dial and whether it is
// TLS (brokerurl.Parse: SCHEME://HOST[:PORT] and nothing else; user
// information, a path, a query or a fragment, which every report and log
// naming the broker would print, is refused), and checks the TLS flags
// go with it. Errors never echo those parts (brokerurl.Shown).
func (c *Config) checkBroker() (brokerAddr, error) {
	var b brokerAddr
	bad := exitcode.BadInputf
	e, err := brokerurl.Parse(c.Broker, c.name("broker"), brokerurl.Login{User: c.name("username"), Password: c.name("password-file") + " or $" + PasswordEnv})
	if err != nil {
		return b, exitcode.New(exitcode.BadInput, err)
	}
	b.tls = e.TLS
	if (c.CAFile != "" || c.CertFile != "") && !b.tls {
		return b, bad("--ca/--cert given but %s %q is not TLS: use %s, or drop --ca/--cert", c.name("broker"), c.Broker, brokerurl.TLSHelp)
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return b, bad("--cert and --key go together (a client certificate needs its key)")
	}
	b.hostport = e.HostPort()
	return b, nil
}

// runIDPattern is what RunID may hold: it goes into topic names and
// client ids.
var runIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// checkFleet validates Shard, StartAt, MaxClockError and RunID.
func (c *Config) checkFleet() error {
	bad := exitcode.BadInputf
	if c.RunID != "" && !runIDPattern.MatchString(c.RunID) {
		return bad("--run-id %q: want 1 to 64 letters, digits, '-', '_' or '.' (it goes into topics and client ids)", c.RunID)
	}
	if c.MaxClockError < 0 {
		return bad("--max-clock-error %v: want a positive bound, e.g. 50ms, or 0 to not check the clock", c.MaxClockError)
	}
	if !c.Shard.On() {
		return nil
	}
	if c.StartAt.IsZero() {
		return bad("--shard %s without --start-at: the shards of a fleet must start their schedule together; hand every shard the same --start-at", c.Shard)
	}
	if c.Shard.N > c.Clients {
		return bad("--shard %s with --clients %d: every shard needs at least one client; use at most %s or more --clients", c.Shard, c.Clients, plural.N(c.Clients, "shard"))
	}
	if !strings.Contains(c.Topic, "{run}") {
		return bad("--topic %q with --shard: must contain {run}, which holds the shard, so each shard's subscribers receive only its own messages", c.Topic)
	}
	return nil
}

// tlsConfig builds the client TLS config from CAFile/CertFile/KeyFile.
func (c *Config) tlsConfig(host string) (*tls.Config, error) {
	tc := &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(1024)}
	if c.CAFile != "" {
		pem, err := os.ReadFile(c.CAFile)
		if err != nil {
			return nil, exitcode.BadInputf("--ca %s: %v", c.CAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, exitcode.BadInputf("--ca %s: no PEM certificate found", c.CAFile)
		}
		tc.RootCAs = pool
	}
	if c.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			return nil, exitcode.BadInputf("--cert %s / --key %s: %v", c.CertFile, c.KeyFile, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// parseSourceIPs turns "a-b", "a,b,c" or an interface name into addresses.
func parseSourceIPs(s string) ([]net.IP, error) {
	if s == "" {
		return nil, nil
	}
	if ifi, err := net.InterfaceByName(s); err == nil {
		addrs, err := ifi.Addrs()
		if err != nil {
			return nil, exitcode.Environmentf("--source-ips %s: reading the interface's addresses: %v", s, err)
		}
		var ips []net.IP
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
				ips = append(ips, n.IP)
			}
		}
		if len(ips) == 0 {
			return nil, exitcode.BadInputf("--source-ips %s: interface has no IPv4 address", s)
		}
		return ips, nil
	}
	var ips []net.IP
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if lo, hi, ok := strings.Cut(part, "-"); ok {
			a, b := net.ParseIP(lo).To4(), net.ParseIP(hi).To4()
			if a == nil || b == nil {
				return nil, exitcode.BadInputf("--source-ips %q: range %q needs two IPv4 addresses, e.g. 127.0.0.2-127.0.0.9", s, part)
			}
			x, y := ip4int(a), ip4int(b)
			if y < x || y-x > 65535 {
				return nil, exitcode.BadInputf("--source-ips %q: range %q is reversed or longer than 65536 addresses", s, part)
			}
			for v := x; v <= y; v++ {
				ips = append(ips, net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v)))
			}
			continue
		}
		ip := net.ParseIP(part)
		if ip == nil {
			return nil, exitcode.BadInputf("--source-ips %q: %q is neither an address, a range a-b nor an interface name", s, part)
		}
		ips = append(ips, ip)
	}
	return ips, nil
}

func ip4int(ip net.IP) uint32 {
	return uint32(ip[0])<<24 | uint32(ip[1])<<16 | uint32(ip[2])<<8 | uint32(ip[3])
}

// expand fills a {client}/{run} pattern.
func expand(pattern, run string, client int) string {
	s := strings.ReplaceAll(pattern, "{run}", run)
	return strings.ReplaceAll(s, "{client}", strconv.Itoa(client))
}

// filterFor turns a topic pattern into the subscription filter that
// matches every client's topic: each level holding {client} becomes +.
func filterFor(pattern, run string) string {
	levels := strings.Split(strings.ReplaceAll(pattern, "{run}", run), "/")
	for i, l := range levels {
		if strings.Contains(l, "{client}") {
			levels[i] = "+"
		}
	}
	return strings.Join(levels, "/")
}

func (c *Config) String() string {
	b := c.Broker
	if b == "" {
		b = "embedded"
	}
	return fmt.Sprintf("broker=%s clients=%d conn_rate=%s qos=%d size=%dB pub_interval=%v duration=%v subscribers=%d mqtt=%s",
		b, c.Clients, rate.PerSecond(c.ConnRate).Text(), c.QoS, c.Size, c.PubInterval, c.Duration, c.Subscribers, c.MQTTVersion)
}
