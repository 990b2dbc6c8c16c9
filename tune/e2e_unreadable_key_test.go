package tune_test

import (
	"strings"
	"testing"
)

// TestE2EKeyTheKernelWillNotRead: a key the kernel shows but gives no
// value to read cannot be verified or put back, so a profile may not hold
// it. Two kinds, both in every network namespace: a write-only trigger
// (net.ipv4.route.flush, mode 0200) and net.ipv6.conf.lo.stable_secret,
// whose read fails with EIO until a secret is set (and a set one cannot
// be unset). tune stopped with exit 3 and a bare "input/output error" or
// "permission denied"; it refuses such a key up front (exit 2, naming it
// and the fix) and changes nothing, the profile's other keys included.
func TestE2EKeyTheKernelWillNotRead(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	keys := []string{"net.ipv4.route.flush"}
	if _, ok := n.ReadFile("/proc/sys/net/ipv6/conf/lo/stable_secret"); !ok {
		if _, _, c := n.Run("test", "-e", "/proc/sys/net/ipv6/conf/lo/stable_secret"); c == 0 {
			keys = append(keys, "net.ipv6.conf.lo.stable_secret")
		}
	}
	const other = "net.core.somaxconn"
	before := n.Sysctl(other)
	for _, key := range keys {
		p := writeProfile(t, "unreadable.yaml", "sysctl:\n  "+other+": \"4097\"\n  "+key+": \"1\"\n")
		for _, verb := range []string{"plan", "apply"} {
			out, errOut, code := n.Hostprep("tune", verb, "--profile", p)
			if code != 2 || !strings.Contains(errOut, "sysctl "+key+": ") || !strings.Contains(errOut, "remove it from the profile") {
				t.Errorf("tune %s with %s: exit %d, want 2 naming the key and the fix:\n%s%s", verb, key, code, out, errOut)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("tune %s with %s: want one line, got:\n%s", verb, key, errOut)
			}
		}
		if got := n.Sysctl(other); got != before {
			t.Fatalf("%s = %q after a refused apply, want %q", other, got, before)
		}
		if _, _, e := n.Run("test", "-e", "/var/lib/hostprep"); e == 0 {
			t.Fatalf("%s: journal written for a refused profile", key)
		}
	}
	if len(keys) < 2 {
		t.Log("no IPv6 here, or a stable_secret set: only the write-only trigger tried")
	}
}
