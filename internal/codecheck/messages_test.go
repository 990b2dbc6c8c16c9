package codecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// countVerb finds a count printed straight into a message: an integer verb
// (%d, or %.0f for a count held in a float) followed by a word; "(s)" is
// looked for on its own. "QoS %d publishes" is a QoS level, not a count.
var countVerb = regexp.MustCompile(`%(?:\.0f|d) +([A-Za-z]+)([^A-Za-z]|$)`)

// pluralSuffix is a noun with its plural ending in brackets, "item(s)",
// "apply(ies)"; " (s)" after a space is the unit seconds, not a plural.
var pluralSuffix = regexp.MustCompile(`[A-Za-z]\((?:s|es|ies)\)`)

// notCounted are words after a count that do not change with it: units
// and verbs whose plural is the same.
var notCounted = map[string]bool{"ms": true, "s": true, "TPS": true, "KiB": true, "MiB": true, "GiB": true,
	// "series" is its own plural.
	"series": true,
	// Verbs after a value, not nouns counted by it: "backlog %d is below
	// somaxconn", "%d needs", "%d allows"; their subject is the value.
	"is": true, "has": true, "does": true, "needs": true, "allows": true, "lets": true, "leaves": true,
	"holds": true, "covers": true, "follows": true, "connects": true,
	// "%d minus %d" is arithmetic.
	"minus": true,
}

// listedCount finds a formatted list of counts, or a count made into a
// string, written before a plural noun by hand ("at %s workers", or
// " workers" after a join): with the one count 1 it reads "1 workers".
// plural.List writes such lists. ("clients=%d" is a key, not a noun.)
var listedCount = regexp.MustCompile(`(%[sv] +|^" +)(workers|steps|sockets|connections|clients|sessions|hosts|ports|operations|calls)([^=A-Za-z_]|$)`)

// keptAsIs are the findings left on purpose, by file, each with its reason.
var keptAsIs = map[string]string{
	// The header of every file tune writes: hosts tuned before carry
	// these exact bytes, and a new wording would make tune plan/verify
	// report every hostprep file as changed.
	"tune/files/render.go": "e(s)",
}

// TestCountMessagesUsePlural reads every message template of every
// non-test Go file in the module and fails on one that writes a count
// next to a plural noun itself ("%d steps skipped", "%d value(s)"): with
// a count of 1 it reads wrong. A rate ("%.0f msgs/s") is exempt. Word
// after the count that is not a plural (ends in no "s") is fine:
// "%d failed", "%d of %s".
func TestCountMessagesUsePlural(t *testing.T) {
	root := testenv.RepoRoot()
	for _, path := range testenv.GoSources(t) {
		rel, _ := filepath.Rel(root, path)
		for _, bad := range countTemplates(t, path) {
			if kept := keptAsIs[filepath.ToSlash(rel)]; kept != "" && strings.HasSuffix(bad.text, kept) {
				continue
			}
			t.Errorf("%s: count message %s: write the count with plural.N so 1 reads right", bad.pos, bad.text)
		}
	}
}

type finding struct{ pos, text string }

func countTemplates(t *testing.T, file string) []finding {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []finding
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		pos := fs.Position(lit.Pos()).String()
		for _, ix := range countVerb.FindAllStringSubmatchIndex(lit.Value, -1) {
			v := lit.Value
			word, next := v[ix[2]:ix[3]], v[ix[4]:ix[5]]
			if strings.HasSuffix(v[:ix[0]], "QoS ") || notCounted[word] || !strings.HasSuffix(word, "s") || next == "/" {
				continue
			}
			out = append(out, finding{pos, strings.TrimSpace(v[ix[0]:ix[1]])})
		}
		if m := pluralSuffix.FindString(lit.Value); m != "" {
			out = append(out, finding{pos, m})
		}
		if m := listedCount.FindString(lit.Value); m != "" {
			out = append(out, finding{pos, strings.TrimSpace(m)})
		}
		return true
	})
	return out
}

// The scanner itself finds what it is there to find.
func TestCountTemplatesFinds(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x.go")
	src := "package x\nvar a = []string{\"%d steps skipped\", \"%d value(s)\", \"%d apply(ies)\", \"time (s)\", \"%.0f changes\", \"%d failed\", \"%.0f msgs/s\", \"%d ms\", \"%d of %s\", \"QoS %d publishes\", \"at %s workers\", \" workers (near full)\", \"workers: %s\"}\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := countTemplates(t, f)
	if len(got) != 6 {
		t.Errorf("found %v, want the six bad templates (steps, (s), (ies), changes, %%s workers, \" workers\")", got)
	}
}
