package sysval

import (
	"strings"
	"testing"
)

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

// Values in sysctl.d files are read as the kernel reads a number written
// to /proc/sys (proc_get_long, strtoul base 0): 0x is hex, a leading 0
// octal; Go's 0o, 0b and 1_000 forms are not numbers to the kernel. An
// octal 0100000 (32768) does not satisfy at-least 40000, and an image's
// 0x10000 (65536) is kept by at-least 4096 rather than lowered.
func TestKernelNumberSyntax(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		equal bool
	}{{"0x20", "32", true}, {"0X20", "32", true}, {"040", "32", true}, {"0", "0", true}, {"-1", "-1", true}, {"0100000", "100000", false}} {
		if got := Equal(c.a, c.b); got != c.equal {
			t.Errorf("Equal(%q, %q) = %v, want %v", c.a, c.b, got, c.equal)
		}
	}
	if Satisfies("0100000", "40000", AtLeast) {
		t.Error("octal 0100000 (32768) satisfies at-least 40000")
	}
	if got, err := Target("0x10000", "4096", AtLeast); err != nil || got != "0x10000" {
		t.Errorf("Target(0x10000, at-least 4096) = %q, %v; want it kept", got, err)
	}
	for _, v := range []string{"4_000_000", "0o10", "0b1", "+5", "0x", "1 2"} {
		if n, ok := Uint(v); ok {
			t.Errorf("Uint(%q) = %d, want not a number to the kernel", v, n)
		}
	}
	if n, ok := Uint("0x300000"); !ok || n != 3145728 {
		t.Errorf("Uint(0x300000) = %d %v", n, ok)
	}
}

// Written reads a value as the kernel's proc_dointvec does.
func TestWritten(t *testing.T) {
	for _, c := range []struct {
		v    string
		n    int
		want string
		ok   bool
	}{
		{"32768 # keep", 1, "32768", true},
		{"15 ; x", 1, "15", true},
		{"1024 4096 16777216 1", 3, "1024 4096 16777216", true},
		{"32768 65535", 1, "32768", true},
		{"0x1000", 1, "4096", true},
		{"010000", 1, "4096", true},
		{"-1", 1, "-1", true},
		{" \t32768\n", 1, "32768", true},
		{"32768\u00a0", 1, "", false},
		{"1000x", 1, "", false},
		{"+5", 1, "", false},
		{"08", 1, "", false},
		{"", 1, "", false},
		{"# x", 1, "", false},
		{"99999999999999999999999", 1, "", false},
		{"4096 131072", 3, "4096 131072", true},
		{"4096 x", 3, "4096", false},
	} {
		got, ok := Written(c.v, c.n)
		if strings.Join(got, " ") != c.want || ok != c.ok {
			t.Errorf("Written(%q, %d) = %q %v, want %q %v", c.v, c.n, got, ok, c.want, c.ok)
		}
	}
}
