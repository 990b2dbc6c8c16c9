package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// subcommands are registered by each command file's init with
// addCommand, so every command lives in a file of its own.
var subcommands []func() *cobra.Command

func addCommand(f func() *cobra.Command) { subcommands = append(subcommands, f) }

// rootFlags are the flags every command shares.
type rootFlags struct {
	logFormat string
	logLevel  string
}

var globals rootFlags

// version is set at build time by install.sh (-X main.version=...).
var version = "dev"

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "hostprep",
		Short: "Get a Linux host ready for very large loads, and prove it",
		Long: `hostprep tunes a Linux host for very many connections (tune), checks
whether it can carry a target number of sockets (preflight), proves it with a
short calibrated load (probe mqtt, probe iotdb), or does all three (ready).

Exit codes: 0 success, 1 a check/verify/threshold failed, 2 bad input
(nothing touched), 3 the environment refused (not root, read-only /proc/sys,
lock held, kernel EINVAL, target unreachable).`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return setupLogging(globals.logFormat, globals.logLevel)
		},
	}
	root.PersistentFlags().StringVar(&globals.logFormat, "log-format", "text", "log format on stderr: text or json")
	root.PersistentFlags().StringVar(&globals.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	addOutputFlag(root)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitcode.BadInputf("%v (see '%s --help')", flagValueError(err), c.CommandPath())
	})
	for _, f := range subcommands {
		root.AddCommand(f())
	}
	root.SetHelpCommand(newHelpCmd())
	usageErrorsAreBadInput(root)
	addReferences(root)
	return root
}

// usageErrorsAreBadInput makes every usage mistake exit 2: a wrong number
// of arguments, and an unknown subcommand of a command group (which cobra
// would otherwise answer with help and exit 0, or a plain error and exit 1).
func usageErrorsAreBadInput(c *cobra.Command) {
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				// Text: the group's help, exit 0, as cobra does for a
				// command that is not runnable. A machine format (-o
				// json) asked for a result, and help is none: an error
				// (exit 2), which run prints as JSON.
				if o := c.Flag("output"); o != nil && o.Value.String() != "text" {
					return exitcode.BadInputf("%s needs a subcommand: %s (see '%s --help')", strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" "), strings.Join(subcommandNames(c), ", "), c.CommandPath())
				}
				return c.Help()
			}
			hint := ""
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				hint = fmt.Sprintf("; did you mean %q?", s[0])
			}
			return exitcode.BadInputf("unknown command %q for %q%s (see '%s --help')", args[0], c.CommandPath(), hint, c.CommandPath())
		}
	} else if c.Args != nil {
		check := c.Args
		c.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				msg := err.Error()
				if !strings.Contains(msg, c.CommandPath()) { // cobra.NoArgs names it already
					msg = strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ") + ": " + msg
				}
				return exitcode.BadInputf("%s (see '%s --help')", msg, c.CommandPath())
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageErrorsAreBadInput(sub)
	}
}

// subcommandNames are the names of c's available subcommands.
func subcommandNames(c *cobra.Command) []string {
	var out []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			out = append(out, sub.Name())
		}
	}
	return out
}

// newHelpCmd is `hostprep help [command]`: cobra's, except that a topic
// that names no command is a usage error (exit 2; under -o json a JSON
// error object) instead of the root's help and exit 0.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "help prints the help of any command, as `hostprep COMMAND --help` does (text, whatever --output says).\n\nReference: docs/cli.md.",
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 {
				topic := strings.Join(args, " ")
				fix := "run `hostprep help` for the commands"
				if cmd != nil && len(rest) > 0 {
					if s := cmd.SuggestionsFor(rest[0]); len(s) > 0 {
						fix = fmt.Sprintf("did you mean `%s help %s`?", c.Root().Name(), strings.TrimSpace(strings.TrimPrefix(cmd.CommandPath(), c.Root().Name())+" "+s[0]))
					}
				}
				return exitcode.BadInputf("help %s: unknown help topic %q; %s", topic, topic, fix)
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// setupLogging sends structured logs to stderr; results go to stdout.
func setupLogging(format, level string) error {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return exitcode.BadInputf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, opts)))
	case "json":
		slog.SetDefault(slog.New(slog.NewJSONHandler(os.Stderr, opts)))
	default:
		return exitcode.BadInputf("--log-format %q: want text or json", format)
	}
	return nil
}

// checkOutput validates an --output value against the formats a command offers.
func checkOutput(flag string, allowed ...string) error {
	for _, a := range allowed {
		if flag == a {
			return nil
		}
	}
	return exitcode.BadInputf("--output %q: want one of %v", flag, allowed)
}

// flagValueWants says, by pflag value type, what a flag takes; for the
// types not listed (hostprep's own, such as rates) the value's own error
// says it.
var flagValueWants = map[string]string{
	"int":         "a whole number",
	"int64":       "a whole number",
	"uint":        "a whole number >= 0",
	"uint64":      "a whole number >= 0",
	"float64":     "a number such as 0.01",
	"bool":        "true or false",
	"duration":    "a duration such as 500ms, 30s or 2m",
	"intSlice":    "whole numbers separated by commas, such as 10,20,30",
	"stringSlice": "values separated by commas",
}

// flagValueError rewrites pflag's error for a value its type cannot parse
// (`invalid argument "abc" for "--sockets" flag: strconv.ParseInt: parsing
// "abc": invalid syntax`) as `--sockets "abc": want a whole number`, and
// a value of hostprep's own types as `--conn-rate: ` and its
// error; other errors are returned as they are.
func flagValueError(err error) error {
	var ive *pflag.InvalidValueError
	if !errors.As(err, &ive) {
		return err
	}
	want, ok := flagValueWants[ive.GetFlag().Value.Type()]
	if !ok {
		return fmt.Errorf("--%s: %w", ive.GetFlag().Name, ive.Unwrap())
	}
	return fmt.Errorf("--%s %q: want %s", ive.GetFlag().Name, ive.GetValue(), want)
}
