package sysval

import (
	"strconv"
	"strings"
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
// written to it, as proc_do_large_bitmap (kernel/sysctl.c) reads a
// write: an optional leading newline; then items "N" or "A-B" (A <= B,
// each below 65536, numbers read with base 0: 0x hexadecimal, a leading
// 0 octal, no sign, no blank), each followed by a comma, a newline or
// the end; a trailing comma or newline is taken. ok is false when the
// kernel refuses the write (EINVAL) and keeps the set it had. White
// space around v (which systemd-sysctl and procps strip from a
// sysctl.d line, and which /proc/sys ends its value with) is dropped
// first.
func KernelPorts(v string) (string, bool) {
	s := strings.TrimSpace(v)
	var set [portBitmapLen]bool
	for s != "" {
		a, rest, ok := bitmapNumber(s)
		if !ok {
			return "", false
		}
		b := a
		if strings.HasPrefix(rest, "-") {
			if b, rest, ok = bitmapNumber(rest[1:]); !ok || a > b {
				return "", false
			}
		}
		if rest != "" && rest[0] != ',' && rest[0] != '\n' {
			return "", false
		}
		for p := a; p <= b; p++ {
			set[p] = true
		}
		if rest != "" {
			rest = rest[1:]
		}
		s = strings.TrimPrefix(rest, "\n")
	}
	return formatPorts(set[:]), true
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

// formatPorts prints a bitmap as the kernel does: runs as "A-B", single
// ports as "N", joined by commas.
func formatPorts(set []bool) string {
	var out []string
	for p := 0; p < len(set); p++ {
		if !set[p] {
			continue
		}
		q := p
		for q+1 < len(set) && set[q+1] {
			q++
		}
		if q == p {
			out = append(out, strconv.Itoa(p))
		} else {
			out = append(out, strconv.Itoa(p)+"-"+strconv.Itoa(q))
		}
		p = q
	}
	return strings.Join(out, ",")
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
		if h, ok := portSet(have); ok {
			if w, ok := portSet(want); ok {
				for p := range w {
					if w[p] && !h[p] {
						return false
					}
				}
				return true
			}
		}
	}
	return Satisfies(have, want, mode)
}

// portSet is the bitmap of ports the kernel keeps after v is written
// to a PortSetKeys key; false when it refuses v.
func portSet(v string) ([]bool, bool) {
	k, ok := KernelPorts(v)
	if !ok {
		return nil, false
	}
	set := make([]bool, portBitmapLen)
	for _, item := range strings.Split(k, ",") {
		if item == "" {
			continue
		}
		a, b, _ := strings.Cut(item, "-")
		lo, _ := strconv.Atoi(a)
		hi := lo
		if b != "" {
			hi, _ = strconv.Atoi(b)
		}
		for p := lo; p <= hi; p++ {
			set[p] = true
		}
	}
	return set, true
}
