package sysctlkey

import "testing"

// TestSpellingsOfOneKey: the dotted, slashed and untidy spellings of a key
// name one file, and an interface name's dot (eth0.100) survives.
func TestSpellingsOfOneKey(t *testing.T) {
	for _, c := range []struct{ key, path string }{
		{"net.core.somaxconn", "net/core/somaxconn"},
		{"net/core/somaxconn", "net/core/somaxconn"},
		{"/net//core/./somaxconn", "net/core/somaxconn"},
		{"net.ipv4.conf.eth0/100.rp_filter", "net/ipv4/conf/eth0.100/rp_filter"},
		{"net/ipv4/conf/eth0.100/rp_filter", "net/ipv4/conf/eth0.100/rp_filter"},
		{"kernel", "kernel"},
	} {
		if got := Path(c.key); got != c.path {
			t.Errorf("Path(%q) = %q, want %q", c.key, got, c.path)
		}
	}
	if got := File("/proc/sys", "net.ipv4.conf.eth0/100.rp_filter"); got != "/proc/sys/net/ipv4/conf/eth0.100/rp_filter" {
		t.Errorf("File = %q", got)
	}
	if got := Dotted("net/ipv4/conf/eth0.100/rp_filter"); got != "net.ipv4.conf.eth0/100.rp_filter" {
		t.Errorf("Dotted = %q", got)
	}
}

// TestInterfaceKeys: a key of one interface's entry is told from the
// trees' all and default entries and from every other key.
func TestInterfaceKeys(t *testing.T) {
	for _, c := range []struct {
		key, tree, dev, rest string
		ok                   bool
	}{
		{"net.ipv4.conf.eth0/100.rp_filter", "net/ipv4/conf/", "eth0.100", "rp_filter", true},
		{"net.ipv6.neigh.lo.gc_stale_time", "net/ipv6/neigh/", "lo", "gc_stale_time", true},
		{"net.ipv4.conf.all.rp_filter", "", "", "", false},
		{"net.ipv4.conf.default.rp_filter", "", "", "", false},
		{"net.ipv4.conf.eth0", "", "", "", false},
		{"net.core.somaxconn", "", "", "", false},
	} {
		tree, dev, rest, ok := Interface(c.key)
		if tree != c.tree || dev != c.dev || rest != c.rest || ok != c.ok {
			t.Errorf("Interface(%q) = %q %q %q %v", c.key, tree, dev, rest, ok)
		}
	}
}
