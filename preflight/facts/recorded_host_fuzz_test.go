package facts

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// FuzzRecordedHost feeds bytes to the two readers of a recorded host: the
// manifest of a --record directory (what `preflight --root` replays) and
// the host: mapping of a field case (LoadHostYAML). Neither may panic; a
// refusal is one line and bad input (exit 2).
func FuzzRecordedHost(f *testing.F) {
	for _, s := range []string{
		`{"format": 1, "page_size": 4096}`,
		`{"format": 2}`,
		`{"format": 1, "links": {"/etc/sysctl.conf": "../../x"}}`,
		"kernel: \"6.1.0\"\nsysctl: {fs.nr_open: \"1048576\"}\n",
		"cpus: -1\nmem_total_bytes: 1\n",
		"sysctl: [1, 2]\n",
		"\x00",
		"format: 1\n", // yaml.v3 reported its type errors on several lines
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	oneLineBadInput := func(t *testing.T, what string, err error) {
		if err == nil {
			return
		}
		if strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: multi-line error %q", what, err)
		}
		if exitcode.Code(err) != exitcode.BadInput {
			t.Fatalf("%s: %v is not bad input (exit 2)", what, err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, RecordManifest), data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadRecording(dir)
		oneLineBadInput(t, "manifest", err)
		_, err = LoadHostYAML("fuzz.yaml", bytes.NewReader(data))
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("host YAML: multi-line error %q", err)
		}
	})
}

// host is the Facts of a recorded host given as YAML (the `host:` block
// of a field case); the test fails on YAML LoadHostYAML refuses.
func host(t *testing.T, y string) *Facts {
	t.Helper()
	f, err := LoadHostYAML("test", strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	return f
}
