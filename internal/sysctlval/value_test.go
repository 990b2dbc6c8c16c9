package sysctlval

import (
	"slices"
	"testing"
)

// TestParseTypesAValue guards the typed forms a profile's value is parsed
// into once: its text with one space between fields, whole-number fields, a port range's ends, a port set (an
// empty one included), and Of telling a parsed value from the zero Value
// or from one whose text changed.
func TestParseTypesAValue(t *testing.T) {
	v := Parse("net.ipv4.tcp_rmem", "4096\t131072  6291456")
	if !slices.Equal(v.Fields, []int64{4096, 131072, 6291456}) || v.Normal != "4096 131072 6291456" || v.Ports != nil || v.PortSet {
		t.Errorf("tcp_rmem: %+v", v)
	}
	if lo, hi, ok := Parse(PortRangeKey, "1024 65535").Range(); !ok || lo != 1024 || hi != 65535 {
		t.Errorf("port range: %d %d %v", lo, hi, ok)
	}
	if n, ok := Parse("net.core.somaxconn", "4096").Number(); !ok || n != 4096 {
		t.Errorf("somaxconn: %d %v", n, ok)
	}
	if _, ok := Parse("net.core.somaxconn", "4096 1").Number(); ok {
		t.Error("two fields read as one number")
	}
	set := Parse(PortSetKey, "8883,1883,8000-8010")
	if !set.PortSet || !slices.Equal(set.Ports, []PortRange{{Lo: 8883, Hi: 8883}, {Lo: 1883, Hi: 1883}, {Lo: 8000, Hi: 8010}}) || set.Fields != nil {
		t.Errorf("port set: %+v", set)
	}
	// the kernel refuses a blank around an item: Normal, what tune tries
	// and writes, is the set as the kernel prints it
	for text, want := range map[string]string{"8083, 8084": "8083-8084", "9000-9010, 8080 ,7000": "7000,8080,9000-9010", " 1883 ": "1883"} {
		if got := Parse(PortSetKey, text).Normal; got != want {
			t.Errorf("Parse(%q).Normal = %q, want %q", text, got, want)
		}
	}
	if e := Parse(PortSetKey, ""); !e.PortSet || e.Ports != nil {
		t.Errorf("empty port set: %+v", e)
	}
	if bad := Parse(PortSetKey, "1883,,"); bad.PortSet {
		t.Errorf("bad port set parsed: %+v", bad)
	}
	if !set.Of("8883,1883,8000-8010") || set.Of("1883") || (Value{}).Of("") {
		t.Error("Of: a parsed value is of its text only; the zero Value of none")
	}
}
