package codecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// otherRateSpelling is a message rate written other than "msg/s".
var otherRateSpelling = regexp.MustCompile(`\b(msgs|messages|msg)/(s|sec)\b`)

// TestMessageRateIsMsgPerS: a message rate is written "msg/s" in every
// text hostprep prints (summaries, progress lines, chart axes, flag
// help): ready's probe-mqtt summary said "msgs/s" while the progress
// line said "msg/s". Identifiers such as the msgs_per_s metric are not
// text and are left as they are.
func TestMessageRateIsMsgPerS(t *testing.T) {
	root := testenv.RepoRoot()
	for _, path := range testenv.GoSources(t) {
		fs := token.NewFileSet()
		f, err := parser.ParseFile(fs, path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, path)
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				for _, m := range otherRateSpelling.FindAllString(lit.Value, -1) {
					if m != "msg/s" {
						t.Errorf("%s:%d: %q: write a message rate msg/s", rel, fs.Position(lit.Pos()).Line, m)
					}
				}
			}
			return true
		})
	}
}
