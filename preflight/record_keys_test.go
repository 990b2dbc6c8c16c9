package preflight

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/preflight/facts/factstest"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// TestRecordKeepsEveryKeyRead: a recording keeps every systemd setting
// preflight reads, so its replay judges the unit on the same limits.
// Field case: --record kept LimitNOFILE= and User= only, so a unit's
// MemoryMax=, TasksMax= and Slice= (and its slice's limits) were blanked
// and the replay passed mem.available and iotdb.threads where the live
// run failed. The kind: any key read from a systemd file. Every
// (section, key) pair of string literals that preflight and hostconf
// pass to a reader must be in recordedSystemdKeys; and a unit whose
// files set every one of them, with secrets, continuations, bare CR line
// ends and a drop-in that stops systemd's parser, gathers the same
// target facts from its recording as from itself.
func TestRecordKeepsEveryKeyRead(t *testing.T) {
	for _, key := range systemdKeysInSource(t, ".", "../hostconf") {
		if !slices.Contains(facts.RecordedSystemdKeys, key) {
			t.Errorf("%s is read from systemd files but a recording blanks it: add it to recordedSystemdKeys", key)
		}
	}
	const unit = "lib/systemd/system/mosquitto.service"
	files := map[string]string{
		unit: "[Unit]\nDescription=broker\n[Service]\nEnvironment=DB_PASSWORD=hunter2\nExecStart=/usr/sbin/mosquitto \\\n  --token s3cret\n" +
			"LimitNOFILE=\\\n# a comment inside\n  8192:16384\r\nUser=mosquitto\rSlice=brokers.slice\nTasksMax=\\\n 700\n" +
			"MemoryMax=64M\nMemoryHigh=48M\nMemoryLimit=32M\nMemorySwapMax=0\nMemoryMin=1M\nMemoryLow=2M\n",
		"etc/systemd/system/mosquitto.service.d/50-x.conf": "[Service]\nExecStartPre=/bin/echo s3cret\nTasksMax=600\n\xff secret line\nTasksMax=5\n",
		"etc/systemd/system/brokers.slice":                 "[Slice]\nMemoryMax=48M\nTasksMax=300\nDefaultMemoryLow=1M\nDefaultMemoryMin=1M\n",
		"etc/systemd/system.conf.d/20-tasks.conf":          "[Manager]\nDefaultTasksMax=900\nDefaultEnvironment=TOKEN=s3cret\n",
	}
	orig := factstest.FixtureRoot(t, files)
	kept := map[string]string{}
	for p, b := range files {
		kept[p] = string(facts.KeepReadLines("/"+p, []byte(b)))
		if strings.Contains(kept[p], "s3cret") || strings.Contains(kept[p], "hunter2") || strings.Contains(kept[p], "secret line") {
			t.Errorf("%s kept a secret: %q", p, kept[p])
		}
	}
	rec := factstest.FixtureRoot(t, kept)
	targets := make([]string, 2)
	for i, root := range []string{orig, rec} {
		f, err := Gather(t.Context(), GatherOptions{Root: root, Service: "mosquitto"})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(struct {
			Target facts.ProcessFacts
			Notes  []string
		}{f.Target, f.Notes})
		if err != nil {
			t.Fatal(err)
		}
		targets[i] = strings.ReplaceAll(string(b), root, "ROOT")
	}
	if targets[0] != targets[1] {
		t.Errorf("the recording's files give other target facts:\nfiles:     %s\nrecording: %s", targets[0], targets[1])
	}
	// the continued LimitNOFILE=, the Slice= after a bare CR, the drop-in
	// read up to the line that stops systemd's parser, the MemoryHigh=
	for _, want := range []string{"mosquitto.service:7", "Slice= at /lib/systemd/system/mosquitto.service:11", "50-x.conf:3", "mosquitto.service:15"} {
		if !strings.Contains(targets[0], want) {
			t.Errorf("the fixture does not reach %q: %s", want, targets[0])
		}
	}
}

// systemdKeysInSource lists the keys preflight and hostconf read from
// systemd files: the string literal after a section name ("Service",
// "Slice", "Manager") among a call's arguments, in the non-test Go files
// of dirs, and the keys of memKeys.
func systemdKeysInSource(t *testing.T, dirs ...string) []string {
	keys := slices.Clone(facts.MemKeys)
	for _, dir := range dirs {
		paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, p := range paths {
			if strings.HasSuffix(p, "_test.go") {
				continue
			}
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			file, err := parser.ParseFile(token.NewFileSet(), p, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				for i := 0; i+1 < len(call.Args); i++ {
					sec, key := stringLit(call.Args[i]), stringLit(call.Args[i+1])
					if (sec == "Service" || sec == "Slice" || sec == "Manager") && key != "" {
						keys = append(keys, key)
					}
				}
				return true
			})
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// stringLit is e's value when it is a string literal, else "".
func stringLit(e ast.Expr) string {
	l, ok := e.(*ast.BasicLit)
	if !ok || l.Kind != token.STRING {
		return ""
	}
	s, _ := strconv.Unquote(l.Value)
	return s
}

// TestRootMustBeARecording guards that --root names a recorded host:
// the live root and a directory without the manifest are bad input
// naming the fix.
func TestRootMustBeARecording(t *testing.T) {
	bare := t.TempDir()
	if err := os.MkdirAll(filepath.Join(bare, "proc", "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{"/", bare} {
		_, err := Run(t.Context(), Options{Target: facts.Target{Sockets: 10, Role: facts.Broker}, Root: root})
		if exitcode.Code(err) != exitcode.BadInput || !strings.Contains(err.Error(), "--root "+root) {
			t.Errorf("--root %s: %v, want bad input naming it", root, err)
		}
	}
	if err := facts.CheckRecordedRoot(""); err != nil {
		t.Errorf("no --root: %v", err)
	}
}
