package codecheck

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

const module = "github.com/hostprep/hostprep/"

// importRule forbids the packages under From (the package itself and,
// with a trailing "/...", those below it) to depend on To, directly or
// through another package, in their code or their tests.
type importRule struct {
	From, To, Why string
}

// importRules are the layers of the module: preflight's phases run facts
// → checks → remedies, and a phase never imports a later one; the load
// probes read facts and checks but not the preflight runner.
var importRules = []importRule{
	{"preflight/facts", "preflight/checks", "facts are gathered without knowing what is judged"},
	{"preflight/facts", "preflight/remedies", "facts are gathered without knowing what is fixed"},
	{"preflight/checks", "preflight/remedies", "a check judges facts; remedies prove themselves by the checks, not the other way"},
	{"loadprobe/...", "preflight", "the probes use preflight/facts and preflight/checks, not the runner"},
}

// TestImportLayers fails when a package depends on one its rule forbids
// (go list -test -deps, so test imports count).
func TestImportLayers(t *testing.T) {
	cmd := exec.Command("go", "list", "-test", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./...")
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		deps[f[0]] = append(deps[f[0]], f[1:]...)
	}
	for _, r := range importRules {
		if !slices.ContainsFunc(mapKeys(deps), func(p string) bool { return under(listed(p), r.From) }) {
			t.Errorf("rule %s -> %s: no package under %s (renamed?)", r.From, r.To, r.From)
		}
	}
	for _, v := range layerViolations(deps, importRules) {
		t.Error(v)
	}
}

// TestLayerViolationsFinds checks the check on a made-up graph: facts
// reaching remedies through checks, and a probe importing the runner.
func TestLayerViolationsFinds(t *testing.T) {
	deps := map[string][]string{
		module + "preflight/facts":                          {module + "preflight/checks", module + "preflight/remedies"},
		module + "preflight/checks [preflight/checks.test]": {module + "preflight/facts"},
		module + "loadprobe/mqtt":                           {module + "preflight/facts", module + "preflight"},
		module + "loadprobe/iotdb":                          {module + "preflight/facts"},
	}
	got := layerViolations(deps, importRules)
	if len(got) != 3 {
		t.Fatalf("violations = %q, want facts->checks, facts->remedies and loadprobe/mqtt->preflight", got)
	}
}

// layerViolations names each package in deps (import path, possibly with
// a go list test suffix, mapped to its dependencies) that breaks a rule.
func layerViolations(deps map[string][]string, rules []importRule) []string {
	var out []string
	for _, p := range mapKeys(deps) {
		for _, r := range rules {
			if under(listed(p), r.From) && slices.Contains(deps[p], module+r.To) {
				out = append(out, p+" depends on "+r.To+": "+r.Why)
			}
		}
	}
	return out
}

// listed is a go list import path without the module prefix and the test
// variant's " [x.test]" suffix.
func listed(p string) string {
	p, _, _ = strings.Cut(p, " ")
	return strings.TrimSuffix(strings.TrimPrefix(p, module), ".test")
}

// under says whether p is pattern, or below it for "dir/...".
func under(p, pattern string) bool {
	if dir, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == dir || strings.HasPrefix(p, dir+"/")
	}
	return p == pattern
}

func mapKeys(m map[string][]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
