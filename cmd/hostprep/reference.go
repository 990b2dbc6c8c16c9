package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// referencePages names the page under docs/ that holds each command's
// reference, by command path without the "hostprep " prefix; a
// subcommand not listed has its nearest listed parent's page.
var referencePages = map[string]string{
	"":            "docs/cli.md",
	"help":        "docs/cli.md",
	"profiles":    "docs/profiles.md",
	"tune":        "docs/tune.md",
	"tune verify": "docs/tune.md, docs/boot.md (--boot)",
	"tune status": "docs/tune.md, docs/boot.md",
	"preflight":   "docs/preflight.md",
	"probe":       "docs/probe-mqtt.md, docs/probe-iotdb.md",
	"probe mqtt":  "docs/probe-mqtt.md, docs/fleet.md (--shard)",
	"probe iotdb": "docs/probe-iotdb.md",
	"ready":       "docs/ready.md",
	"report":      "docs/reports.md, docs/fleet.md",
}

// referencePage returns the page of the command at path ("tune apply").
func referencePage(path string) string {
	for {
		if p, ok := referencePages[path]; ok {
			return p
		}
		i := strings.LastIndexByte(path, ' ')
		if i < 0 {
			return referencePages[""]
		}
		path = path[:i]
	}
}

// addReferences ends the help of c and of every command under it with
// "Reference: PAGE", the page of docs/ that says the rest.
func addReferences(c *cobra.Command) {
	if !c.Hidden && !strings.Contains(c.Long, "Reference: docs/") {
		path := strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), c.Root().Name()))
		long := c.Long
		if long == "" {
			long = c.Short + "."
		}
		c.Long = strings.TrimRight(long, "\n") + "\n\nReference: " + referencePage(path) + "."
	}
	for _, sub := range c.Commands() {
		addReferences(sub)
	}
}
