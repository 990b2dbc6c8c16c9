package capacity

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFDArithmetic guards the fd budget every caller shares: 1 % headroom
// with a floor of 64, both ways (need for N sockets, sockets for a limit).
func TestFDArithmetic(t *testing.T) {
	for _, c := range []struct {
		sockets  int
		headroom uint64
	}{{0, 64}, {1000, 64}, {6400, 64}, {6401, 65}, {100000, 1000}} {
		if got := FDHeadroom(c.sockets); got != c.headroom {
			t.Errorf("FDHeadroom(%d) = %d, want %d", c.sockets, got, c.headroom)
		}
		if got := FDNeed(c.sockets); got != uint64(c.sockets)+c.headroom {
			t.Errorf("FDNeed(%d) = %d", c.sockets, got)
		}
	}
	for _, c := range []struct {
		nofile uint64
		usable int64
	}{{0, 0}, {64, 0}, {1024, 960}, {1 << 20, 1<<20 - 10486}, {Unlimited, 1 << 62}} {
		if got := UsableFDs(c.nofile); got != c.usable {
			t.Errorf("UsableFDs(%d) = %d, want %d", c.nofile, got, c.usable)
		}
	}
}

// TestPortArithmetic guards the count of ports one source address gives
// one destination: the range's size less the reserved ports inside it.
func TestPortArithmetic(t *testing.T) {
	r, ok := ParsePortRange("32768\t60999\n")
	if !ok || r != (PortRange{32768, 60999}) || r.String() != "32768-60999" {
		t.Fatalf("ParsePortRange = %v %v", r, ok)
	}
	if got := r.PerPair(nil); got != 28232 {
		t.Errorf("default range holds %d per pair, want 28232", got)
	}
	res := ReservedPorts("1883, 40000-40009,70000,x")
	if len(res) != 11 || !res[1883] || !res[40009] {
		t.Errorf("ReservedPorts = %v", res)
	}
	if got := r.PerPair(res); got != 28222 {
		t.Errorf("PerPair with 10 reserved inside = %d, want 28222", got)
	}
	for _, bad := range []string{"", "1", "2 1", "a b", "1 2 3"} {
		if _, ok := ParsePortRange(bad); ok {
			t.Errorf("ParsePortRange(%q) accepted", bad)
		}
	}
}

// TestReadPorts guards reading a namespace's ports from a /proc/sys tree:
// the reserved file is optional, the range is not.
func TestReadPorts(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "proc/sys/net/ipv4")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPorts(root); err == nil {
		t.Error("no ip_local_port_range: want an error")
	}
	os.WriteFile(filepath.Join(dir, "ip_local_port_range"), []byte("40000\t40999\n"), 0o644)
	p, err := ReadPorts(root)
	if err != nil || p.PerPair != 1000 || p.Reserved != 0 {
		t.Fatalf("ReadPorts = %+v, %v", p, err)
	}
	os.WriteFile(filepath.Join(dir, "ip_local_reserved_ports"), []byte("40000-40099\n"), 0o644)
	if p, err = ReadPorts(root); err != nil || p.PerPair != 900 || p.Reserved != 100 {
		t.Errorf("with 100 reserved: %+v, %v", p, err)
	}
	os.WriteFile(filepath.Join(dir, "ip_local_port_range"), []byte("junk\n"), 0o644)
	if _, err := ReadPorts(root); err == nil {
		t.Error("unparsable range: want an error")
	}
	if _, err := ReadPorts("/"); err != nil {
		t.Errorf("this host's own ports: %v", err)
	}
}
