package tune

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/procnet"
	"github.com/hostprep/hostprep/internal/sysctlval"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/sysval"
)

// planPorts checks net.ipv4.ip_local_port_range against the host's
// net.ipv4.ip_unprivileged_port_start and adds listening ports and
// reserve_ports inside the (new) range to net.ipv4.ip_local_reserved_ports.
func (pl *Plan) planPorts(p *profiles.Profile, targets map[string]target, current map[string]string) error {
	rangeVal, err := pl.ephemeralRange(p, targets)
	if err != nil || rangeVal == "" {
		return err
	}
	lo, hi, err := sysctlval.ParsePortRange(rangeVal)
	if err != nil {
		return exitcode.Environmentf("tune: %s on this host is %q: %w", keyPortRange, rangeVal, err)
	}
	have, ok, err := pl.reservedNow(current)
	if err != nil || !ok {
		return err // !ok: a kernel without reserved ports
	}
	r := &reservation{lo: lo, hi: hi, want: slices.Clone(have), added: map[string][]string{}}
	if s, ok := p.Sysctl[keyReservedPorts]; ok {
		// parsed at load; a value that is no port set failed Validate
		r.want = append(r.want, s.Parsed.Ports...)
	}
	for _, port := range p.ReservePorts {
		r.add(port, "reserve_ports")
	}
	if !pl.env.ImageMode() {
		if err := pl.reserveListeners(r); err != nil {
			return err
		}
	}
	_, inProfile := p.Sysctl[keyReservedPorts]
	if !inProfile && r.n == 0 {
		return nil
	}
	t := targets[keyReservedPorts]
	t.value, t.present = sysctlval.FormatPortSet(r.want), true
	if comment := r.comment(); t.comment == "" {
		t.comment = comment
	} else if comment != "" {
		t.comment += "; " + comment
	}
	targets[keyReservedPorts] = t
	if !inProfile {
		// Derived, not in the profile: planRuntime picks it up (PlanFor
		// works on a copy of the caller's profile).
		p.Sysctl[keyReservedPorts] = profiles.Sysctl{Value: "", Comment: r.comment()}
	}
	return nil
}

// ephemeralRange is the port range after the apply: the profile's (the
// kernel's verdict on it, ip_unprivileged_port_start included, is
// judgeKernel's), with a parity warning; else the host's ("" when the kernel has none); the kernel
// default in image mode.
func (pl *Plan) ephemeralRange(p *profiles.Profile, targets map[string]target) (string, error) {
	t, ok := targets[keyPortRange]
	if !ok {
		if pl.env.ImageMode() {
			return defaultPortRange, nil
		}
		v, _, err := pl.current(keyPortRange)
		return v, err
	}
	lo, hi, err := sysctlval.ParsePortRange(t.value)
	if err != nil {
		return "", exitcode.BadInputf("sysctl %s = %q: %v", keyPortRange, t.value, err)
	}
	if lo >= hi {
		return "", exitcode.BadInputf("sysctl %s = %q: the low end must be below the high end, e.g. \"%d 65535\"", keyPortRange, t.value, lo)
	}
	if lo%2 == hi%2 {
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("sysctl %s = %q: both ends are %s; the kernel picks ports of one parity for connect() and the other for bind(), so an odd/even pair such as \"%d %d\" uses the range fully", keyPortRange, t.value, parity(lo), lo, hi-1))
	}
	return t.value, nil
}

// reservedNow is what net.ipv4.ip_local_reserved_ports holds now: live,
// or in image mode the value the image's sysctl configuration gives it
// at boot without hostprep's own file (reservedAtBoot), which hostprep's
// file, read later, would otherwise drop; ok is false on a kernel
// without the key. Errors: exitcode.Environment when the value or the
// image's configuration cannot be read.
func (pl *Plan) reservedNow(current map[string]string) ([]sysctlval.PortRange, bool, error) {
	cur, ok := current[keyReservedPorts]
	if !ok && pl.env.ImageMode() {
		v, where, err := pl.reservedAtBoot()
		if err != nil || v == "" {
			return nil, true, err
		}
		cur = v
		pl.Notes = append(pl.Notes, fmt.Sprintf("sysctl %s: the image's %s reserves %s at boot; hostprep's file, read after it, keeps those ports", keyReservedPorts, where, v))
	} else if !ok {
		v, exists, err := pl.current(keyReservedPorts)
		if err != nil || !exists {
			return nil, false, err
		}
		cur, current[keyReservedPorts] = v, v
	}
	have, err := sysctlval.ParsePortSet(cur)
	if err != nil {
		return nil, false, exitcode.Environmentf("tune: %s on this host is %q: %w", keyReservedPorts, cur, err)
	}
	return have, true, nil
}

