package sysval

import (
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/sysctlval"
)

// PortSetKeys are the sysctl keys whose value is a set of ports, which
// the kernel reads and prints with proc_do_large_bitmap: a list of
// ports and ranges in any order, with duplicates and overlaps, printed
// back sorted and merged ("8084,8083" and "8083-8084,8084" both print
// "8083-8084").
var PortSetKeys = map[string]bool{"net.ipv4.ip_local_reserved_ports": true}

// portBitmapLen is the bitmap length of ip_local_reserved_ports (65536
// ports: 0-65535).
const portBitmapLen = 65536

// KernelPorts is what the kernel prints for a port set key after v is
// written to it (kernelPortRanges, printed sorted and merged as
// sysctlval.FormatPortSet prints them); ok is false when the kernel
// refuses the write (EINVAL) and keeps the set it had.
func KernelPorts(v string) (string, bool) {
	rs, ok := kernelPortRanges(v)
	if !ok {
		return "", false
	}
	return sysctlval.FormatPortSet(rs), true
}

// kernelPortRanges reads v as proc_do_large_bitmap (kernel/sysctl.c)
// reads a write to a port set key: an optional leading newline; then
// items "N" or "A-B" (A <= B, each below 65536, numbers read with base
// 0: 0x hexadecimal, a leading 0 octal, no sign, no blank), each followed
// by a comma, a newline or the end; a trailing comma or newline is
// taken. ok is false when the kernel refuses the write. White space
// around v (which systemd-sysctl and procps strip from a sysctl.d line,
// and which /proc/sys ends its value with) is dropped first.
func kernelPortRanges(v string) (rs []sysctlval.PortRange, ok bool) {
	s := strings.TrimSpace(v)
	for s != "" {
		a, rest, ok := bitmapNumber(s)
		if !ok {
			return nil, false
		}
		b := a
		if strings.HasPrefix(rest, "-") {
			if b, rest, ok = bitmapNumber(rest[1:]); !ok || a > b {
				return nil, false
			}
		}
		if rest != "" && rest[0] != ',' && rest[0] != '\n' {
			return nil, false
		}
		rs = append(rs, sysctlval.PortRange{Lo: a, Hi: b})
		if rest != "" {
			rest = rest[1:]
		}
		s = strings.TrimPrefix(rest, "\n")
	}
	return rs, true
}

// bitmapNumber reads one port at the start of s as proc_get_long does
// for proc_do_large_bitmap (a digit first, strtoul with base 0), below
// portBitmapLen, and returns the rest.
func bitmapNumber(s string) (int, string, bool) {
	end := 0
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || s[end] == 'x' || s[end] == 'X' || (end > 0 && isHex(s[end]))) {
		end++
	}
	if end == 0 || s[0] < '0' || s[0] > '9' {
		return 0, s, false
	}
	f, n, ok := kernelNumber([]byte(s[:end]))
	if !ok || n != end {
		return 0, s, false
	}
	p, err := strconv.Atoi(f)
	if err != nil || p < 0 || p >= portBitmapLen {
		return 0, s, false
	}
	return p, s[end:], true
}

// EqualKey is Equal for the value of key: two spellings of the same set
// of a PortSetKeys key ("8083,8084" and "8083-8084") are equal when the
// kernel takes both; any other key, or a value the kernel refuses,
// compares as Equal does.
func EqualKey(key, a, b string) bool {
	if PortSetKeys[key] {
		x, ok1 := KernelPorts(a)
		y, ok2 := KernelPorts(b)
		if ok1 && ok2 {
			return x == y
		}
	}
	return Equal(a, b)
}

// SatisfiesKey is Satisfies for the value of key: a PortSetKeys value
// satisfies want when every port of want is in it (a superset: a set of
// ports has no at-least or at-most, and ports something else reserves
// besides hostprep's do no harm), when the kernel takes both; a value
// the kernel refuses compares as Satisfies does.
func SatisfiesKey(key, have, want, mode string) bool {
	if PortSetKeys[key] {
		h, ok1 := kernelPortRanges(have)
		w, ok2 := kernelPortRanges(want)
		if ok1 && ok2 {
			for _, r := range w {
				for p := r.Lo; p <= r.Hi; p++ {
					if !sysctlval.ContainsPort(h, p) {
						return false
					}
				}
			}
			return true
		}
	}
	return Satisfies(have, want, mode)
}
