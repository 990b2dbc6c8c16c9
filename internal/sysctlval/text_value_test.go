package sysctlval

import "testing"

// TestTextValueKeepsInnerWhiteSpace: only a numeric vector's fields are
// joined by one space (the kernel prints tcp_rmem with tabs, profiles
// write spaces); a text value such as kernel.core_pattern is kept as the
// kernel keeps it, inner blanks and tabs included, trimmed at its ends
// only (as systemd-sysctl trims a sysctl.d line).
func TestTextValueKeepsInnerWhiteSpace(t *testing.T) {
	cases := []struct{ key, in, want string }{
		{"kernel.core_pattern", "/tmp/core  x %e", "/tmp/core  x %e"},
		{"kernel.core_pattern", "/tmp/core\tx %e", "/tmp/core\tx %e"},
		{"kernel.core_pattern", "  |/usr/lib/core %P  %u \t", "|/usr/lib/core %P  %u"},
		{"net.ipv4.tcp_congestion_control", " cubic ", "cubic"},
		{"net.ipv4.tcp_rmem", "4096\t131072  6291456", "4096 131072 6291456"},
		{"net.ipv4.ping_group_range", " 0 \t 2147483647 ", "0 2147483647"},
		{"kernel.printk", "4\t4\t1\t7", "4 4 1 7"},
		{"net.core.somaxconn", " 4096 ", "4096"},
		{"vm.lowmem_reserve_ratio", "0x20  040", "0x20 040"},
	}
	for _, c := range cases {
		if got := Parse(c.key, c.in).Normal; got != c.want {
			t.Errorf("Parse(%s, %q).Normal = %q, want %q", c.key, c.in, got, c.want)
		}
		if got := Normal(c.in); got != c.want {
			t.Errorf("Normal(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
