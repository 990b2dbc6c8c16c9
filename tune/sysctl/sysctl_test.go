package sysctl

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFixtureTree(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "net", "core"), 0o755)
	os.WriteFile(filepath.Join(root, "net", "core", "somaxconn"), []byte("4096\n"), 0o644)
	os.WriteFile(filepath.Join(root, "net", "core", "rmem_max"), []byte("212992\n"), 0o444)
	b, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := b.Get("net.core.somaxconn"); err != nil || v != "4096" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := b.Set("net.core.somaxconn", "8192"); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.Get("net.core.somaxconn"); v != "8192" {
		t.Fatalf("after Set: %q", v)
	}
	if !b.Writable("net.core.somaxconn") || b.Writable("net.core.rmem_max") {
		t.Error("Writable")
	}
	// An unknown key is not created (a fixture tree would take a new file).
	if err := b.Set("net.core.nosuchkey", "1"); !IsNotExist(err) {
		t.Fatalf("Set of an unknown key: %v", err)
	}
	if b.Exists("net.core.nosuchkey") {
		t.Fatal("unknown key created")
	}
	// An empty value reaches the file as a newline (clears a list key).
	os.WriteFile(filepath.Join(root, "net", "core", "list"), []byte("1883\n"), 0o644)
	if err := b.Set("net.core.list", ""); err != nil {
		t.Fatal(err)
	}
	if v, _ := b.Get("net.core.list"); v != "" {
		t.Fatalf("cleared list = %q", v)
	}
	if _, err := New(filepath.Join(root, "absent")); err == nil {
		t.Fatal("New on a missing root: want an error")
	}
}
