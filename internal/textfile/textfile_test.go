package textfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func lines(r io.Reader) ([]string, error) {
	var out []string
	sc := Scanner(r)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out, sc.Err()
}

// A line longer than bufio's default 64 KiB is read whole; one longer
// than MaxLine stops the scan with an error.
func TestScannerLongLines(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	got, err := lines(strings.NewReader("a\n" + long + "\nb\n"))
	if err != nil || len(got) != 3 || got[1] != long {
		t.Fatalf("%d lines, err %v", len(got), err)
	}
	if _, err := lines(strings.NewReader(strings.Repeat("y", MaxLine+1))); err == nil {
		t.Error("a line over MaxLine: no error")
	}
}

func TestParse(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Parse(p, lines)
	if err != nil || strings.Join(got, ",") != "one,two" {
		t.Errorf("Parse: %q, %v", got, err)
	}
	if got, err := Parse(p+".missing", lines); !errors.Is(err, fs.ErrNotExist) || got != nil {
		t.Errorf("missing file: %q, %v", got, err)
	}
}
