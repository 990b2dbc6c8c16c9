package sysctlval

import (
	"fmt"
	"strconv"
	"strings"
)

// Bound is one limit the kernel puts on a sysctl value or one field of it.
type Bound struct {
	// Key as the kernel spells it.
	Key string
	// Field is 0 for a one-number key, else 1..3 for the fields of a
	// triple (tcp_rmem: 1 min, 2 default, 3 max).
	Field int
	// Min and Max are the values the kernel accepts (inclusive).
	Min, Max int64
	// Before is the first kernel version ("5.4") this bound no longer
	// applies to; "" for every kernel. A bound with Before is checked
	// against the host's kernel by tune, not by Validate.
	Before string
	// Source says where the bound comes from in the kernel.
	Source string
}

// IntMax is the largest value of a C int, which most sysctls are stored in.
const IntMax = 1<<31 - 1

// The fs.nr_open values a 64-bit kernel accepts.
const (
	// NrOpenMax is the largest fs.nr_open a 64-bit kernel accepts
	// (sysctl_nr_open_max in fs/file.c: INT_MAX rounded down to a multiple
	// of BITS_PER_LONG).
	NrOpenMax = 2147483584
	// NrOpenMin is the smallest fs.nr_open (BITS_PER_LONG).
	NrOpenMin = 64
)

const (
	srcInt         = "stored in a C int, written with proc_dointvec_minmax: a value outside the range is refused with EINVAL"
	srcTcpMem      = "tcp_rmem/tcp_wmem are int[3] (struct netns_ipv4, include/net/netns/ipv4.h; proc_dointvec_minmax in net/ipv4/sysctl_net_ipv4.c): every field is an int, one outside the range is refused with EINVAL"
	srcLongTriple  = "tcp_mem/udp_mem are long[3] in pages (proc_doulongvec_minmax, net/ipv4/sysctl_net_ipv4.c)"
	srcNrOpen      = "sysctl_nr_open_max in fs/file.c: INT_MAX rounded down to a multiple of BITS_PER_LONG on 64-bit; at least BITS_PER_LONG"
	srcFileMax     = "files_stat.max_files is an unsigned long written with proc_doulongvec_minmax, capped at LONG_MAX (fs/file_table.c)"
	srcSomaxconn54 = "before Linux 5.4 sk_max_ack_backlog is an unsigned short (u16, include/net/sock.h): kernels with commit 5f671d6b4ec3 (2015) refuse a larger somaxconn with EINVAL, older ones keep only the low 16 bits at listen() (262144 becomes 0); 5.4 made it an unsigned int"
	srcJiffies     = "seconds converted to jiffies with proc_dointvec_jiffies (kernel/sysctl.c): seconds x HZ must fit an int; HZ is a build option (100 to 1000), so the table holds the loosest bound, 21474836 at HZ=100, and the kernel trial finds this kernel's (2147483 at HZ=1000)"
	srcSwappiness  = "vm.swappiness is 0..100 before Linux 5.8 and 0..200 from 5.8 (mm/vmscan.c, kernel/sysctl.c)"
	srcTri         = "0..2 (proc_dointvec_minmax with extra2 = 2)"
	srcPort        = "a port number, 0..65535"
)