// reservedAtBoot is the set of ports (as the kernel prints it, "" for
// none) the image's sysctl configuration reserves at boot when
// hostprep's sysctl.d file is left out, and the FILE:LINE that sets it:
// the last value the kernel takes (hostconf.Sysctl.LookupAccepted, as the
// loader leaves it). Errors: exitcode.Environment when a configuration
// file cannot be read.
func (pl *Plan) reservedAtBoot() (ports, where string, err error) {
	root := pl.env.bootRoot()
	s, err := hostconf.ReadSysctlOverlay(root, hostconf.DetectLoader(root), map[string][]byte{pl.env.sysctlConf(): nil})
	if err != nil {
		return "", "", exitcode.Environmentf("tune: boot configuration: %w", err)
	}
	set, ok := s.LookupAccepted(keyReservedPorts, func(v string) bool {
		_, ok := sysval.KernelPorts(v)
		return ok
	})
	if !ok {
		return "", "", nil
	}
	v, _ := sysval.KernelPorts(set.Value)
	return v, set.Where(), nil
}

// reservation collects the ports to keep out of the ephemeral range lo-hi.
type reservation struct {
	lo, hi int
	want   []sysctlval.PortRange
	// added are the ports in lo-hi reserved for each reason (why), found
	// reserved already or added now; n counts them. The comment names
	// them either way, so that a second apply writes the same file.
	added map[string][]string
	n     int
}

func (r *reservation) add(port int, why string) {
	if port < r.lo || port > r.hi {
		return
	}
	for _, ports := range r.added {
		if slices.Contains(ports, strconv.Itoa(port)) {
			return // named for a reason already
		}
	}
	if !sysctlval.ContainsPort(r.want, port) {
		r.want = append(r.want, sysctlval.PortRange{Lo: port, Hi: port})
	}
	r.added[why] = append(r.added[why], strconv.Itoa(port))
	r.n++
}

// comment says which ports are kept out of the range and why.
func (r *reservation) comment() string {
	if r.n == 0 {
		return ""
	}
	var parts []string
	for _, why := range []string{"reserve_ports", "listening now"} {
		if len(r.added[why]) > 0 {
			parts = append(parts, strings.Join(r.added[why], ",")+" ("+why+")")
		}
	}
	return fmt.Sprintf("keeps %s out of the ephemeral range %d-%d", strings.Join(parts, " and "), r.lo, r.hi)
}

// reserveListeners adds the ports listening now. A listener inside the
// host's current ephemeral range was most likely given its port by the
// kernel (bind to port 0) and is gone after a restart; reserving it for
// good would be wrong, so it is named in a warning instead.
func (pl *Plan) reserveListeners(r *reservation) error {
	listening, err := procnet.ListeningTCPPorts(pl.env.proc())
	if err != nil {
		return exitcode.Environmentf("tune: listening ports: %w", err)
	}
	curLo, curHi := -1, -1
	if v, ok, err := pl.current(keyPortRange); err == nil && ok {
		curLo, curHi, _ = sysctlval.ParsePortRange(v)
	}
	var transient []string
	for _, port := range listening {
		// One in the current range that is reserved already was kept
		// out of it before (by an earlier apply, say): named as kept.
		if port >= curLo && port <= curHi && !sysctlval.ContainsPort(r.want, port) {
			if port >= r.lo && port <= r.hi {
				transient = append(transient, strconv.Itoa(port))
			}
			continue
		}
		r.add(port, "listening now")
	}
	if len(transient) > 0 {
		what := fmt.Sprintf("listening ports %s lie", strings.Join(transient, ","))
		fixed := "they are fixed service ports"
		if len(transient) == 1 {
			what, fixed = "listening port "+transient[0]+" lies", "it is a fixed service port"
		}
		them := plural.Them(len(transient))
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s inside the current ephemeral range %d-%d, so the kernel probably assigned %s; not reserved (add %s to reserve_ports if %s)", what, curLo, curHi, them, them, fixed))
	}
	return nil
}
