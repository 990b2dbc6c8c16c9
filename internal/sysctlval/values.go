// Package sysctlval is the grammar of sysctl values as the kernel prints
// and reads them under /proc/sys: whole-number fields ("4096 131072
// 6291456"), a port range ("32768 60999"), a port set ("1883,8000-8010"),
// and the table of the bounds the kernel puts on them. A profile's values
// are parsed with it once, when the profile is loaded (Value, which
// profiles.Sysctl carries); tune parses what it reads from the host and
// the kernel with the same functions.
package sysctlval

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/kernelnum"
	"github.com/hostprep/hostprep/internal/plural"
)

// Fields parses the value of a sysctl as the kernel prints it under
// /proc/sys: one or more whole numbers separated by white space (tabs or
// spaces), e.g. "4096\t131072\t6291456" for net.ipv4.tcp_rmem. Negative
// numbers are accepted (some keys use -1).
//
// It returns an error for an empty value or a field that is not a base-10
// integer fitting in int64.
func Fields(v string) ([]int64, error) {
	fs := strings.Fields(v)
	if len(fs) == 0 {
		return nil, fmt.Errorf("empty value")
	}
	out := make([]int64, len(fs))
	for i, f := range fs {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("field %d %q is not a whole number", i+1, f)
		}
		out[i] = n
	}
	return out, nil
}

// KeyFields is the number of fields the kernel expects in the value of a
// known multi-value key: 3 for net.ipv4.tcp_rmem, tcp_wmem, tcp_mem and
// udp_mem (min, default/pressure, max), 2 for net.ipv4.ip_local_port_range
// (low, high). It returns 0 for any other key (single value or unknown).
func KeyFields(key string) int {
	switch key {
	case "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_mem", "net.ipv4.udp_mem":
		return 3
	case "net.ipv4.ip_local_port_range":
		return 2
	}
	return 0
}

// PortRange is an inclusive range of ports, Lo <= Hi. A single port has
// Lo == Hi.
type PortRange struct {
	Lo int `json:"lo"`
	Hi int `json:"hi"`
}

// String formats the range as the kernel does in ip_local_reserved_ports:
// "1883" or "8000-8010".
func (r PortRange) String() string {
	if r.Lo == r.Hi {
		return strconv.Itoa(r.Lo)
	}
	return strconv.Itoa(r.Lo) + "-" + strconv.Itoa(r.Hi)
}

// Contains reports whether port lies in the range.
func (r PortRange) Contains(port int) bool { return port >= r.Lo && port <= r.Hi }

// ParsePortRange parses a net.ipv4.ip_local_port_range value, two port
// numbers separated by white space ("32768\t60999"), and returns the low
// and high end.
//
// It enforces what the kernel's own handler (ipv4_local_port_range in
// net/ipv4/sysctl_net_ipv4.c) enforces regardless of the host: each end in
// 1..65535 and low <= high. The host-dependent rule, low >=
// net.ipv4.ip_unprivileged_port_start, is left to the caller (profiles'
// Validate checks it against the kernel default 1024 or the profile's own
// value).
func ParsePortRange(v string) (lo, hi int, err error) {
	fs := strings.Fields(v)
	if len(fs) != 2 {
		return 0, 0, fmt.Errorf("want two port numbers \"low high\", got %s", plural.N(len(fs), "field"))
	}
	var p [2]int
	for i, f := range fs {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 65535 {
			return 0, 0, fmt.Errorf("%q is not a port number 1..65535", f)
		}
		p[i] = n
	}
	if p[0] > p[1] {
		return 0, 0, fmt.Errorf("low end %d is above high end %d", p[0], p[1])
	}
	return p[0], p[1], nil
}

// ParsePortSet parses a net.ipv4.ip_local_reserved_ports value: a
// comma-separated list of ports and inclusive ranges, "1883,8000-8010"
// (Documentation/networking/ip-sysctl.rst). White space around items is
// ignored; an empty (or all-space) value is no ports and returns nil.
// Ports are 0..65535, as in the kernel's bitmap.
//
// The result is in input order and not merged; use NormalizePortRanges or
// FormatPortSet to sort and merge.
func ParsePortSet(v string) ([]PortRange, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	var out []PortRange
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("empty item in %q (want \"1883,8000-8010\")", v)
		}
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := parsePort0(lo)
		if err != nil {
			return nil, fmt.Errorf("%q: %v", item, err)
		}
		b := a
		if isRange {
			if b, err = parsePort0(hi); err != nil {
				return nil, fmt.Errorf("%q: %v", item, err)
			}
			if a > b {
				return nil, fmt.Errorf("%q: range start %d is above its end %d", item, a, b)
			}
		}
		out = append(out, PortRange{Lo: a, Hi: b})
	}
	return out, nil
}

