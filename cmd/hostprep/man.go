package main

import (
	"os"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func init() { addCommand(newGenManCmd) }

// newGenManCmd writes the man pages of every command (section 1, from the
// commands' own help) into an existing directory. Hidden: the packages
// (scripts/mkpkg, ./install.sh --package) run it; users read the pages.
func newGenManCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "gen-man DIR",
		Short:  "write the man pages of every command into DIR (for packaging)",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if st, err := os.Stat(args[0]); err != nil || !st.IsDir() {
				return exitcode.BadInputf("gen-man: %s is not a directory; create it first", args[0])
			}
			hdr := &doc.GenManHeader{Title: "HOSTPREP", Section: "1", Source: "hostprep " + version, Manual: "hostprep manual"}
			return doc.GenManTree(c.Root(), hdr, args[0])
		},
	}
}
