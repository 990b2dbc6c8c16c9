package codecheck

import (
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// maxProfileCallees is how many functions of the profiles package tune
// may call. A profile's values are parsed once, at load, into typed
// values (profiles.Sysctl.Parsed); after that tune reads fields, and the
// walk of tune.Apply's profile parameter returns to profiles only for
// what profiles alone can answer: (*Profile).Validate (which also parses
// a profile built in code) and (*Profile).Where (where a value was
// written, for an error). Values tune reads from the host or the kernel
// are parsed with internal/sysctlval, not with profiles.
const maxProfileCallees = 2

// TestTuneReturnsToProfilesAtMostTwice guards that rule. The measure: the
// distinct functions and methods declared in package profiles that a call
// in a non-test file of tune or a package below it names, resolved by
// the type checker (a conversion such as profiles.TasksMax(n) is not a
// call; a method of a profiles type, such as TasksMax.String, is). A
// re-parse added back (profiles.ParsePortRange, profiles.Fields, ...)
// makes a third and fails.
func TestTuneReturnsToProfilesAtMostTwice(t *testing.T) {
	calls := profilesCallees(t, "./tune/...")
	t.Logf("tune calls into profiles: %q", sortedKeys(calls))
	if len(calls) > maxProfileCallees {
		var lines []string
		for _, name := range sortedKeys(calls) {
			lines = append(lines, name+" at "+strings.Join(calls[name], ", "))
		}
		t.Errorf("tune calls %d functions of profiles, more than %d: parse a profile's values once, at load, into typed values (profiles.Sysctl.Parsed), and parse host values with internal/sysctlval:\n%s",
			len(calls), maxProfileCallees, strings.Join(lines, "\n"))
	}
}

// TestProfilesCalleesFinds checks the measure on a made-up package: two
// calls of one package function count once, a method of a profiles type
// counts, a conversion and a call of another package do not.
func TestProfilesCalleesFinds(t *testing.T) {
	src := `package x

import (
	"strings"

	"github.com/hostprep/hostprep/profiles"
)

func f(p *profiles.Profile) {
	_, _, _ = profiles.ParsePortRange("1024 65535")
	_, _, _ = profiles.ParsePortRange("1 2")
	_ = p.Validate()
	_ = profiles.TasksMax(3)
	_ = strings.TrimSpace(" ")
}
`
	dir := testenv.TempTree(t, map[string]string{"/x/x.go": src})
	got := profilesCalleesIn(t, exportData(t, "./profiles"), filepath.Join(dir, "x"), []string{"x.go"})
	want := []string{"(*github.com/hostprep/hostprep/profiles.Profile).Validate", "github.com/hostprep/hostprep/profiles.ParsePortRange"}
	if keys := sortedKeys(got); !slices.Equal(keys, want) {
		t.Fatalf("callees = %q, want %q", keys, want)
	}
}

// profilesCallees maps each function of profiles that the non-test files
// of the packages matching pattern call to where they call it.
func profilesCallees(t *testing.T, pattern string) map[string][]string {
	t.Helper()
	exports := exportData(t, pattern)
	cmd := exec.Command("go", "list", "-json=Dir,GoFiles", pattern)
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	all := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var pkg struct {
			Dir     string
			GoFiles []string
		}
		if err := dec.Decode(&pkg); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for name, at := range profilesCalleesIn(t, exports, pkg.Dir, pkg.GoFiles) {
			all[name] = append(all[name], at...)
		}
	}
	return all
}

// exportData maps the import path of every dependency of the packages
// matching pattern to its compiled export data (go list -export).
func exportData(t *testing.T, pattern string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}} {{.Export}}", pattern)
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, file, ok := strings.Cut(l, " "); ok && file != "" {
			m[path] = file
		}
	}
	return m
}

// profilesCalleesIn type-checks files of the package in dir against the
// export data and maps each profiles function called to its positions.
func profilesCalleesIn(t *testing.T, exports map[string]string, dir string, files []string) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	var parsed []*ast.File
	for _, f := range files {
		af, err := parser.ParseFile(fset, filepath.Join(dir, f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, af)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		return os.Open(exports[path])
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	if _, err := (&types.Config{Importer: imp}).Check(dir, fset, parsed, info); err != nil {
		t.Fatalf("type-checking %s: %v", dir, err)
	}
	out := map[string][]string{}
	for _, af := range parsed {
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			var id *ast.Ident
			switch fn := ast.Unparen(call.Fun).(type) {
			case *ast.Ident:
				id = fn
			case *ast.SelectorExpr:
				id = fn.Sel
			}
			if id == nil {
				return true
			}
			f, ok := info.Uses[id].(*types.Func)
			if ok && f.Pkg() != nil && f.Pkg().Path() == module+"profiles" {
				pos := fset.Position(call.Pos())
				rel, _ := filepath.Rel(testenv.RepoRoot(), pos.Filename)
				out[f.FullName()] = append(out[f.FullName()], rel+":"+strings.TrimPrefix(pos.String(), pos.Filename+":"))
			}
			return true
		})
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