func parsePort0(s string) (int, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("%q is not a port number 0..65535", s)
	}
	return n, nil
}

// NormalizePortRanges returns rs sorted by start with overlapping and
// adjacent ranges merged ("1883,1884" -> "1883-1884"). rs is not changed.
func NormalizePortRanges(rs []PortRange) []PortRange {
	if len(rs) == 0 {
		return nil
	}
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b PortRange) int { return a.Lo - b.Lo })
	out := []PortRange{s[0]}
	for _, r := range s[1:] {
		last := &out[len(out)-1]
		if r.Lo <= last.Hi+1 {
			last.Hi = max(last.Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// FormatPortSet formats ranges as the kernel prints
// net.ipv4.ip_local_reserved_ports: sorted, merged, comma-separated,
// "1883,8083-8084,8883,18083"; no ranges give "".
func FormatPortSet(rs []PortRange) string {
	n := NormalizePortRanges(rs)
	s := make([]string, len(n))
	for i, r := range n {
		s[i] = r.String()
	}
	return strings.Join(s, ",")
}

// ContainsPort reports whether any range in rs contains port.
func ContainsPort(rs []PortRange, port int) bool {
	for _, r := range rs {
		if r.Contains(port) {
			return true
		}
	}
	return false
}

// PortRangeKey and PortSetKey are the keys whose values are a port range
// and a port set.
const (
	PortRangeKey = "net.ipv4.ip_local_port_range"
	PortSetKey   = "net.ipv4.ip_local_reserved_ports"
)

// Value is one sysctl value of a profile, parsed once, when the profile
// is loaded: the text as written and its typed forms. Which forms are
// set depends on the text and the key, not on whether the value is valid
// for the key (profiles' Validate judges that).
type Value struct {
	// Text is the value as written, which the rest was parsed from.
	Text string
	// Normal is the value as tune writes it to /proc/sys and its
	// sysctl.d file, and as the kernel trial tries it (the package's
	// Normal): trimmed, and a numeric vector's fields separated by one
	// space; for a valid PortSetKey value the set as the kernel prints
	// it (FormatPortSet: "8083, 8084" is "8083-8084"), since the kernel
	// refuses a blank around an item.
	Normal string
	// Fields are its whole-number fields (Fields); nil when it is empty
	// or a field is not a base-10 whole number.
	Fields []int64
	// Ports is the set of ports of a PortSetKey value (ParsePortSet), in
	// the order written; nil for other keys, an empty set or a value
	// that is not a port set.
	Ports []PortRange
	// PortSet is true when Text is a valid PortSetKey value (an empty
	// one included).
	PortSet bool

	parsed bool // made by Parse
}

// Parse parses v, the value of key as a profile writes it, into its
// typed forms. It never fails: a form the text does not have is left
// unset.
func Parse(key, v string) Value {
	out := Value{Text: v, Normal: Normal(v), parsed: true}
	out.Fields, _ = Fields(v)
	if key == PortSetKey {
		rs, err := ParsePortSet(v)
		out.Ports, out.PortSet = rs, err == nil
		if err == nil {
			out.Normal = FormatPortSet(rs)
		}
	}
	return out
}

// Normal is v as hostprep writes and compares it: without the white
// space around it (which the kernel, procps and systemd-sysctl drop too)
// and, when every field is a number as the kernel reads one
// (kernelnum.Parse), with its fields joined by one space: the kernel
// prints a vector such as tcp_rmem with tabs, a profile writes spaces.
// Any other value is text the kernel keeps as written, inner white space
// included (kernel.core_pattern "/tmp/core  x %e" names another file than
// "/tmp/core x %e"), so only its ends are trimmed.
func Normal(v string) string {
	t := strings.TrimSpace(v)
	f := strings.Fields(t)
	for _, x := range f {
		if _, ok := kernelnum.Parse(x); !ok {
			return t
		}
	}
	return strings.Join(f, " ")
}

// Of says whether x was parsed from v: false for the zero Value (an entry
// never parsed) and for one whose text has since changed.
func (x Value) Of(v string) bool { return x.parsed && x.Text == v }

// Range is the port range of a PortRangeKey value: its two fields, ok
// false when it has not exactly two.
func (x Value) Range() (lo, hi int64, ok bool) {
	if len(x.Fields) != 2 {
		return 0, 0, false
	}
	return x.Fields[0], x.Fields[1], true
}

// Number is the value of a one-number key, ok false when it is not one
// whole number.
func (x Value) Number() (int64, bool) {
	if len(x.Fields) != 1 {
		return 0, false
	}
	return x.Fields[0], true
}
