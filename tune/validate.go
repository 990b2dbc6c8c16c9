package tune

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/sysval"
)

// validateStatic repeats the host-independent rules tune relies on, so a
// Profile built in code (not through profiles.Load) cannot slip past them:
// a known mode, a non-empty value, ordered tcp_rmem/tcp_wmem/tcp_mem
// triples, a well-formed port range.
func validateStatic(p *profiles.Profile) error {
	var errs []string
	keys := make([]string, 0, len(p.Sysctl))
	for k := range p.Sysctl {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s := p.Sysctl[k]
		if strings.TrimSpace(k) == "" || strings.ContainsAny(k, " /\t") {
			errs = append(errs, fmt.Sprintf("sysctl key %q: want a key spelled as the kernel does, e.g. net.core.somaxconn", k))
			continue
		}
		switch s.Mode {
		case "", profiles.Exact, profiles.AtLeast, profiles.AtMost:
		default:
			errs = append(errs, fmt.Sprintf("sysctl %s: mode %q: want exact, at-least or at-most", k, s.Mode))
		}
		if strings.TrimSpace(s.Value) == "" && k != keyReservedPorts {
			errs = append(errs, fmt.Sprintf("sysctl %s: empty value: give the value as the kernel prints it", k))
			continue
		}
		if n := profiles.KeyFields(k); n > 0 {
			f := sysval.Fields(s.Value)
			if len(f) != n {
				errs = append(errs, fmt.Sprintf("sysctl %s = %q: want %d fields, got %d", k, s.Value, n, len(f)))
				continue
			}
			fs, err := profiles.Fields(s.Value)
			if err != nil {
				errs = append(errs, fmt.Sprintf("sysctl %s = %q: %v", k, s.Value, err))
				continue
			}
			if n == 3 && !(fs[0] <= fs[1] && fs[1] <= fs[2]) {
				errs = append(errs, fmt.Sprintf("sysctl %s = %q: want min <= default <= max", k, s.Value))
			}
		}
		if k == keyPortRange {
			if _, _, err := profiles.ParsePortRange(s.Value); err != nil {
				errs = append(errs, fmt.Sprintf("sysctl %s = %q: %v", k, s.Value, err))
			}
		}
	}
	for _, port := range p.ReservePorts {
		if port < 1 || port > 65535 {
			errs = append(errs, fmt.Sprintf("reserve_ports: %d is not a port 1..65535", port))
		}
	}
	if len(errs) > 0 {
		return exitcode.BadInputf("profile %s: %s", p.Name, strings.Join(errs, "\nprofile "+p.Name+": "))
	}
	return nil
}
