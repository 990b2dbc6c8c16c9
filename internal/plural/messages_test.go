package plural

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// countVerb finds a count printed straight into a message: an integer verb
// (%d, or %.0f for a count held in a float) followed by a word; "(s)" is
// looked for on its own.
var countVerb = regexp.MustCompile(`%(?:\.0f|d) +([A-Za-z]+)([^A-Za-z]|$)`)

// notCounted are words after a count that do not change with it: units
// and verbs whose plural is the same.
var notCounted = map[string]bool{"ms": true, "s": true, "TPS": true, "KiB": true, "MiB": true, "GiB": true}

// TestCountMessagesUsePlural reads every message template of the packages
// that print counts through N (cmd/hostprep but the probe and preflight
// commands, ready and ready/outcome, internal/verdict) and fails on one
// that writes a count next to a plural noun itself ("%d steps skipped",
// "%d value(s)"): with a count of 1 it reads wrong. A rate ("%.0f msgs/s")
// is exempt. Word after the count that is not a plural (ends in no "s")
// is fine: "%d failed", "%d of %s".
func TestCountMessagesUsePlural(t *testing.T) {
	root := filepath.Join("..", "..")
	skip := map[string]bool{"probe_mqtt.go": true, "probe_iotdb.go": true, "preflight.go": true}
	checked := 0
	for _, dir := range []string{"cmd/hostprep", "ready", "ready/outcome", "internal/verdict"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") || (dir == "cmd/hostprep" && skip[filepath.Base(f)]) {
				continue
			}
			checked++
			for _, bad := range countTemplates(t, f) {
				t.Errorf("%s: count message %s: write the count with plural.N so 1 reads right", bad.pos, bad.text)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d files read: the package list is stale", checked)
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
		for _, m := range countVerb.FindAllStringSubmatch(lit.Value, -1) {
			word, next := m[1], m[2]
			if notCounted[word] || !strings.HasSuffix(word, "s") || next == "/" {
				continue
			}
			out = append(out, finding{pos, strings.TrimSpace(m[0])})
		}
		if strings.Contains(lit.Value, "(s)") {
			out = append(out, finding{pos, "(s)"})
		}
		return true
	})
	return out
}

// The scanner itself finds what it is there to find.
func TestCountTemplatesFinds(t *testing.T) {
	f := filepath.Join(t.TempDir(), "x.go")
	src := "package x\nvar a = []string{\"%d steps skipped\", \"%d value(s)\", \"%.0f changes\", \"%d failed\", \"%.0f msgs/s\", \"%d ms\", \"%d of %s\"}\n"
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	got := countTemplates(t, f)
	if len(got) != 3 {
		t.Errorf("found %v, want the three bad templates (steps, (s), changes)", got)
	}
}
