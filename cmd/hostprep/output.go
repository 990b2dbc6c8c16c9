package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/spf13/cobra"
)

// run executes hostprep with args (without the program name), writing
// results to stdout and the one-line error to stderr, and returns the exit
// code (internal/exitcode). With --output json (or -o json, before or after
// the subcommand) a failure that printed nothing on stdout — a flag error,
// an unknown subcommand, bad input found before the command ran — still
// prints one JSON object there: {"error": "...", "exit_code": N}, so a
// caller that parses stdout always gets JSON; with --output junit, a
// JUnit document with one failed test case, hostprep.run, holding the
// error.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	format := outputFromArgs(args)
	wantJSON := format == "json"
	cw := &countingWriter{w: stdout}
	root.SetOut(stdout)
	if wantJSON || format == "junit" {
		root.SetOut(cw)
		root.SetVersionTemplate(`{"version": {{printf "%q" .Version}}}` + "\n")
	}
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "hostprep: "+err.Error())
	if wantJSON && cw.n == 0 {
		je := jsonError{Error: err.Error(), ExitCode: exitcode.Code(err)}
		if c, _, ferr := root.Find(args); ferr == nil && changesHost(c) {
			je.Changed = new(bool)
		}
		_ = writeJSON(stdout, je)
	}
	if format == "junit" && cw.n == 0 {
		// A CI gate reading `-o junit > result.xml` sees the failure, not
		// an empty file.
		_ = verdict.WriteJUnit(stdout, "hostprep", []verdict.Check{{ID: "hostprep.run", Status: verdict.Fail,
			Summary: err.Error(), Expected: fmt.Sprintf("a run (exit %d)", exitcode.Code(err))}})
	}
	return exitcode.Code(err)
}

// jsonError is what stdout carries under --output json when a command
// failed without printing its result.
// Commands that can change the host (tune, ready) also say "changed":
// false, which Ansible's changed_when reads.
type jsonError struct {
	Changed  *bool  `json:"changed,omitempty"`
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// changesHost reports whether c is, or is under, a command that can change
// the host: tune or ready.
func changesHost(c *cobra.Command) bool {
	for ; c != nil; c = c.Parent() {
		if n := c.Name(); (n == "tune" || n == "ready") && c.Parent() != nil && !c.Parent().HasParent() {
			return true
		}
	}
	return false
}

// outputFromArgs returns the value of the last --output / -o in args
// (before a "--"), in every spelling pflag accepts ("-o json", "-ojson",
// "-o=json", "--output json", "--output=json"), or "" when there is none.
// It reads the raw arguments because a flag error stops pflag before it
// reaches the flag.
func outputFromArgs(args []string) string {
	val := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return val
		case a == "-o" || a == "--output":
			if i+1 < len(args) {
				val = args[i+1]
				i++
			}
		case strings.HasPrefix(a, "--output="):
			val = strings.TrimPrefix(a, "--output=")
		case strings.HasPrefix(a, "-o") && !strings.HasPrefix(a, "--"):
			val = strings.TrimPrefix(strings.TrimPrefix(a, "-o"), "=")
		}
	}
	return val
}

// addOutputFlag gives the root command a persistent --output/-o, so
// "hostprep -o json nosuch" and "hostprep -o json tune" parse: every
// runnable command declares its own --output (with its own formats), which
// takes precedence over this one, and cobra reads flags placed before the
// subcommand with the subcommand's flag set.
func addOutputFlag(root *cobra.Command) {
	root.PersistentFlags().StringP("output", "o", "text", "output format of the command (text or json; some commands offer more)")
}
