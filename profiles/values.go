package profiles

import "github.com/hostprep/hostprep/internal/sysctlval"

// The grammar of sysctl values lives in internal/sysctlval, shared with
// tune, which parses the host's values with it; a loaded profile carries
// each value parsed (Sysctl.Parsed). These names keep profiles' own
// vocabulary.

// PortRange is an inclusive range of ports (sysctlval.PortRange).
type PortRange = sysctlval.PortRange

// Fields parses whole-number fields (sysctlval.Fields).
func Fields(v string) ([]int64, error) { return sysctlval.Fields(v) }

// KeyFields is the number of fields of a known multi-value key
// (sysctlval.KeyFields).
func KeyFields(key string) int { return sysctlval.KeyFields(key) }

// ParsePortRange parses a net.ipv4.ip_local_port_range value
// (sysctlval.ParsePortRange).
func ParsePortRange(v string) (lo, hi int, err error) { return sysctlval.ParsePortRange(v) }

// ParseReservedPorts parses a net.ipv4.ip_local_reserved_ports value
// (sysctlval.ParsePortSet).
func ParseReservedPorts(v string) ([]PortRange, error) { return sysctlval.ParsePortSet(v) }

// NormalizePortRanges sorts and merges ranges (sysctlval.NormalizePortRanges).
func NormalizePortRanges(rs []PortRange) []PortRange { return sysctlval.NormalizePortRanges(rs) }

// FormatReservedPorts formats ranges as the kernel prints
// net.ipv4.ip_local_reserved_ports (sysctlval.FormatPortSet).
func FormatReservedPorts(rs []PortRange) string { return sysctlval.FormatPortSet(rs) }

// ContainsPort reports whether any range in rs contains port.
func ContainsPort(rs []PortRange, port int) bool { return sysctlval.ContainsPort(rs, port) }

// KernelBounds is the one table of per-key kernel bounds, which
// Validate checks (sysctlval.KernelBounds).
var KernelBounds = sysctlval.KernelBounds

// CheckBounds is the messages of sysctlval.BoundFaults.
func CheckBounds(key, value, kernel string) []string {
	return sysctlval.CheckBounds(key, value, kernel)
}

// numericKeys are the one-number keys with their bounds on every kernel,
// from KernelBounds.
var numericKeys = func() map[string][2]int64 {
	m := map[string][2]int64{}
	for _, b := range KernelBounds {
		if b.Field == 0 && b.Before == "" {
			m[b.Key] = [2]int64{b.Min, b.Max}
		}
	}
	return m
}()
