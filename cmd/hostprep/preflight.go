package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/rate"
	"github.com/hostprep/hostprep/preflight"
	"github.com/hostprep/hostprep/profiles"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func init() {
	addCommand(newPreflightCmd)
}

// newPreflightCmd builds the "preflight" command. It is long on purpose: flag definitions
// only, with the help text and the RunE that hands the flags to preflight; the
// logic lives in that package, and splitting the flags out would scatter
// one command's surface over several functions.
func newPreflightCmd() *cobra.Command {
	var (
		t          preflight.Target
		connRate   rate.Positive
		role       string
		profile    string
		sets       []string
		opts       preflight.Options
		output     string
		strict     bool
		activeTime time.Duration
	)
	c := &cobra.Command{
		Use:   "preflight",
		Short: "Check whether this host can carry N sockets, and say why not",
		Long: `preflight checks file descriptor limits of the process that will hold the
sockets (a running one's /proc/PID/limits, or what systemd will give a unit,
LimitNOFILE=infinity resolved to the manager's own hard limit; never
hostprep's), the target's listeners over sock_diag (listen() backlog and
accept queue against --conn-rate), ephemeral ports, port collisions, kernel
memory (tcp_mem in pages), the accept path, conntrack, orphans and
TIME_WAIT, and for --role iotdb vm.max_map_count and, with --iotdb-home, the
release's configuration. It prints one verdict with observed / expected /
remedy for every check. --record DIR copies what it read; --root DIR
replays it. --active measures instead of estimating: a child
opens real loopback sockets under the target's limits. It counts both ends
of each loopback connection as sockets (both are fds of the measuring
process), so --active --sockets 15000 opens 7500 connections = 15000
sockets; at least ` + fmt.Sprint(preflight.MinMeasuredSockets) + ` sockets are needed to measure the kernel
memory per socket (fewer keep the estimate).

Exit codes: 0 pass (warnings allowed), 1 a check failed (--strict: or
warned), 2 bad input, 3 could not run.

Checks (IDs for --ignore):
` + checkList(),
		Example: `  hostprep preflight --sockets 1000000 --role broker --service mosquitto
  hostprep preflight --sockets 5000 --role broker --port 1883 --conn-rate 2000
  hostprep preflight --sockets 10000 --role iotdb --port 6667 --iotdb-home /opt/iotdb --pool-size 200
  hostprep preflight --sockets 5000 --port 1883 --record host-a && hostprep preflight --sockets 5000 --port 1883 --root host-a
  hostprep preflight --sockets 100000 --role loadgen --dest 192.0.2.10:1883 --conn-rate 2000
  hostprep preflight --profile mqtt-broker-1m --output junit > preflight.xml
  hostprep preflight --sockets 15000 --role broker --active`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output, preflight.Formats...); err != nil {
				return err
			}
			n, err := connRate.Whole() // whole connections/s, never rounded
			if err != nil {
				return exitcode.BadInputf("--conn-rate: %v", err)
			}
			t.ConnRate = n // rate.Positive refuses 0 as it refuses text
			if profile != "" {
				// --sockets, --role and --conn-rate override the
				// profile's preflight section, after --set; the profile
				// still gives its service and ports.
				p, err := profiles.LoadWith(profile, sets, preflightOverrides(cmd))
				if err != nil {
					return err
				}
				fl := cmd.Flags()
				pt, err := preflight.TargetFromProfile(p)
				if err != nil {
					return err
				}
				if fl.Changed("sockets") {
					pt.Sockets = t.Sockets
				}
				if fl.Changed("role") {
					pt.Role = preflight.Role(role)
				}
				if fl.Changed("conn-rate") {
					pt.ConnRate = t.ConnRate
				}
				if fl.Changed("dest") {
					pt.Destinations = t.Destinations
				}
				pt.SourceIPs = t.SourceIPs
				pt.Ports = t.Ports
				// The embedded broker is hostprep itself only as the
				// broker; --port names another listener to judge.
				if fl.Changed("port") || pt.Role != preflight.Broker {
					pt.InProcess = false
				}
				if fl.Changed("pool-size") {
					pt.IoTDB.PoolSize = t.IoTDB.PoolSize
				}
				pt.IoTDB.LoadGenerators, pt.IoTDB.BatchPoints = t.IoTDB.LoadGenerators, t.IoTDB.BatchPoints
				t = pt
			} else {
				if len(sets) > 0 {
					return exitcode.BadInputf("--set needs --profile")
				}
				t.Role = preflight.Role(role)
				if role == "" {
					t.Role = preflight.Broker
				}
				if !cmd.Flags().Changed("sockets") {
					return exitcode.BadInputf("--sockets is required: give the number of concurrent TCP sockets the host must carry (e.g. --sockets 100000), or --profile NAME whose preflight section names it")
				}
			}
			fl := cmd.Flags()
			if err := roleOnlyFlags(cmd, t.Role); err != nil {
				return err
			}
			if fl.Changed("pid") && opts.PID == 0 {
				return exitcode.BadInputf("--pid 0: want the PID (> 0) of the running process that will hold the sockets, e.g. --pid $(pidof mosquitto)")
			}
			if fl.Changed("active-timeout") && activeTime == 0 {
				return exitcode.BadInputf("--active-timeout 0s: want a positive time bound, e.g. --active-timeout 60s")
			}
			if opts.Active && opts.Root != "" {
				return exitcode.BadInputf("--active with --root %s: --active measures this machine, --root replays a recorded one; drop one of them", opts.Root)
			}
			if fl.Changed("active-timeout") && !opts.Active {
				return exitcode.BadInputf("--active-timeout %s needs --active", activeTime)
			}
			opts.Target = t
			opts.ActiveOptions.Timeout = activeTime
			if opts.ActiveOptions.Sockets != 0 && !opts.Active {
				return exitcode.BadInputf("--active-sockets %d needs --active", opts.ActiveOptions.Sockets)
			}
			if opts.PID != 0 && opts.Service != "" {
				return exitcode.BadInputf("--pid and --service both given: pass one (the process or the unit that will hold the sockets)")
			}
			r, err := preflight.Run(cmd.Context(), opts)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			color := out == os.Stdout && term.IsTerminal(int(os.Stdout.Fd()))
			if err := preflight.Write(out, output, r, color); err != nil {
				return exitcode.Environmentf("writing the report: %v", err)
			}
			return r.Err(strict)
		},
	}
	f := c.Flags()
	f.IntVar(&t.Sockets, "sockets", 0, "concurrent TCP sockets the host must carry")
	f.StringVar(&role, "role", "", "broker (accepts connections), loadgen (opens them) or iotdb; default broker, or the profile's")
	f.Var(&connRate, "conn-rate", "new connections per second: 2000, 2000/s or 120000/m (default 2000)")
	f.StringArrayVar(&t.Destinations, "dest", nil, "loadgen destination ip:port (repeatable); default one destination")
	f.StringSliceVar(&t.SourceIPs, "source-ips", nil, "loadgen source addresses it binds to (comma-separated); default: one per destination, the route's preferred source (plain connect())")
	f.IntVar(&opts.PID, "pid", 0, "PID of the process that will hold the sockets (reads /proc/PID/limits)")
	f.StringVar(&opts.Service, "service", "", "systemd unit that will hold the sockets (reads its LimitNOFILE)")
	f.StringVar(&profile, "profile", "", "profile (built-in name or file) whose preflight section is the target")
	f.StringArrayVar(&sets, "set", nil, "override a profile value, key=value (repeatable; needs --profile)")
	f.BoolVar(&opts.Active, "active", false, "measure: a child with the target's fd limits opens real loopback connections, counting both ends as sockets (--sockets 15000 opens 7500 connections)")
	f.IntVar(&opts.ActiveOptions.Sockets, "active-sockets", 0, fmt.Sprintf("sockets --active opens, both ends counted: K/2 loopback connections (default min(--sockets, target soft nofile - 64); >= %d to measure kernel memory per socket)", preflight.MinMeasuredSockets))
	f.DurationVar(&activeTime, "active-timeout", 60*time.Second, "time bound of the --active measurement")
	f.StringVarP(&output, "output", "o", "text", "output format: text, json, junit or prom (node_exporter textfile)")
	f.BoolVar(&strict, "strict", false, "exit 1 on warnings too")
	f.StringSliceVar(&opts.Ignore, "ignore", nil, "check IDs whose failures become warnings (comma-separated)")
	f.IntSliceVar(&t.Ports, "port", nil, "TCP port the target listens on (repeatable); default the role's usual ports (broker 1883,8883; iotdb 6667)")
	f.StringVar(&opts.IoTDBHome, "iotdb-home", "", "role iotdb: the unpacked IoTDB release (conf/iotdb-system.properties, conf/datanode-env.sh) whose configuration is checked")
	f.IntVar(&t.IoTDB.PoolSize, "pool-size", 0, "role iotdb: SessionPool size of one load generator (default the profile's probe.iotdb.pool_size)")
	f.IntVar(&t.IoTDB.LoadGenerators, "loadgens", 0, "role iotdb: load generators each running such a pool (default 1)")
	f.IntVar(&t.IoTDB.BatchPoints, "batch-points", 0, "role iotdb: points in the largest insertTablet batch, checked against the Thrift frame size")
	f.StringVar(&opts.Root, "root", "", "replay a host recorded with --record DIR: read /proc, /sys, /etc and the recorded answers under DIR")
	f.StringVar(&opts.Record, "record", "", "copy exactly the files and command outputs preflight reads into this new directory, to replay with --root (e.g. for a bug report)")
	c.AddCommand(newActiveChildCmd())
	return c
}

