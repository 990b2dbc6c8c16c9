package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// --root's help says what each tune command does under DIR: only apply
// and rollback write there.
func TestTuneRootHelpPerCommand(t *testing.T) {
	for _, c := range []*cobra.Command{tunePlanCmd(), tuneApplyCmd(), tuneRollbackCmd(), tuneStatusCmd(), tuneVerifyCmd()} {
		u := c.Flags().Lookup("root").Usage
		writes := c.Name() == "apply" || c.Name() == "rollback"
		if u == "" || strings.Contains(u, "writes nothing") == writes || (!writes && strings.Contains(u, "write only")) {
			t.Errorf("tune %s --root: %q", c.Name(), u)
		}
	}
}
