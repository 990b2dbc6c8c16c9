package main

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestPreflightRefusesIgnoredFlags: a flag preflight would silently not
// use is bad input (exit 2, one line naming it and the rule): --conn-rate
// 0 (the accept checks cannot size a queue for no connections; leaving the
// flag out gives the default), and a role-only flag for another role,
// also when the role comes from a profile.
func TestPreflightRefusesIgnoredFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--sockets", "100", "--conn-rate", "0"}, []string{`--conn-rate: "0"`, "> 0"}},
		{[]string{"--sockets", "100", "--conn-rate", "0/m"}, []string{"--conn-rate", "> 0"}},
		{[]string{"--sockets", "100", "--pool-size", "16"}, []string{"--pool-size", "--role iotdb", "broker"}},
		{[]string{"--sockets", "100", "--role", "loadgen", "--batch-points", "1000"}, []string{"--batch-points", "--role iotdb", "loadgen"}},
		{[]string{"--sockets", "100", "--role", "broker", "--iotdb-home", "/opt/iotdb"}, []string{"--iotdb-home", "--role iotdb"}},
		{[]string{"--sockets", "100", "--role", "iotdb", "--dest", "127.0.0.1:1883"}, []string{"--dest", "--role loadgen", "iotdb"}},
		{[]string{"--profile", "ready-small", "--loadgens", "2"}, []string{"--loadgens", "--role iotdb", "broker"}},
	} {
		out, stderr, code := testenv.Run(t, nil, append([]string{"preflight"}, c.args...)...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("preflight %v: exit %d, stdout %q, stderr %q; want exit 2 and one line", c.args, code, out, stderr)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("preflight %v: %q lacks %q", c.args, stderr, w)
			}
		}
	}
}