// preflightOverrides are the flags given that set a field of the
// profile's preflight section.
func preflightOverrides(cmd *cobra.Command) []profiles.Override {
	var out []profiles.Override
	for _, f := range [][2]string{{"sockets", "preflight.sockets"}, {"role", "preflight.role"}, {"conn-rate", "preflight.conn_rate"}} {
		if fl := cmd.Flag(f[0]); fl != nil && fl.Changed {
			out = append(out, profiles.Override{Flag: "--" + f[0] + " " + fl.Value.String(), Key: f[1], Value: fl.Value.String()})
		}
	}
	return out
}

// checkList renders the registered checks, one "ID  what it compares" line each.
func checkList() string {
	var b strings.Builder
	for _, d := range preflight.Checks() {
		fmt.Fprintf(&b, "  %-19s %s\n", d.ID, d.Doc)
	}
	return b.String()
}

// newActiveChildCmd is the hidden child `hostprep preflight __active-child`
// that --active re-executes; it prints its result as JSON on stdout.
func newActiveChildCmd() *cobra.Command {
	var (
		o      preflight.ChildOptions
		nofile string
	)
	c := &cobra.Command{
		Use:    preflight.ActiveChildArg,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nofile != "" {
				var err error
				if o.NofileSoft, o.NofileHard, err = preflight.ParseNofile(nofile); err != nil {
					return exitcode.BadInputf("%v", err)
				}
			}
			r, err := preflight.RunActiveChild(cmd.Context(), o)
			if err != nil {
				return exitcode.Environmentf("%v", err)
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(r)
		},
	}
	c.Flags().IntVar(&o.Sockets, "sockets", 0, "sockets to open")
	c.Flags().StringVar(&nofile, "nofile", "", "RLIMIT_NOFILE soft:hard to run with")
	c.Flags().DurationVar(&o.Timeout, "timeout", 60*time.Second, "time bound")
	return c
}

// roleFlags names the preflight flags that apply to one role only.
var roleFlags = map[string]preflight.Role{
	"iotdb-home": preflight.IoTDB, "pool-size": preflight.IoTDB, "loadgens": preflight.IoTDB, "batch-points": preflight.IoTDB,
	"dest": preflight.Loadgen,
}

// roleOnlyFlags refuses a role-only flag given for another role (it would
// be silently ignored) as exitcode.BadInput naming the role it applies to.
func roleOnlyFlags(cmd *cobra.Command, role preflight.Role) error {
	fl := cmd.Flags()
	for _, name := range []string{"iotdb-home", "pool-size", "loadgens", "batch-points", "dest"} {
		if want := roleFlags[name]; fl.Changed(name) && role != want {
			return exitcode.BadInputf("--%s applies to --role %s only, and the role here is %s; drop it, or pass --role %s", name, want, role, want)
		}
	}
	return nil
}
