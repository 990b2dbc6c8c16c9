package tune

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRollbackFromMainJournal: a host tuned by the release before the
// layer restructuring (testdata/legacy-main: mqtt-broker-1m then sys-tune
// applied by that code on a fixture host with a foreign emqx drop-in, mode
// 0640) still rolls back exactly after upgrading. before.json and
// after.json are that host's /proc/sys and files before and after the two
// applies; state.json is the journal that code wrote (its paths are under
// the generating test's temporary root, which loadJournal rebases).
func TestRollbackFromMainJournal(t *testing.T) {
	read := func(name string) map[string]string {
		b, err := os.ReadFile(filepath.Join("testdata", "legacy-main", name))
		must(t, err)
		var m map[string]string
		must(t, json.Unmarshal(b, &m))
		return m
	}
	before, after := read("before.json"), read("after.json")
	h := newHost(t, nil)
	must(t, os.RemoveAll(h.procSys))
	must(t, os.RemoveAll(h.root))
	lay := func(m map[string]string) {
		for rel, data := range m {
			var p string
			switch {
			case strings.HasPrefix(rel, "procsys/"):
				p = filepath.Join(h.procSys, strings.TrimPrefix(rel, "procsys/"))
			case strings.HasPrefix(rel, "root/"):
				p = filepath.Join(h.root, strings.TrimPrefix(rel, "root/"))
			default:
				t.Fatalf("bad entry %s", rel)
			}
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.WriteFile(p, []byte(data), 0o644))
		}
	}
	lay(after)
	dropIn := filepath.Join(h.root, "etc/systemd/system/emqx.service.d/60-hostprep.conf")
	r, err := Rollback(context.Background(), h.env)
	if err != nil {
		t.Fatalf("rollback of the journal written by main: %v", err)
	}
	if !r.Changed {
		t.Fatal("rollback changed nothing")
	}
	got := map[string]string{}
	for _, dir := range []string{h.procSys, h.root} {
		must(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			must(t, err)
			rel, _ := filepath.Rel(h.procSys, p)
			if strings.HasPrefix(rel, "..") {
				rel, _ = filepath.Rel(h.root, p)
				rel = "root/" + rel
			} else {
				rel = "procsys/" + rel
			}
			got[rel] = string(b)
			return nil
		}))
	}
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	for k, v := range before {
		if g, ok := got[k]; !ok {
			t.Errorf("after rollback %s is missing, want %q", k, v)
		} else if norm(g) != norm(v) {
			t.Errorf("after rollback %s = %q, want %q", k, g, v)
		}
	}
	for k := range got {
		if _, ok := before[k]; !ok {
			t.Errorf("after rollback %s is left over", k)
		}
	}
	if st, err := os.Stat(dropIn); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("foreign emqx drop-in not restored with mode 0640: %v %v", st, err)
	}
	for _, d := range []string{"etc/systemd/system.conf.d", "etc/systemd/system/mosquitto.service.d"} {
		if _, err := os.Stat(filepath.Join(h.root, d)); err == nil {
			t.Errorf("directory %s created by the apply is left over", d)
		}
	}
}
