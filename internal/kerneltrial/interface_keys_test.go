package kerneltrial

import (
	"os"
	"testing"
)

// TestTrialOfAnInterfaceANewNamespaceLacks: a new namespace has only lo,
// so a key of another interface (here one no namespace has, named with a
// dot as a VLAN is: hpx0.7, spelled hpx0/7 in the dotted key) was not
// tried at all and fell to the table. It is now tried on the entry of its
// tree that stands for any interface, and the kernel's answer is the one
// it gives for that entry written directly: for every value, whatever
// this kernel's bounds are.
func TestTrialOfAnInterfaceANewNamespaceLacks(t *testing.T) {
	cases := []struct{ key, standIn string }{
		{"net.ipv4.conf.hpx0/7.rp_filter", "net.ipv4.conf.default.rp_filter"},
		{"net.ipv6.conf.hpx0/7.hop_limit", "net.ipv6.conf.default.hop_limit"},
		{"net.ipv4.neigh.hpx0/7.gc_stale_time", "net.ipv4.neigh.lo.gc_stale_time"},
	}
	for _, c := range cases {
		if _, err := os.Stat(path(c.standIn)); err != nil {
			t.Logf("%s: not on this kernel (%v)", c.standIn, err)
			continue
		}
		for _, v := range []string{"0", "1", "2", "64", "300", "-1"} {
			res := trial(t, Write{Key: c.key, Value: v}, Write{Key: c.standIn, Value: v})
			got, want := res[0], res[1]
			if got.TriedAs != c.standIn || !got.PerNamespace {
				t.Fatalf("%s = %s: tried as %q (per namespace %v), want as %s", c.key, v, got.TriedAs, got.PerNamespace, c.standIn)
			}
			if got.Accepted != want.Accepted || got.Stored != want.Stored || got.Nearest != want.Nearest || (got.Err == nil) != (want.Err == nil) {
				t.Errorf("%s = %s: %+v; %s written directly: %+v", c.key, v, got, c.standIn, want)
			}
		}
	}
	// lo, all and default are in every namespace: tried as themselves.
	if r := trial(t, Write{Key: "net.ipv4.conf.lo.rp_filter", Value: "1"})[0]; r.TriedAs != "" || !r.PerNamespace {
		t.Errorf("lo's key: %+v", r)
	}
}
