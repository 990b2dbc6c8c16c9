package tune_test

import (
	"strconv"
	"strings"
	"testing"
)

// TestE2ERoundedValueMustKeepTheBound: the kernel stores some keys in its
// own unit (net.ipv4.icmp_ratelimit in jiffies: 1001 ms is 1004 at HZ
// 250). An at-most 1001 wrote 1004 and then called the host's 1004 "never
// raised". A bound the kernel's stored value breaks is refused up front
// (exit 2), naming what the kernel stores; a value it stores as is passes.
// The values come from this namespace's kernel, not from one HZ.
func TestE2ERoundedValueMustKeepTheBound(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	const key = "net.ipv4.icmp_ratelimit"
	rounded, kept := "", ""
	for v := 1001; v <= 1020 && (rounded == "" || kept == ""); v++ {
		s := strconv.Itoa(v)
		if _, e, c := n.Run("sysctl", "-qw", key+"="+s); c != 0 {
			t.Fatalf("sysctl -w %s=%s: %s", key, s, e)
		}
		if got := n.Sysctl(key); got != s && rounded == "" {
			rounded = s
		} else if got == s && kept == "" {
			kept = s
		}
	}
	if rounded == "" {
		t.Skip("this kernel stores " + key + " as written (HZ 1000)")
	}
	if _, e, c := n.Run("sysctl", "-qw", key+"=5000"); c != 0 {
		t.Fatal(e)
	}
	p := writeProfile(t, "rl.yaml", "sysctl:\n  "+key+": {value: \""+rounded+"\", mode: at-most}\n")
	out, errOut, code := n.Hostprep("tune", "apply", "--profile", p)
	if code != 2 || !strings.Contains(errOut, "breaks at-most "+rounded) {
		t.Errorf("apply at-most %s: exit %d, want 2 saying the stored value breaks the bound:\n%s%s", rounded, code, out, errOut)
	}
	if got := n.Sysctl(key); got != "5000" {
		t.Fatalf("%s = %q after a refused apply, want 5000", key, got)
	}
	if kept != "" {
		p = writeProfile(t, "rl.yaml", "sysctl:\n  "+key+": {value: \""+kept+"\", mode: at-most}\n")
		if out, errOut, code := n.Hostprep("tune", "plan", "--profile", p); code != 0 {
			t.Errorf("plan at-most %s (stored as is): exit %d\n%s%s", kept, code, out, errOut)
		}
	}
}
