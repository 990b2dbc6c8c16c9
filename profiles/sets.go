package profiles

import (
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/rate"
)

// IsSysctlKey reports whether a --set key names a sysctl: it contains a
// dot and starts with net., fs., vm. or kernel.
func IsSysctlKey(key string) bool {
	for _, p := range []string{"net.", "fs.", "vm.", "kernel."} {
		if strings.HasPrefix(key, p) && len(key) > len(p) {
			return true
		}
	}
	return false
}

const setUsage = "want key=value, where key is a sysctl (net.core.somaxconn=65535) or one of limits.nofile.soft, limits.nofile.hard, preflight.sockets, preflight.role, preflight.conn_rate, reserve_ports (reserve_ports=1883,8883)"

// ApplySets applies command-line overrides ("key=value", the --set flag of
// tune and ready) to p, in order, after includes:
//
//   - a sysctl key (net./fs./vm./kernel.) sets Sysctl[key].Value, keeping
//     its mode, optional flag and comment; a key the profile lacks is added
//     with mode exact;
//   - limits.nofile.soft=N / limits.nofile.hard=N (file descriptors);
//   - preflight.sockets=N, preflight.role=R, preflight.conn_rate=N (or N/s, N/m)
//     (connections/s);
//   - reserve_ports=1883,8883 replaces the list ("reserve_ports=" empties it).
//
// It does not validate the result; call Validate (Load does). A malformed
// set is an exitcode.BadInput error such as
// `--set "x": want key=value ...`; p may then be partly changed.
func ApplySets(p *Profile, sets []string) error {
	if p.src == nil {
		p.src = &sources{}
	}
	for _, s := range sets {
		key, val, ok := strings.Cut(s, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if !ok || key == "" {
			return exitcode.BadInputf("--set %q: %s", s, setUsage)
		}
		pos := srcPos{Set: s}
		whole := func() (int, error) {
			n, err := strconv.Atoi(val)
			if err != nil {
				return 0, exitcode.BadInputf("--set %q: %s needs a whole number, e.g. %s=1048576", s, key, key)
			}
			return n, nil
		}
		switch {
		case IsSysctlKey(key):
			if val == "" && key != "net.ipv4.ip_local_reserved_ports" {
				return exitcode.BadInputf("--set %q: empty value for %s; write it as the kernel prints it, e.g. %s=%s", s, key, key, strings.ReplaceAll(example(key), " ", ","))
			}
			if p.Sysctl == nil {
				p.Sysctl = map[string]Sysctl{}
			}
			e, had := p.Sysctl[key]
			if !had {
				e.Mode = Exact
			}
			// A shell makes "1024 65535" awkward; accept commas too for
			// multi-value keys: net.ipv4.tcp_rmem=4096,131072,6291456.
			if KeyFields(key) > 0 {
				val = strings.Join(strings.FieldsFunc(val, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }), " ")
			}
			e.Value = val
			p.Sysctl[key] = e
			p.src.set(pos, "sysctl", key)
			p.src.set(pos, "sysctl", key, "value")
		case key == "limits.nofile.soft" || key == "limits.nofile.hard":
			n, err := whole()
			if err != nil {
				return err
			}
			if n < 0 {
				return exitcode.BadInputf("--set %q: %s is a number of file descriptors, >= 1", s, key)
			}
			if p.Limits.Nofile == nil {
				p.Limits.Nofile = &Limit{}
			}
			if key == "limits.nofile.soft" {
				p.Limits.Nofile.Soft = uint64(n)
				p.src.set(pos, "limits", "nofile", "soft")
			} else {
				p.Limits.Nofile.Hard = uint64(n)
				p.src.set(pos, "limits", "nofile", "hard")
			}
		case key == "preflight.sockets":
			n, err := whole()
			if err != nil {
				return err
			}
			if p.Preflight == nil {
				p.Preflight = &PreflightTarget{}
			}
			p.Preflight.Sockets = n
			p.src.set(pos, "preflight", "sockets")
		case key == "preflight.conn_rate":
			r, err := rate.Parse(val)
			if err != nil {
				return exitcode.BadInputf("--set %q: %s: %v", s, key, err)
			}
			if p.Preflight == nil {
				p.Preflight = &PreflightTarget{}
			}
			p.Preflight.ConnRate = r
			p.src.set(pos, "preflight", "conn_rate")
		case key == "preflight.role":
			if p.Preflight == nil {
				p.Preflight = &PreflightTarget{}
			}
			p.Preflight.Role = val
			p.src.set(pos, "preflight", "role")
		case key == "reserve_ports":
			var ports []int
			for _, f := range strings.Split(val, ",") {
				f = strings.TrimSpace(f)
				if f == "" {
					continue
				}
				n, err := strconv.Atoi(f)
				if err != nil {
					return exitcode.BadInputf("--set %q: %q is not a port; want reserve_ports=1883,8883", s, f)
				}
				ports = append(ports, n)
			}
			p.ReservePorts = ports
			p.src.set(pos, "reserve_ports")
			for i := range ports {
				p.src.set(pos, "reserve_ports", strconv.Itoa(i))
			}
		default:
			return exitcode.BadInputf("--set %q: unknown key %q; %s", s, key, setUsage)
		}
	}
	return nil
}
