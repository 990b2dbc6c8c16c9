package tune_test

import (
	"strings"
	"testing"
)

// TestE2EReadOnlyKeyIsRefused: a key the kernel shows read-only
// everywhere (net.ipv4.conf.lo.mc_forwarding, which only a multicast
// routing daemon's socket sets) was skipped as "already 0" when the host
// held the value, and still written into hostprep's sysctl.d file, where
// it fails at every boot; with another value plan exited 3 with no
// file:line. It is bad input either way: exit 2, naming the file:line and
// the fix, nothing changed.
func TestE2EReadOnlyKeyIsRefused(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	const key = "net.ipv4.conf.lo.mc_forwarding"
	cur := n.Sysctl(key)
	if cur == "" {
		t.Skip("no " + key + " here")
	}
	other := "1"
	if cur == "1" {
		other = "0"
	}
	for _, v := range []string{cur, other} {
		p := writeProfile(t, "ro.yaml", "sysctl:\n  net.core.somaxconn: \"4097\"\n  "+key+": \""+v+"\"\n")
		for _, verb := range []string{"plan", "apply"} {
			out, errOut, code := n.Hostprep("tune", verb, "--profile", p)
			if code != 2 || !strings.Contains(errOut, "ro.yaml:3:") || !strings.Contains(errOut, "read-only") {
				t.Errorf("tune %s with %s = %q: exit %d, want 2 naming ro.yaml:3 and read-only:\n%s%s", verb, key, v, code, out, errOut)
			}
		}
		if _, _, e := n.Run("test", "-e", "/var/lib/hostprep"); e == 0 {
			t.Fatalf("%s = %q: journal written for a refused profile", key, v)
		}
	}
}
