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

// TestLoadRefusesInvalidFields: well-formed JSON with a field later steps
// cannot use is "damaged" on load.
func TestLoadRefusesInvalidFields(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	for name, body := range map[string]string{
		"short sha":    `{"version":1,"files":{"/etc/a.conf":{"set_sha256":"00"}}}`,
		"upper hex":    `{"version":1,"files":{"/etc/a.conf":{"set_sha256":"` + strings.Repeat("AB", 32) + `"}}}`,
		"nil file":     `{"version":1,"files":{"/etc/a.conf":null}}`,
		"relative":     `{"version":1,"files":{"etc/a.conf":{"set_sha256":"` + SHA256(nil) + `"}}}`,
		"unclean":      `{"version":1,"files":{"/etc/../a.conf":{"set_sha256":"` + SHA256(nil) + `"}}}`,
		"nil key":      `{"version":1,"keys":{"fs.nr_open":null}}`,
		"nil process":  `{"version":1,"processes":{"1":null}}`,
		"relative dir": `{"version":1,"dirs":["etc/x"]}`,
	} {
		os.WriteFile(path, []byte(body), 0o600)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "damaged") {
			t.Errorf("%s: %v", name, err)
		}
	}
	os.WriteFile(path, []byte(`{"version":1,"files":{"/etc/a.conf":{"set_sha256":"`+SHA256(nil)+`"}}}`), 0o600)
	if _, err := Load(path); err != nil {
		t.Errorf("valid: %v", err)
	}
}
