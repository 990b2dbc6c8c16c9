package proclimits

import (
	"os"
	"path/filepath"
	"testing"
)

func TestNofile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	head := "Limit                     Soft Limit           Hard Limit           Units     \n"
	p := write("a", head+"Max open files            1024                 20000                files     \n")
	if s, h, err := Nofile(p); err != nil || s != 1024 || h != 20000 {
		t.Errorf("got %d %d %v", s, h, err)
	}
	p = write("b", head+"Max open files            unlimited            unlimited            files     \n")
	if s, h, err := Nofile(p); err != nil || s != Unlimited || h != Unlimited {
		t.Errorf("unlimited: got %d %d %v", s, h, err)
	}
	if _, _, err := Nofile(write("c", head)); err == nil {
		t.Error("no Max open files line: want an error")
	}
	if _, _, err := Nofile(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file: want an error")
	}
	// This process's own limits: a real /proc file.
	if s, h, err := Nofile("/proc/self/limits"); err != nil || s == 0 || s > h {
		t.Errorf("/proc/self/limits: %d %d %v", s, h, err)
	}
}
