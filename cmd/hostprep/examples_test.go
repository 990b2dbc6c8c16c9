package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"gopkg.in/yaml.v3"
)

var (
	// exampleInvocation is a hostprep command line in examples/ (up to the
	// end of the line, a backquote or a shell operator).
	exampleInvocation = regexp.MustCompile("hostprep (ready|report merge|tune apply|tune verify)\\b([^\n`|;&)]*)")
	exampleFlag       = regexp.MustCompile(`(?:^|\s)(--[a-z][a-z0-9-]*)`)
)

// yamlScalars returns every string scalar of a YAML document, so a command
// folded over several lines (run: >-) is seen whole and comments are not.
func yamlScalars(n *yaml.Node) []string {
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	var out []string
	for _, c := range n.Content {
		out = append(out, yamlScalars(c)...)
	}
	return out
}

// TestExampleFlagsExist checks every flag the files under examples/ pass
// to `hostprep ready`, `hostprep report merge`, `hostprep tune apply` and
// `hostprep tune verify` against the commands'
// flags, so the examples cannot drift from the CLI.
func TestExampleFlagsExist(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(), "examples")
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	files = append(files, filepath.Join(dir, "README.md"))
	seen := 0
	for _, f := range files {
		if strings.HasSuffix(f, ".go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts := []string{string(b)}
		if strings.HasSuffix(f, ".yml") || strings.HasSuffix(f, ".yaml") {
			var doc yaml.Node
			if err := yaml.Unmarshal(b, &doc); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			texts = yamlScalars(&doc)
		}
		for _, m := range exampleInvocation.FindAllStringSubmatch(strings.Join(texts, "\n"), -1) {
			seen++
			c, _, err := newRootCmd().Find(strings.Fields(m[1]))
			if err != nil {
				t.Fatalf("hostprep %s: %v", m[1], err)
			}
			for _, fl := range exampleFlag.FindAllStringSubmatch(m[2], -1) {
				if c.Flags().Lookup(strings.TrimPrefix(fl[1], "--")) == nil && c.InheritedFlags().Lookup(strings.TrimPrefix(fl[1], "--")) == nil {
					t.Errorf("%s: `hostprep %s` uses %s, which hostprep %s does not have", f, m[1], fl[1], m[1])
				}
			}
		}
	}
	if seen < 5 {
		t.Errorf("found only %d hostprep invocations in the examples", seen)
	}
}
