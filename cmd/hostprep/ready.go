package main

import (
	"encoding/json"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hostprep/hostprep/internal/atomicfile"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/loadprobe/probes"
	"github.com/hostprep/hostprep/ready"
	"github.com/hostprep/hostprep/ready/outcome"
	"github.com/hostprep/hostprep/report"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// init registers the ready command. It is long on purpose: help text and
// flag definitions only, with a RunE that checks the flags and hands them
// to ready.Run; writing the result is writeReadyFiles.
func init() {
	addCommand(func() *cobra.Command {
		var o ready.Options
		var output, jsonFile, junitFile, promFile, htmlFile string
		// Each probe's --NAME, --NAME-user and --NAME-password-file.
		targets := map[string]*loadprobe.Target{}
		pwFiles := map[string]*string{}
		c := &cobra.Command{
			Use:   "ready --profile NAME|FILE",
			Short: "Tune, preflight and probe in one run, with one verdict: READY, READY WITH WARNINGS, NOT READY",
			Long: `Apply the profile (as 'tune apply'), run the preflight for the profile's
target, run the probes the profile names — against --mqtt / --iotdb, or the
MQTT probe against the embedded broker when no broker is given — and give
one verdict: READY, READY WITH WARNINGS, or NOT READY naming the failing
steps; the steps follow in the order they ran. If tuning fails, nothing
after it runs. Nothing is ever rolled back by ready: undo tuning with
'hostprep tune rollback'.

--dry-run only plans the tuning and runs what touches nothing: the passive
preflight and the MQTT probe against the in-process embedded broker on
loopback; probes against external targets are skipped. A dry run never says
READY: its verdict is DRY RUN (exit 0) when nothing that ran failed, NOT
READY (exit 1) when something that ran failed; skipped steps are listed.

Results go to stdout (--output text|json; the JSON carries "changed" for
Ansible's changed_when), logs to stderr. --json, --junit, --prom and --html also
write the result to files (JUnit: every check and probe threshold is a test
case; prom: a node_exporter textfile); their folders must exist: a missing
one is refused (exit 2) before anything runs.

Exit codes: 0 READY (also READY WITH WARNINGS, DRY RUN), 1 NOT READY, 2 bad input,
3 a step could not run (not root, lock held, target unreachable).`,
			Example: `  hostprep ready --profile ready-small
  hostprep ready --profile loadgen --mqtt tcp://broker.example:1883 --output json
  hostprep ready --profile iotdb --iotdb 10.0.0.5:6667 --junit ready.xml --prom /var/lib/prometheus/node-exporter/hostprep.prom
  hostprep ready --profile mqtt-broker-1m --dry-run`,
			Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				if err := checkOutput(output, "text", "json"); err != nil {
					return err
				}
				// 0 means "not given" to ready.Run: a --sockets 0 typed
				// out must not silently become the profile's target.
				if cmd.Flags().Changed("sockets") && o.Sockets <= 0 {
					return exitcode.BadInputf("--sockets %d: want a positive number of sockets, e.g. --sockets 100000 (or leave it out for the profile's)", o.Sockets)
				}
				// Result files are checked before anything runs (tune
				// included): a missing folder is exit 2, never created.
				if err := atomicfile.CheckAll(atomicfile.Out{Flag: "--json", Path: jsonFile}, atomicfile.Out{Flag: "--junit", Path: junitFile},
					atomicfile.Out{Flag: "--prom", Path: promFile}, atomicfile.Out{Flag: "--html", Path: htmlFile}); err != nil {
					return err
				}
				var err error
				o.Probes = map[string]loadprobe.Target{}
				for _, pr := range probes.All {
					n, t := pr.Name(), targets[pr.Name()]
					if t.Password, err = secret(*pwFiles[n], "--"+n+"-password-file", pr.ReadyFlags().PasswordEnv); err != nil {
						return err
					}
					o.Probes[n] = *t
				}
				o.Progress = os.Stderr
				o.ProgressTTY = term.IsTerminal(int(os.Stderr.Fd()))
				// Ctrl-C / SIGTERM end a probe with what it measured so far
				// and skip the steps after it (exit 3); tune is never
				// interrupted halfway.
				ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
				defer stop()
				res, runErr := ready.Run(ctx, o)
				if res == nil {
					return runErr
				}
				if err := writeReadyFiles(res, jsonFile, junitFile, promFile, htmlFile); err != nil {
					return err
				}
				out := cmd.OutOrStdout()
				if output == "json" {
					err = readyJSON(out, res)
				} else {
					err = outcome.WriteText(out, res)
				}
				if err != nil {
					return err
				}
				return runErr
			},
		}
		f := c.Flags()
		f.StringVarP(&o.Profile, "profile", "p", "", "profile: a built-in `name` (hostprep profiles list) or a YAML file (required)")
		f.StringArrayVar(&o.Sets, "set", nil, "override one profile `key=value` (repeatable), e.g. --set limits.nofile.soft=65536")
		for _, pr := range probes.All {
			n, w := pr.Name(), pr.ReadyFlags()
			t, pw := &loadprobe.Target{}, new(string)
			targets[n], pwFiles[n] = t, pw
			f.StringVar(&t.Addr, n, "", w.Addr)
			f.StringVar(&t.User, n+"-user", "", w.User)
			f.StringVar(pw, n+"-password-file", "", w.PasswordFile)
		}
		f.IntVar(&o.Sockets, "sockets", 0, "preflight target: `N` concurrent sockets, overriding the profile's")
		f.BoolVar(&o.NoTune, "no-tune", false, "do not apply the profile: only preflight and probe")
		f.BoolVar(&o.DryRun, "dry-run", false, "plan the tuning only; run only what touches nothing (passive preflight, embedded-broker MQTT probe)")
		f.StringVarP(&output, "output", "o", "text", "stdout format: text or json")
		f.StringVar(&jsonFile, "json", "", "also write the JSON result to `file`")
		f.StringVar(&junitFile, "junit", "", "also write JUnit XML to `file` (one test case per check and probe threshold)")
		f.StringVar(&htmlFile, "html", "", "also write a self-contained HTML report (every step and check, the probes' charts) to `file`")
		f.StringVar(&promFile, "prom", "", "also write a node_exporter textfile to `file` (e.g. /var/lib/prometheus/node-exporter/hostprep.prom)")
		return c
	})
}

// secret reads a password from a file (trailing newline removed) or, when
// no file is given, from an environment variable. It never logs it.
func secret(file, flag, env string) (string, error) {
	if file == "" {
		return os.Getenv(env), nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return "", exitcode.BadInputf("%s %s: %v", flag, file, err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// readyJSON writes res as indented JSON to w.
func readyJSON(w io.Writer, res *ready.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// writeReadyFiles writes res to the --json, --junit, --prom and --html
// files that are set ("" skips one), each atomically. A write that fails
// is an environment error (exit 3) naming the file.
func writeReadyFiles(res *ready.Result, jsonFile, junitFile, promFile, htmlFile string) error {
	for _, f := range []struct {
		path string
		fn   func(io.Writer) error
	}{
		{jsonFile, func(w io.Writer) error { return readyJSON(w, res) }},
		{junitFile, func(w io.Writer) error { return outcome.WriteJUnit(w, res) }},
		{promFile, func(w io.Writer) error { return outcome.WriteProm(w, res) }},
		{htmlFile, func(w io.Writer) error { return report.WriteHostHTML(w, res) }},
	} {
		if f.path == "" {
			continue
		}
		if err := atomicfile.Write(f.path, f.fn); err != nil {
			return exitcode.Environmentf("writing %s: %v", f.path, err)
		}
	}
	return nil
}
