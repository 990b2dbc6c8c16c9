package main

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/hostprep/hostprep/internal/rate"
	"github.com/hostprep/hostprep/loadprobe/fleet"
	"github.com/hostprep/hostprep/loadprobe/mqtt"
	"github.com/hostprep/hostprep/profiles"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func init() {
	probeSubcommands = append(probeSubcommands, newProbeMQTTCmd)
}

// newProbeMQTTCmd builds the "probe mqtt" command. It is long on purpose: flag definitions
// only, with the help text and the RunE that hands the flags to loadprobe/mqtt; the
// logic lives in that package, and splitting the flags out would scatter
// one command's surface over several functions.
func newProbeMQTTCmd() *cobra.Command {
	var (
		cfg                        = mqtt.Defaults()
		pf                         probeFlags
		startAt                    string
		maxLoss, maxConnectFail    float64
		connectP95, ackP95, e2eP99 time.Duration
		th                         = mqtt.DefaultThresholds()
	)
	c := &cobra.Command{
		Use:   "mqtt",
		Short: "Open-loop MQTT mini-load: N clients connect and publish on a fixed schedule; every message is counted at the subscribers",
		Long: `Connects --clients at --conn-rate (client i at i/rate), each publishing a
--size byte message every --pub-interval, for --duration after the connect
ramp, and counts every message again at --subscribers. Latencies are measured
from the scheduled time (no coordinated omission) and reported as p50, p90,
p95, p99, p99.9 and max in ms. Without --broker an embedded broker runs on a
loopback port in this process (it measures this host and the probe itself).

The password comes from --password-file or $` + mqtt.PasswordEnv + ` and is
never printed. Exit codes: 0 pass, 1 a threshold failed, 2 bad input,
3 could not run (broker unreachable, RLIMIT_NOFILE too low, interrupted).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runProbe(cmd, &pf, probeSpec[profiles.MQTTProbe]{
				name:        "mqtt",
				section:     func(p *profiles.Profile) *profiles.MQTTProbe { return p.Probe.MQTT },
				check:       mqtt.CheckProfile,
				passwordEnv: mqtt.PasswordEnv,
				settle: func(sec *profiles.MQTTProbe, sh fleet.Shard, pw string) error {
					var err error
					cfg.Shard = sh
					if cfg.StartAt, err = fleet.ParseStart(startAt, time.Now()); err != nil {
						return err
					}
					cfg.Thresholds.Loss, cfg.Thresholds.ConnectFailRate = &maxLoss, &maxConnectFail
					cfg.Thresholds.ConnectP95, cfg.Thresholds.AckP95, cfg.Thresholds.E2EP99 = connectP95, ackP95, e2eP99
					cfg = mqtt.Resolve(sec, cfg, cmd.Flags().Changed)
					cfg.Password = pw
					return nil
				},
				run: func(ctx, _ context.Context, stderr io.Writer) (probeOutcome, error) {
					cfg.Progress = stderr
					cfg.ProgressTTY = term.IsTerminal(int(os.Stderr.Fd()))
					res, err := mqtt.Run(ctx, cfg)
					if res == nil {
						return probeOutcome{}, err
					}
					return probeOutcome{res, &res.StoppedEarlyReason, res.Verdict, res.Checks}, err
				},
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&pf.profile, "profile", "", "take the load and thresholds from this profile's probe.mqtt section (built-in name or file); flags given explicitly win")
	fl.StringVar(&cfg.Broker, "broker", "", "broker URL: "+mqtt.BrokerSchemesHelp+", e.g. tcp://HOST:1883; empty starts the embedded broker on 127.0.0.1")
	fl.StringVar(&cfg.CAFile, "ca", "", "PEM CA bundle for mqtts:// (ssl://, tls://)")
	fl.StringVar(&cfg.CertFile, "cert", "", "PEM client certificate for mqtts://")
	fl.StringVar(&cfg.KeyFile, "key", "", "PEM client key for mqtts://")
	fl.StringVar(&cfg.Username, "username", "", "MQTT username")
	fl.StringVar(&pf.passwordFile, "password-file", "", "file holding the MQTT password (else $"+mqtt.PasswordEnv+"); never printed; MQTT 3.1.1 needs --username with it")
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
	fl.Float64Var(&maxLoss, "max-loss", 0, "highest acceptable fraction of lost messages (0..1)")
	fl.Float64Var(&maxConnectFail, "max-connect-fail-rate", 0, "highest acceptable fraction of failed connects (0..1)")
	fl.DurationVar(&connectP95, "connect-p95", th.ConnectP95, "highest acceptable connect p95 (scheduled -> CONNACK); 0 = not judged")
	fl.DurationVar(&ackP95, "ack-p95", th.AckP95, "highest acceptable publish -> PUBACK/PUBCOMP p95; 0 = not judged")
	fl.DurationVar(&e2eP99, "e2e-p99", th.E2EP99, "highest acceptable end-to-end p99; 0 = not judged")
	fl.StringVar(&pf.shard, "shard", "", "run shard `K/N` of a fleet run: this host takes the fleet's clients g with g mod N = K-1 on the fleet's schedule (--clients and --conn-rate are the fleet's); needs --start-at")
	fl.StringVar(&startAt, "start-at", "", "start the schedule at `TIME`: RFC 3339, TIME+30s (an offset from a time the control node hands out) or +30s from now; refused when past or when the clock's error exceeds --max-clock-error")
	fl.DurationVar(&cfg.MaxClockError, "max-clock-error", cfg.MaxClockError, "with --start-at: highest acceptable clock error by adjtimex (maxerror); 0 = not checked (every shard on this host: one clock)")
	fl.StringVar(&cfg.RunID, "run-id", "", "run id shared by a fleet's shards (topics, client ids, report merge); default: random, or with --shard derived from --start-at")
	fl.StringVarP(&pf.outs.Format, "output", "o", "text", "result format: text or json")
	fl.StringVar(&pf.outs.CSV, "csv", "", "write the per-second series to this CSV file")
	fl.StringVar(&pf.outs.HTML, "html", "", "also write a self-contained HTML report (connections, msg/s, latency over time, a latency heat map, delivery accounting, checks) to `FILE`; a run that fails before measuring writes none")
	return c
}
