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
