package mqtt

import (
	"time"

	"github.com/hostprep/hostprep/internal/rate"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/profiles"
	"github.com/spf13/pflag"
)

// command is `hostprep probe mqtt` (loadprobe.Command): its flags are
// bound to cfg and the thresholds, and Resolve layers them over the
// profile.
type command struct {
	cfg                        Config
	startAt                    string
	maxLoss, maxConnectFail    float64
	connectP95, ackP95, e2eP99 time.Duration
}

func newCommand() *command { return &command{cfg: Defaults()} }

func (c *command) Help() loadprobe.Help {
	return loadprobe.Help{
		Short: "Open-loop MQTT mini-load: N clients connect and publish on a fixed schedule; every message is counted at the subscribers",
		Long: `Connects --clients at --conn-rate (client i at i/rate), each publishing a
--size byte message every --pub-interval, for --duration after the connect
ramp, and counts every message again at --subscribers. Latencies are measured
from the scheduled time (no coordinated omission) and reported as p50, p90,
p95, p99, p99.9 and max in ms. Without --broker an embedded broker runs on a
loopback port in this process (it measures this host and the probe itself).

The password comes from --password-file or $` + PasswordEnv + ` and is
never printed. Exit codes: 0 pass, 1 a threshold failed, 2 bad input,
3 could not run (broker unreachable, RLIMIT_NOFILE too low, interrupted).`,
		PasswordEnv:  PasswordEnv,
		PasswordFile: "file holding the MQTT password (else $" + PasswordEnv + "); never printed; MQTT 3.1.1 needs --username with it",
		Shard:        "run shard `K/N` of a fleet run: this host takes the fleet's clients g with g mod N = K-1 on the fleet's schedule (--clients and --conn-rate are the fleet's); needs --start-at",
		CSV:          "write the per-second series to this CSV file",
		HTML:         "also write a self-contained HTML report (connections, msg/s, latency over time, a latency heat map, delivery accounting, checks) to `FILE`; a run that fails before measuring writes none",
	}
}

// Flags declares every setting of Config with a `flag` tag (Settings)
// and the thresholds.
func (c *command) Flags(fl *pflag.FlagSet) {
	cfg, th := &c.cfg, DefaultThresholds()
	fl.StringVar(&cfg.Broker, "broker", "", "broker URL: "+BrokerSchemesHelp+", e.g. tcp://HOST:1883; empty starts the embedded broker on 127.0.0.1")
	fl.StringVar(&cfg.CAFile, "ca", "", "PEM CA bundle for mqtts:// (ssl://, tls://)")
	fl.StringVar(&cfg.CertFile, "cert", "", "PEM client certificate for mqtts://")
	fl.StringVar(&cfg.KeyFile, "key", "", "PEM client key for mqtts://")
	fl.StringVar(&cfg.Username, "username", "", "MQTT username")
	fl.StringVar(&cfg.MQTTVersion, "mqtt-version", cfg.MQTTVersion, "MQTT protocol version: 3.1.1 or 5")
	fl.StringVar(&cfg.Topic, "topic", cfg.Topic, "topic pattern; {client} is the client number, {run} the run id")
	fl.StringVar(&cfg.ClientID, "client-id", cfg.ClientID, "client id pattern; must contain {client}")
	fl.StringVar(&cfg.SourceIPs, "source-ips", "", "spread connections over source addresses: 127.0.0.2-127.0.0.9, a,b,c or an interface name")
	fl.IntVar(&cfg.Clients, "clients", cfg.Clients, "number of publishing clients")
	fl.Var((*rate.PerSecond)(&cfg.ConnRate), "conn-rate", "connections per second: 1000, 1000/s or 60000/m (client i connects at i/rate)")
	fl.DurationVar(&cfg.Keepalive, "keepalive", cfg.Keepalive, "MQTT keepalive")
	fl.IntVar(&cfg.QoS, "qos", cfg.QoS, "QoS 0, 1 or 2 for publishes and the subscription")
	fl.IntVar(&cfg.Size, "size", cfg.Size, "payload bytes (>= 24)")
	fl.DurationVar(&cfg.PubInterval, "pub-interval", cfg.PubInterval, "each client publishes once per interval")
	fl.DurationVar(&cfg.Duration, "duration", cfg.Duration, "steady-state measurement window after the connect ramp")
	fl.IntVar(&cfg.Subscribers, "subscribers", cfg.Subscribers, "subscribers receiving everything, 1 to 64 (more than 1 uses a $share/ subscription)")
	fl.DurationVar(&cfg.ConnectTimeout, "connect-timeout", cfg.ConnectTimeout, "bound on dial + CONNECT -> CONNACK (> 0)")
	fl.DurationVar(&cfg.Grace, "grace", cfg.Grace, "bound on waiting for outstanding acks and deliveries after the window (> 0)")
	fl.DurationVar(&cfg.RetryInterval, "retry-interval", 0, "MQTT 3.1.1 only: re-send an unacknowledged PUBLISH with DUP after this long (0 = never; negative is refused)")
	fl.Float64Var(&c.maxLoss, "max-loss", 0, "highest acceptable fraction of lost messages (0..1)")
	fl.Float64Var(&c.maxConnectFail, "max-connect-fail-rate", 0, "highest acceptable fraction of failed connects (0..1)")
	fl.DurationVar(&c.connectP95, "connect-p95", th.ConnectP95, "highest acceptable connect p95 (scheduled -> CONNACK); 0 = not judged")
	fl.DurationVar(&c.ackP95, "ack-p95", th.AckP95, "highest acceptable publish -> PUBACK/PUBCOMP p95; 0 = not judged")
	fl.DurationVar(&c.e2eP99, "e2e-p99", th.E2EP99, "highest acceptable end-to-end p99; 0 = not judged")
	fl.StringVar(&c.startAt, "start-at", "", "start the schedule at `TIME`: RFC 3339, TIME+30s (an offset from a time the control node hands out) or +30s from now; refused when past or when the clock's error exceeds --max-clock-error")
	fl.DurationVar(&cfg.MaxClockError, "max-clock-error", cfg.MaxClockError, "with --start-at: highest acceptable clock error by adjtimex (maxerror); 0 = not checked (every shard on this host: one clock)")
	fl.StringVar(&cfg.RunID, "run-id", "", "run id shared by a fleet's shards (topics, client ids, report merge); default: random, or with --shard derived from --start-at")
}

// Resolve is Resolve over the profile's probe.mqtt (p nil: none) and the
// flags changed names, with --start-at parsed now.
func (c *command) Resolve(p *profiles.Profile, changed func(string) bool, shard fleet.Shard, password string) (loadprobe.Run, error) {
	cfg := c.cfg
	cfg.Shard = shard
	var err error
	if cfg.StartAt, err = fleet.ParseStart(c.startAt, time.Now()); err != nil {
		return nil, err
	}
	maxLoss, maxConnectFail := c.maxLoss, c.maxConnectFail
	cfg.Thresholds.Loss, cfg.Thresholds.ConnectFailRate = &maxLoss, &maxConnectFail
	cfg.Thresholds.ConnectP95, cfg.Thresholds.AckP95, cfg.Thresholds.E2EP99 = c.connectP95, c.ackP95, c.e2eP99
	var sec *profiles.MQTTProbe
	if p != nil {
		sec = p.Probe.MQTT
	}
	cfg = Resolve(sec, cfg, changed)
	cfg.Password = password
	return &Job{Config: cfg}, nil
}
