package tune_test

import (
	"strings"
	"testing"
)

// TestE2EKeyOfAnInterfaceWithADot: an interface whose name has a dot (a
// VLAN such as eth0.100) is spelled with a slash in a dotted key,
// net.ipv4.conf.eth0/100.rp_filter, and its file is
// /proc/sys/net/ipv4/conf/eth0.100/rp_filter (procps and systemd swap dots
// and slashes when the key's first separator is a dot). hostprep took
// every dot for a slash: tune wrote nothing for such a key and still
// exited 0, and the kernel trial could not try it.
// The test makes the interface in its own namespace and has procps's
// sysctl read the key back.
func TestE2EKeyOfAnInterfaceWithADot(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	if _, e, c := n.Run("ip", "link", "add", "hp0.7", "type", "veth", "peer", "name", "hp1"); c != 0 {
		t.Fatalf("ip link add: %s", e)
	}
	const key = "net.ipv4.conf.hp0/7.rp_filter"
	before := n.Sysctl(key)
	want := "2"
	if before == want {
		want = "1"
	}
	p := writeProfile(t, "vlan.yaml", "sysctl:\n  "+key+": \""+want+"\"\n")
	// A new namespace has no hp0.7: the kernel trial writes the value on
	// conf's default entry, which every interface's entry is built from,
	// and says so.
	out, errOut, code := n.Hostprep("tune", "apply", "--profile", p)
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out+errOut, key+" as net.ipv4.conf.default.rp_filter") || strings.Contains(out+errOut, "table of kernel bounds") {
		t.Errorf("apply does not say the key was tried as net.ipv4.conf.default.rp_filter:\n%s%s", out, errOut)
	}
	if got := n.Sysctl(key); got != want {
		t.Fatalf("%s = %q after apply, want %q", key, got, want)
	}
	if f, ok := n.ReadFile("/etc/sysctl.d/60-hostprep.conf"); !ok || !strings.Contains(f, key+" = "+want) {
		t.Errorf("60-hostprep.conf does not set %s = %s:\n%s", key, want, f)
	}
	if out, errOut, code := n.Hostprep("tune", "verify"); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := n.Hostprep("tune", "rollback"); code != 0 {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errOut)
	}
	if got := n.Sysctl(key); got != before {
		t.Fatalf("%s = %q after rollback, want %q", key, got, before)
	}
}
