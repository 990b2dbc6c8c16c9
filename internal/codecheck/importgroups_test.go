package codecheck

import (
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestImportGroupsDoNotMix fails on a Go file (tests too) whose import
// block has a group (imports not parted by a blank line) that mixes the
// standard library with modules, as goimports keeps them apart. Moving
// code between packages had left hostprep's own packages sorted into the
// standard library's group in 31 files.
func TestImportGroupsDoNotMix(t *testing.T) {
	for _, path := range testenv.GoFiles(t) {
		for _, m := range mixedImportGroups(t, path) {
			t.Errorf("%s: one import group mixes %s: part them by a blank line (the standard library first)", m.pos, strings.Join(m.kinds, " and "))
		}
	}
}

// TestMixedImportGroupsFinds checks the check on a file with a mixed
// group and one with the groups apart.
func TestMixedImportGroupsFinds(t *testing.T) {
	mixed := "package p\n\nimport (\n\t\"fmt\"\n\t\"" + module + "internal/plural\"\n\n\t\"golang.org/x/sys/unix\"\n)\n"
	parted := "package p\n\nimport (\n\t\"fmt\"\n\n\t\"golang.org/x/sys/unix\"\n\n\t\"" + module + "internal/plural\"\n)\n"
	dir := testenv.TempTree(t, map[string]string{"/mixed.go": mixed, "/parted.go": parted})
	if got := mixedImportGroups(t, dir+"/mixed.go"); len(got) != 1 || strings.Join(got[0].kinds, ",") != "the standard library,modules" {
		t.Errorf("mixed.go: %+v, want one group of the standard library and modules", got)
	}
	if got := mixedImportGroups(t, dir+"/parted.go"); len(got) != 0 {
		t.Errorf("parted.go: %+v, want none", got)
	}
}

type mixedGroup struct {
	pos   string
	kinds []string
}

// mixedImportGroups parses file's imports and returns each group that
// holds more than one kind of import.
func mixedImportGroups(t *testing.T, file string) []mixedGroup {
	t.Helper()
	fs := token.NewFileSet()
	f, err := parser.ParseFile(fs, file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []mixedGroup
	var kinds []string
	start, last := "", -1
	flush := func() {
		if len(kinds) > 1 {
			out = append(out, mixedGroup{start, kinds})
		}
		kinds = nil
	}
	for _, spec := range f.Imports {
		line := fs.Position(spec.Pos()).Line
		if line != last+1 {
			flush()
			start = fs.Position(spec.Pos()).String()
		}
		last = line
		p, _ := strconv.Unquote(spec.Path.Value)
		k := importKind(p)
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	flush()
	return out
}

// importKind is the group path belongs in: a standard library path has
// no dot in its first element.
func importKind(path string) string {
	if !strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
		return "the standard library"
	}
	return "modules"
}