// KernelBounds is the one table of per-key kernel bounds; profiles'
// Validate checks the ones without Before, tune the version-dependent
// ones against the host's kernel.
var KernelBounds = []Bound{
	{Key: "fs.file-max", Min: 0, Max: 1<<63 - 1, Source: srcFileMax},
	{Key: "fs.nr_open", Min: NrOpenMin, Max: NrOpenMax, Source: srcNrOpen},
	{Key: "net.core.somaxconn", Min: 0, Max: IntMax, Source: "struct netns_core.sysctl_somaxconn, " + srcInt},
	{Key: "net.core.somaxconn", Min: 0, Max: 65535, Before: "5.4", Source: srcSomaxconn54},
	{Key: "net.core.netdev_max_backlog", Min: 0, Max: IntMax, Source: "netdev_max_backlog (net/core/dev.c), " + srcInt},
	{Key: "net.core.rmem_default", Min: 0, Max: IntMax, Source: "sysctl_rmem_default (net/core/sock.c), " + srcInt},
	{Key: "net.core.wmem_default", Min: 0, Max: IntMax, Source: "sysctl_wmem_default (net/core/sock.c), " + srcInt},
	{Key: "net.core.rmem_max", Min: 0, Max: IntMax, Source: "sysctl_rmem_max (net/core/sock.c), " + srcInt},
	{Key: "net.core.wmem_max", Min: 0, Max: IntMax, Source: "sysctl_wmem_max (net/core/sock.c), " + srcInt},
	{Key: "net.core.optmem_max", Min: 0, Max: IntMax, Source: "sysctl_optmem_max (net/core/sock.c), " + srcInt},
	{Key: "net.ipv4.tcp_max_syn_backlog", Min: 0, Max: IntMax, Source: "netns_ipv4.sysctl_max_syn_backlog, " + srcInt},
	{Key: "net.ipv4.tcp_fin_timeout", Min: 0, Max: IntMax / 100, Source: srcJiffies},
	{Key: "net.ipv4.tcp_max_tw_buckets", Min: 0, Max: IntMax, Source: "inet_timewait_death_row.sysctl_max_tw_buckets, " + srcInt},
	{Key: "net.ipv4.tcp_max_orphans", Min: 0, Max: IntMax, Source: "sysctl_tcp_max_orphans, " + srcInt},
	{Key: "net.ipv4.tcp_tw_reuse", Min: 0, Max: 2, Source: srcTri},
	{Key: "net.ipv4.tcp_syncookies", Min: 0, Max: 2, Source: srcTri},
	{Key: "net.ipv4.ip_unprivileged_port_start", Min: 0, Max: 65535, Source: srcPort},
	{Key: "net.netfilter.nf_conntrack_max", Min: 0, Max: IntMax, Source: "nf_conntrack_max (net/netfilter/nf_conntrack_standalone.c), " + srcInt},
	{Key: "net.nf_conntrack_max", Min: 0, Max: IntMax, Source: "nf_conntrack_max (net/netfilter/nf_conntrack_standalone.c), " + srcInt},
	{Key: "vm.max_map_count", Min: 0, Max: IntMax, Source: "sysctl_max_map_count (mm/mmap.c), " + srcInt},
	{Key: "vm.swappiness", Min: 0, Max: 200, Source: srcSwappiness},
	{Key: "vm.swappiness", Min: 0, Max: 100, Before: "5.8", Source: srcSwappiness},
	{Key: "net.ipv4.tcp_rmem", Field: 1, Min: 1, Max: IntMax, Source: srcTcpMem},
	{Key: "net.ipv4.tcp_rmem", Field: 2, Min: 1, Max: IntMax, Source: srcTcpMem},
	{Key: "net.ipv4.tcp_rmem", Field: 3, Min: 1, Max: IntMax, Source: srcTcpMem},
	{Key: "net.ipv4.tcp_wmem", Field: 1, Min: 1, Max: IntMax, Source: srcTcpMem},
	{Key: "net.ipv4.tcp_wmem", Field: 2, Min: 1, Max: IntMax, Source: srcTcpMem},
	{Key: "net.ipv4.tcp_wmem", Field: 3, Min: 1, Max: IntMax, Source: srcTcpMem},
	{Key: "net.ipv4.tcp_mem", Field: 1, Min: 0, Max: 1<<63 - 1, Source: srcLongTriple},
	{Key: "net.ipv4.tcp_mem", Field: 2, Min: 0, Max: 1<<63 - 1, Source: srcLongTriple},
	{Key: "net.ipv4.tcp_mem", Field: 3, Min: 0, Max: 1<<63 - 1, Source: srcLongTriple},
	{Key: "net.ipv4.udp_mem", Field: 1, Min: 0, Max: 1<<63 - 1, Source: srcLongTriple},
	{Key: "net.ipv4.udp_mem", Field: 2, Min: 0, Max: 1<<63 - 1, Source: srcLongTriple},
	{Key: "net.ipv4.udp_mem", Field: 3, Min: 0, Max: 1<<63 - 1, Source: srcLongTriple},
}

