package journal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSaveLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "var", "lib", "hostprep", "state.json")
	if st, err := Load(path); st != nil || err != nil {
		t.Fatalf("missing journal: %v %v", st, err)
	}
	s := New()
	s.Keys["fs.nr_open"] = &Key{Original: "1048576", Set: "2097152", Mode: "at-least", Seq: 0}
	s.Files["/etc/sysctl.d/60-hostprep.conf"] = &File{Existed: true, Original: []byte("a\x00b\n"), Mode: 0o600, SetSHA256: SHA256([]byte("x")), Seq: 1}
	s.Applies = append(s.Applies, Apply{Profile: "sys-tune"}, Apply{Profile: "b"}, Apply{Profile: "sys-tune"})
	if err := Save(path, s); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Files["/etc/sysctl.d/60-hostprep.conf"].Original) != "a\x00b\n" || got.Keys["fs.nr_open"].Original != "1048576" {
		t.Fatalf("round trip: %+v", got)
	}
	if p := strings.Join(got.Profiles(), ","); p != "sys-tune,b" {
		t.Errorf("Profiles() = %s", p)
	}
	os.WriteFile(path, []byte("{not json"), 0o600)
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("damaged journal: %v", err)
	}
}
