package sysval

import "testing"

// TestTextValueKeepsInnerWhiteSpace: a text value is compared and
// targeted as the kernel keeps it, inner white space included
// ("/tmp/core  x %e" is another file than "/tmp/core x %e"), while a
// numeric vector compares field by field whatever separates its fields.
func TestTextValueKeepsInnerWhiteSpace(t *testing.T) {
	const two, one, tab = "/tmp/core  x %e", "/tmp/core x %e", "/tmp/core\tx %e"
	if Equal(two, one) || Equal(tab, one) || Equal(two, tab) {
		t.Errorf("text values differing in inner white space compare equal")
	}
	if !Equal(" "+two+"\n", two) {
		t.Errorf("a text value with blanks around it differs from the trimmed one")
	}
	if !Equal("4096\t131072\t6291456", "4096 131072  6291456") || !Equal("0x20", "32") {
		t.Errorf("numeric vectors no longer compare field by field")
	}
	for _, v := range []string{two, tab} {
		if got := Normalize(v); got != v {
			t.Errorf("Normalize(%q) = %q", v, got)
		}
		if got, err := Target(one, v, Exact); err != nil || got != v {
			t.Errorf("Target(exact %q) = %q, %v", v, got, err)
		}
		if Satisfies(one, v, Exact) {
			t.Errorf("%q satisfies exact %q", one, v)
		}
	}
}
