package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/spf13/cobra"
)

var (
	// referenceLine is the last paragraph of every command's help.
	referenceLine = regexp.MustCompile(`(?m)^Reference: (docs/.*)$`)
	docsPage      = regexp.MustCompile(`docs/[a-z0-9-]+\.md`)
)

// Every command's --help, the help command's too, ends by naming the
// page of docs/ that holds its reference, and every page it names
// exists.
func TestHelpNamesItsReferencePage(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		n++
		args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "hostprep")), "--help")
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 {
			t.Fatalf("hostprep %v: exit %d %s", args, code, errOut.String())
		}
		m := referenceLine.FindAllStringSubmatch(out.String(), -1)
		if len(m) == 0 {
			t.Errorf("hostprep %s: no \"Reference: docs/PAGE.md\" in its help:\n%s", strings.Join(args, " "), out.String())
		}
		for _, line := range m {
			for _, p := range docsPage.FindAllString(line[1], -1) {
				if _, err := os.Stat(filepath.Join(testenv.RepoRoot(), p)); err != nil {
					t.Errorf("hostprep %s names %s: %v", strings.Join(args, " "), p, err)
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if n < 15 {
		t.Errorf("walked %d commands, want every one of hostprep's", n)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"help", "tune"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Reference: docs/tune.md") {
		t.Errorf("hostprep help tune: exit %d, want the reference page:\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"help", "help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Reference: docs/cli.md") {
		t.Errorf("hostprep help help: exit %d, want the reference page:\n%s", code, out.String())
	}
}
