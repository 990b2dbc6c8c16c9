package sysval

import "testing"

func TestTarget(t *testing.T) {
	cases := []struct{ cur, want, mode, out string }{
		{"4096", "32768", AtLeast, "32768"},
		{"65535", "32768", AtLeast, "65535"},
		{"65535", "32768", AtMost, "32768"},
		{"100", "32768", AtMost, "100"},
		{"4096\t131072\t6291456", "1024 4096 16777216", Exact, "1024 4096 16777216"},
		// Field by field: a host higher in one field keeps that field.
		{"4096\t131072\t33554432", "4096 262144 16777216", AtLeast, "4096 262144 33554432"},
		{"4096\t131072\t33554432", "4096 262144 16777216", AtMost, "4096 131072 16777216"},
		{"9223372036854775807", "2097152", AtLeast, "9223372036854775807"},
		{"bbr", "cubic", Exact, "cubic"},
	}
	for _, c := range cases {
		got, err := Target(c.cur, c.want, c.mode)
		if err != nil || got != c.out {
			t.Errorf("Target(%q, %q, %s) = %q, %v; want %q", c.cur, c.want, c.mode, got, err, c.out)
		}
	}
	for _, c := range []struct{ cur, want, mode string }{
		{"1 2 3", "1 2", AtLeast},
		{"bbr", "cubic", AtLeast},
		{"1", "2", "more"},
	} {
		if _, err := Target(c.cur, c.want, c.mode); err == nil {
			t.Errorf("Target(%q, %q, %s): want an error", c.cur, c.want, c.mode)
		}
	}
}

func TestEqualAndSatisfies(t *testing.T) {
	if !Equal("4096\t131072", "4096 131072") || Equal("1 2", "1 2 3") || Equal("1", "2") {
		t.Error("Equal")
	}
	if !Satisfies("65535", "32768", AtLeast) || Satisfies("4096", "32768", AtLeast) || !Satisfies("15", "15", Exact) {
		t.Error("Satisfies")
	}
}
