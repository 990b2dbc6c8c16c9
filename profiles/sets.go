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
//     its mode, optional flag and comment (if_refused goes back to error:
//     the value is the caller's); a key the profile lacks is added with
//     mode exact;
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
		if err := p.applySet(s); err != nil {
			return err
		}
	}
	return nil
}

// applySet applies one --set "key=value" s; errors are exitcode.BadInput
// naming s.
func (p *Profile) applySet(s string) error {
	key, val, ok := strings.Cut(s, "=")
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	if !ok || key == "" {
		return exitcode.BadInputf("--set %q: %s", s, setUsage)
	}
	pos := srcPos{Set: s}
	switch {
	case IsSysctlKey(key):
		return p.setSysctl(s, pos, key, val)
	case key == "limits.nofile.soft" || key == "limits.nofile.hard":
		return p.setNofile(s, pos, key, val)
	case key == "preflight.sockets" || key == "preflight.conn_rate" || key == "preflight.role":
		return p.setPreflight(s, pos, key, val)
	case key == "reserve_ports":
		return p.setReservePorts(s, pos, val)
	case slashForm(key):
		return exitcode.BadInputf("--set %q: sysctl key %q: %s", key+"=…", key, checkKey(key))
	}
	// The value is not echoed: a key --set does not know may be one that
	// holds a secret (probe.mqtt.password=...), which is never printed.
	return exitcode.BadInputf("--set %q: unknown key %q (its value is not shown); %s", key+"=…", key, setUsage)
}

// setWhole parses val as a whole number for --set s of key.
func setWhole(s, key, val string) (int, error) {
	n, err := strconv.Atoi(val)
	if err != nil || !decimalRE.MatchString(val) {
		return 0, exitcode.BadInputf("--set %q: %s needs a whole number in decimal digits, e.g. %s=1048576", s, key, key)
	}
	return n, nil
}

// setSysctl sets sysctl key to val (Exact unless the profile has a mode
// for it); multi-value keys accept commas for spaces.
func (p *Profile) setSysctl(s string, pos srcPos, key, val string) error {
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
	// The value is the caller's own now: a refusal is an error, not
	// silently the nearest value the kernel takes.
	e.Value, e.IfRefused, e.Set = val, "", s
	p.Sysctl[key] = e
	p.src.set(pos, "sysctl", key)
	p.src.set(pos, "sysctl", key, "value")
	return nil
}

// setNofile sets limits.nofile.soft or .hard (file descriptors, >= 0).
func (p *Profile) setNofile(s string, pos srcPos, key, val string) error {
	n, err := setWhole(s, key, val)
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
	return nil
}

// setPreflight sets preflight.sockets, .conn_rate or .role.
func (p *Profile) setPreflight(s string, pos srcPos, key, val string) error {
	switch key {
	case "preflight.sockets":
		n, err := setWhole(s, key, val)
		if err != nil {
			return err
		}
		p.preflightTarget(pos).Sockets = n
	case "preflight.conn_rate":
		r, err := rate.Parse(val)
		if err != nil {
			return exitcode.BadInputf("--set %q: %s: %v", s, key, err)
		}
		p.preflightTarget(pos).ConnRate = r
	default:
		p.preflightTarget(pos).Role = val
	}
	p.src.set(pos, "preflight", strings.TrimPrefix(key, "preflight."))
	return nil
}

// preflightTarget returns p.Preflight, made when the profile has none;
// a section made here is placed at pos, so that a problem with a field
// nothing set (sockets 0 after --set preflight.role=loadgen) names the
// --set or flag that made it.
func (p *Profile) preflightTarget(pos srcPos) *PreflightTarget {
	if p.Preflight == nil {
		p.Preflight = &PreflightTarget{}
		p.src.set(pos, "preflight")
	}
	return p.Preflight
}

// DefaultRole is the preflight role of a profile's preflight section that
// names none, as of `hostprep preflight` without --role.
const DefaultRole = "broker"

// Override is a command-line flag that sets a profile field: --sockets,
// --role or --conn-rate set preflight.sockets, .role or .conn_rate (see
// LoadWith).
type Override struct {
	// Flag is the flag as the user gave it, for errors: "--sockets 100".
	Flag string
	// Key is preflight.sockets, preflight.role or preflight.conn_rate.
	Key string
	// Value is the flag's value: a whole number, a role, a rate
	// (connections/s).
	Value string
}

// applyOverride applies flag o (its value already parsed by the flag
// package); a value that breaks a rule is found by Validate, naming it.
func (p *Profile) applyOverride(o Override) error {
	if p.src == nil {
		p.src = &sources{}
	}
	pos := srcPos{Flag: o.Flag}
	switch o.Key {
	case "preflight.sockets":
		n, err := strconv.Atoi(o.Value)
		if err != nil {
			return exitcode.BadInputf("%s: want a whole number of sockets, e.g. 100000", o.Flag)
		}
		p.preflightTarget(pos).Sockets = n
	case "preflight.conn_rate":
		r, err := rate.Parse(o.Value)
		if err != nil {
			return exitcode.BadInputf("%s: %v", o.Flag, err)
		}
		p.preflightTarget(pos).ConnRate = r
	case "preflight.role":
		p.preflightTarget(pos).Role = o.Value
	default:
		return exitcode.BadInputf("%s: sets %s, which no flag may override", o.Flag, o.Key)
	}
	p.src.set(pos, "preflight", strings.TrimPrefix(o.Key, "preflight."))
	return nil
}

// setReservePorts sets reserve_ports from a comma list of ports.
func (p *Profile) setReservePorts(s string, pos srcPos, val string) error {
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
	return nil
}
