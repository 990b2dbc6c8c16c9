package tune_test

import (
	"strings"
	"testing"
)

// TestE2EMissingKeyInANamespace: inside a network namespace of its own (a
// container), a net.* key that is not there was skipped as a global key
// of the host's, exit 0, even where no global key can be: a misspelled
// key of an interface tree (conf, which every namespace has whole) or the
// name of a directory. Those are refused (exit 2); an absent key outside
// those trees is still skipped, since a global key and a misspelled one
// look the same from here, and the skip says so.
func TestE2EMissingKeyInANamespace(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	for _, c := range []struct{ key, want string }{
		{"net.ipv4.conf.lo.nosuch", "this kernel has no such key"},
		{"net.ipv4.conf.lo", "is a directory of keys"},
	} {
		p := writeProfile(t, "typo.yaml", "sysctl:\n  "+c.key+": \"1\"\n")
		out, errOut, code := n.Hostprep("tune", "plan", "--profile", p)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, want 2 saying %q:\n%s%s", c.key, code, c.want, out, errOut)
		}
	}
	p := writeProfile(t, "global.yaml", "sysctl:\n  net.ipv4.nosuch: \"1\"\n")
	out, errOut, code := n.Hostprep("tune", "plan", "--profile", p)
	if code != 0 || !strings.Contains(out+errOut, "misspelled") {
		t.Errorf("net.ipv4.nosuch: exit %d, want 0 and a skip that names a misspelling as possible:\n%s%s", code, out, errOut)
	}
}
