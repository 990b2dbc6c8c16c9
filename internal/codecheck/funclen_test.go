package codecheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// maxFuncLines is the longest a function may be (lines from func to the
// closing brace) without a reason in its doc comment: longer, and a
// reader can no longer hold it in their head.
const maxFuncLines = 80

// longReason is what a longer function's doc comment says, followed by
// why ("It is long on purpose: flag definitions only, ...").
const longReason = "long on purpose"

// TestLongFunctionsSayWhy fails on a non-test function longer than
// maxFuncLines whose doc comment does not say why it is long.
func TestLongFunctionsSayWhy(t *testing.T) {
	for _, path := range testenv.GoSources(t) {
		for _, f := range longFuncs(t, path) {
			t.Errorf("%s: %s is %d lines (more than %d): split it, or say why in its doc comment (%q)", f.pos, f.name, f.lines, maxFuncLines, longReason)
		}
	}
}

// TestLongFuncsFinds checks the check on a file with a long function
// without a reason, one with a reason and a short one.
func TestLongFuncsFinds(t *testing.T) {
	body := strings.Repeat("\tx++\n", maxFuncLines)
	src := "package p\n\nvar x int\n\nfunc bare() {\n" + body + "}\n\n" +
		"// kept is " + longReason + ": a table.\nfunc kept() {\n" + body + "}\n\n" +
		"func short() {\n\tx++\n}\n"
	path := testenv.TempTree(t, map[string]string{"/p.go": src}) + "/p.go"
	got := longFuncs(t, path)
	if len(got) != 1 || got[0].name != "bare" || got[0].lines != maxFuncLines+2 {
		t.Fatalf("long functions without a reason = %+v, want only bare (%d lines)", got, maxFuncLines+2)
	}
}

type longFunc struct {
	pos, name string
	lines     int
}

// longFuncs parses file and returns its functions longer than
// maxFuncLines whose doc comment lacks longReason.
func longFuncs(t *testing.T, file string) []longFunc {
	t.Helper()
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var out []longFunc
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		n := fs.Position(fd.End()).Line - fs.Position(fd.Pos()).Line + 1
		if n <= maxFuncLines || strings.Contains(fd.Doc.Text(), longReason) {
			continue
		}
		out = append(out, longFunc{fs.Position(fd.Pos()).String(), fd.Name.Name, n})
	}
	return out
}