var tripleNames = [...]string{"", "min", "default", "max"}

// fieldName names field i of key ("max" for tcp_rmem field 3).
func fieldName(key string, i int) string {
	if i == 0 {
		return "value"
	}
	if i == 2 && (key == "net.ipv4.tcp_mem" || key == "net.ipv4.udp_mem") {
		return "pressure"
	}
	if key == "net.ipv4.ip_local_port_range" && i <= 2 {
		return [...]string{"", "low", "high"}[i]
	}
	return tripleNames[i]
}

// BoundFault is one field of a value outside a bound of KernelBounds.
type BoundFault struct {
	Bound
	// Value is the field's number; Nearest the number in the bound
	// nearest to it (the bound's Min or Max).
	Value, Nearest int64
	// Msg names the key, the field, the value, the bound and its source.
	Msg string
}

// BoundFaults checks value of key against KernelBounds for the kernel
// release given ("6.1.0-18-amd64"; "" checks only the bounds that hold on
// every kernel): one BoundFault per bound broken, nil when all hold or
// the value is not numbers (other checks report that). The table is what
// is left where the running kernel cannot be asked.
func BoundFaults(key, value, kernel string) []BoundFault {
	f, err := Fields(value)
	if err != nil {
		return nil
	}
	var out []BoundFault
	for _, b := range KernelBounds {
		if b.Key != key {
			continue
		}
		if b.Before != "" && (kernel == "" || !KernelBefore(kernel, b.Before)) {
			continue
		}
		i := b.Field
		if i == 0 {
			i = 1
		}
		if len(f) < i || (b.Field == 0 && len(f) != 1) {
			continue
		}
		x := f[i-1]
		if x >= b.Min && x <= b.Max {
			continue
		}
		on := ""
		if b.Before != "" {
			on = fmt.Sprintf(" on this kernel (%s; before %s)", kernel, b.Before)
		}
		side, near := fmt.Sprintf("above the maximum %d", b.Max), b.Max
		if x < b.Min {
			side, near = fmt.Sprintf("below the minimum %d", b.Min), b.Min
		}
		msg := fmt.Sprintf("%s %q: field %s %d is %s, out of the range the kernel accepts%s, %d..%d (%s)", key, value, fieldName(key, b.Field), x, side, on, b.Min, b.Max, b.Source)
		if b.Field == 0 {
			msg = fmt.Sprintf("%s %d: %s, out of the range the kernel accepts%s, %d..%d (%s)", key, x, side, on, b.Min, b.Max, b.Source)
		}
		out = append(out, BoundFault{Bound: b, Value: x, Nearest: near, Msg: msg})
	}
	return out
}

// CheckBounds is BoundFaults' messages.
func CheckBounds(key, value, kernel string) []string {
	var out []string
	for _, f := range BoundFaults(key, value, kernel) {
		out = append(out, f.Msg)
	}
	return out
}

// FieldName names field i (1-based; 0 for a one-number key) of key:
// "max" for tcp_rmem field 3, "pressure" for tcp_mem field 2.
func FieldName(key string, i int) string { return fieldName(key, i) }

// KernelBefore reports whether kernel release rel ("4.15.0-213-generic")
// is older than version v ("5.4"); an unparsable release is not.
func KernelBefore(rel, v string) bool {
	parse := func(s string) (int, int, bool) {
		parts := strings.SplitN(s, ".", 3)
		if len(parts) < 2 {
			return 0, 0, false
		}
		maj, err1 := strconv.Atoi(parts[0])
		minor := strings.TrimLeftFunc(parts[1], func(r rune) bool { return false })
		if i := strings.IndexFunc(minor, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
			minor = minor[:i]
		}
		mi, err2 := strconv.Atoi(minor)
		return maj, mi, err1 == nil && err2 == nil
	}
	a1, a2, ok1 := parse(rel)
	b1, b2, ok2 := parse(v)
	if !ok1 || !ok2 {
		return false
	}
	return a1 < b1 || (a1 == b1 && a2 < b2)
}
