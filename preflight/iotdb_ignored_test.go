package preflight

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/verdict"
)

// TestIoTDBIgnoredAgainstRelease guards the ignored-property reading on
// the real IoTDB release: the shipped iotdb-system.properties has no line
// its own template lacks, and a 1.x thrift_max_frame_size line appended
// to it is named as not read, with the 2.x property read instead.
func TestIoTDBIgnoredAgainstRelease(t *testing.T) {
	src := iotdbHome(t)
	home := t.TempDir()
	for _, p := range []string{"datanode/conf/iotdb-system.properties", "datanode/lib"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(src, "datanode", "lib"), filepath.Join(home, "datanode", "lib")); err != nil {
		t.Fatal(err)
	}
	shipped, err := os.ReadFile(filepath.Join(src, "datanode", "conf", "iotdb-system.properties"))
	if err != nil {
		t.Fatal(err)
	}
	props := filepath.Join(home, "datanode", "conf", "iotdb-system.properties")
	if err := os.WriteFile(props, shipped, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := facts.ReadIoTDBConfig(home)
	if err != nil {
		t.Fatal(err)
	}
	if c.Version == "" || len(c.Ignored) != 0 {
		t.Fatalf("shipped file: version %q, ignored %+v; want a version and none ignored", c.Version, c.Ignored)
	}
	if err := os.WriteFile(props, append(shipped, "\nthrift_max_frame_size=536870912\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err = facts.ReadIoTDBConfig(home); err != nil {
		t.Fatal(err)
	}
	if len(c.Ignored) != 1 || c.Ignored[0].Name != "thrift_max_frame_size" || c.Ignored[0].Use != facts.PropFrameSize {
		t.Fatalf("ignored %+v, want thrift_max_frame_size read as %s", c.Ignored, facts.PropFrameSize)
	}
	f := facts.StockDebian12(0)
	f.IoTDB = c
	if r := checks.CheckIoTDBIgnored(f, facts.Target{Sockets: 1, Role: facts.IoTDB}); r.Status != verdict.Warn {
		t.Errorf("iotdb.ignored %s, want warn: %s", r.Status, message(r))
	}
}
