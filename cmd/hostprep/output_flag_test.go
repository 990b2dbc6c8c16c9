package main

import (
	"encoding/json"
	"encoding/xml"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/spf13/cobra"
)

// --output/-o is read before or after the subcommand: both places give the
// same result.
func TestOutputFlagBeforeOrAfterSubcommand(t *testing.T) {
	after, _, code := testenv.Run(t, nil, "profiles", "list", "-o", "json")
	if code != 0 {
		t.Fatalf("profiles list -o json: exit %d", code)
	}
	for _, args := range [][]string{
		{"-o", "json", "profiles", "list"},
		{"--output", "json", "profiles", "list"},
		{"--output=json", "profiles", "list"},
		{"-ojson", "profiles", "list"},
	} {
		out, errOut, code := testenv.Run(t, nil, args...)
		if code != 0 || out != after {
			t.Errorf("hostprep %v: exit %d, stdout differs from 'profiles list -o json'\nstdout %s\nstderr %s", args, code, out, errOut)
		}
	}
}

// Under -o json a failure that printed nothing (a flag error, an unknown
// command, bad input) still prints one JSON object with "error" and
// "exit_code" on stdout, and exits 2; commands that can change the host
// also say "changed": false.
func TestJSONErrorObject(t *testing.T) {
	for _, tc := range []struct {
		args        []string
		wantChanged bool
	}{
		{[]string{"-o", "json", "nosuch"}, false},
		{[]string{"-o", "json", "preflight", "--no-such-flag"}, false},
		{[]string{"profiles", "list", "-o", "json", "--no-such-flag"}, false},
		{[]string{"-o", "json", "--log-level", "loud", "profiles", "list"}, false},
		{[]string{"--output=json", "profiles", "show"}, false},
		{[]string{"tune", "apply", "--output", "json", "--no-such-flag"}, true},
		{[]string{"-o", "json", "ready", "--sockets", "many"}, true},
	} {
		stdout, stderr, code := testenv.Run(t, nil, tc.args...)
		var obj map[string]any
		if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
			t.Errorf("hostprep %v: stdout is not one JSON object (%v): %q", tc.args, err, stdout)
			continue
		}
		if code != 2 || obj["exit_code"] != float64(2) {
			t.Errorf("hostprep %v: exit %d, exit_code %v; want 2 and 2", tc.args, code, obj["exit_code"])
		}
		msg, _ := obj["error"].(string)
		if msg == "" || strings.TrimSpace(stderr) != "hostprep: "+msg {
			t.Errorf("hostprep %v: JSON error %q does not match the stderr line %q", tc.args, msg, stderr)
		}
		if changed, has := obj["changed"]; has != tc.wantChanged || (has && changed != false) {
			t.Errorf("hostprep %v: changed %v (present %v), want present=%v and false", tc.args, changed, has, tc.wantChanged)
		}
	}
	// Without -o json the failure prints nothing on stdout.
	if stdout, _, code := testenv.Run(t, nil, "preflight", "--no-such-flag"); code != 2 || stdout != "" {
		t.Errorf("text mode flag error: exit %d, stdout %q", code, stdout)
	}
}

func TestOutputFromArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"profiles", "list"}, ""},
		{[]string{"-o", "json", "profiles", "list"}, "json"},
		{[]string{"profiles", "list", "-ojson"}, "json"},
		{[]string{"profiles", "list", "-o=json"}, "json"},
		{[]string{"--output=json", "profiles"}, "json"},
		{[]string{"-o", "json", "profiles", "list", "--output", "text"}, "text"},
		{[]string{"profiles", "list", "--", "-o", "json"}, ""},
		{[]string{"profiles", "list", "-o"}, ""},
	} {
		if got := outputFromArgs(tc.args); got != tc.want {
			t.Errorf("outputFromArgs(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// Every runnable command (but the hidden preflight child, which always
// prints JSON) declares its own --output, so the root's
// persistent one (which only lets "hostprep -o json nosuch" parse) is never
// the one a command reads.
func TestEveryCommandHasItsOwnOutputFlag(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Runnable() && c.HasParent() && !c.HasSubCommands() && !c.Hidden && c.Name() != "help" && c.Name() != "completion" && c.Parent().Name() != "completion" {
			if c.LocalNonPersistentFlags().Lookup("output") == nil {
				t.Errorf("%s has no --output flag of its own", c.CommandPath())
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd())
}

// -o junit with bad input still prints a JUnit document, with the error
// as a failed test case, so `> result.xml` in a CI gate never leaves an
// empty file.
func TestJUnitErrorDocument(t *testing.T) {
	out, _, code := testenv.Run(t, nil, "preflight", "--sockets", "abc", "-o", "junit")
	var doc struct {
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testsuite>testcase"`
	}
	if code != 2 || xml.Unmarshal([]byte(out), &doc) != nil || len(doc.Cases) != 1 || doc.Cases[0].Failure == nil || !strings.Contains(doc.Cases[0].Failure.Message, "--sockets") {
		t.Errorf("exit %d, stdout %q; want exit 2 and a JUnit document with the error as a failed case", code, out)
	}
}
