package kernelnum

import "testing"

// The kernel's base-0 reading: hex, octal, decimal, a sign only in
// front, and none of Go's own literal forms.
func TestUint(t *testing.T) {
	for in, want := range map[string]int64{
		"65536": 65536, "0x10000": 65536, "0X10": 16, "0100000": 32768, "0": 0, "00": 0,
		"-1": -1, "1_000": -2, "0o17": -2, "0b1": -2, "+5": -2, "": -2, "0x": -2, "08": -2, "18446744073709551616": -2,
	} {
		got, ok := Uint(in)
		switch {
		case want == -2 && ok:
			t.Errorf("Uint(%q) = %d, want not a number", in, got)
		case want == -1 && ok:
			t.Errorf("Uint(%q) = %d, want refused (negative)", in, got)
		case want >= 0 && (!ok || got != uint64(want)):
			t.Errorf("Uint(%q) = %d %v, want %d", in, got, ok, want)
		}
	}
	if n, ok := Parse("-0x10"); !ok || n.Int64() != -16 {
		t.Errorf("Parse(-0x10) = %v %v, want -16", n, ok)
	}
}
