package remedies

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
	"github.com/hostprep/hostprep/profiles"
)

// The kinds of change a remedy makes to the facts. Each applies as the
// host would: a LimitNOFILE is resolved as systemd resolves it (against
// fs.nr_open and PID 1's hard limit), a login's limit that fs.nr_open
// refuses leaves the process as it was.

// SetSysctl is "sysctl K=V", live (and at boot, where the remedy writes
// it with tune).
type SetSysctl struct{ Key, Value string }

func (c SetSysctl) String() string { return fmt.Sprintf("sysctl %s=%s", c.Key, c.Value) }

func (c SetSysctl) Apply(f *facts.Facts, _ *facts.Target) {
	f.Sysctl[c.Key] = c.Value
	if c.Key == "fs.nr_open" {
		// written with tune: now and in its own sysctl.d file, for boot
		if n, err := strconv.ParseUint(c.Value, 10, 64); err == nil {
			f.BootNrOpen = &facts.LimitLine{Value: n, From: "the remedy's sysctl.d file"}
		}
	}
	if c.Key == "net.netfilter.nf_conntrack_max" {
		if n, err := strconv.ParseUint(c.Value, 10, 64); err == nil {
			f.Conntrack.Max = n
		}
	}
}

// sysctlSets turns --set "key=value" overrides into changes: sysctls
// only (limits.nofile.* are SetLoginNofile's).
func sysctlSets(sets []string) []Change {
	var out []Change
	for _, s := range sets {
		k, v, ok := strings.Cut(s, "=")
		if ok && !strings.HasPrefix(k, "limits.") && strings.Contains(k, ".") {
			out = append(out, SetSysctl{Key: k, Value: strings.Trim(v, `"`)})
		}
	}
	return out
}

// SetConntrackHashsize is "echo N >
// /sys/module/nf_conntrack/parameters/hashsize": N hash buckets.
type SetConntrackHashsize struct{ Buckets uint64 }

func (c SetConntrackHashsize) String() string {
	return fmt.Sprintf("nf_conntrack hashsize %d", c.Buckets)
}

func (c SetConntrackHashsize) Apply(f *facts.Facts, _ *facts.Target) {
	if f.Conntrack.Loaded {
		f.Conntrack.Buckets = c.Buckets
		if _, ok := f.Sysctl["net.netfilter.nf_conntrack_buckets"]; ok {
			f.Sysctl["net.netfilter.nf_conntrack_buckets"] = strconv.FormatUint(c.Buckets, 10)
		}
	}
}

// SetUnitNofile is "LimitNOFILE=S:H in unit U" and a restart of it.
type SetUnitNofile struct {
	Unit       string
	Soft, Hard uint64
}

func (c SetUnitNofile) String() string {
	return fmt.Sprintf("LimitNOFILE=%s in unit %s, restarted", facts.FmtLimit(profiles.Limit{Soft: c.Soft, Hard: c.Hard}), c.Unit)
}

func (c SetUnitNofile) Apply(f *facts.Facts, _ *facts.Target) {
	p := &f.Target
	if p.Unit != c.Unit || !checks.UnderSystemd(f) {
		return
	}
	nr, _ := f.SysInt("fs.nr_open")
	eff, why := facts.ResolveNofile(profiles.Limit{Soft: c.Soft, Hard: c.Hard}, nr, f.Pid1Nofile, f.Pid1NoRaise)
	p.NofileSoft, p.NofileHard, p.Requested = eff.Soft, eff.Hard, ""
	if why != "" {
		p.Requested = facts.FmtLimit(profiles.Limit{Soft: c.Soft, Hard: c.Hard})
	}
	p.Source = "LimitNOFILE=" + facts.FmtLimit(profiles.Limit{Soft: c.Soft, Hard: c.Hard}) + " (the remedy)"
	if c.Hard != facts.Unlimited {
		f.HardNofile = append(f.HardNofile, facts.LimitLine{Value: c.Hard, Domain: c.Unit, From: "the remedy's drop-in"})
	}
	p.Assumed = false
}

// SetLoginNofile is "nofile S:H for a new login" (limits.d, tune's own
// file) and the process started again from one: pam_limits refuses a
// hard limit above fs.nr_open (the session fails), and without
// CAP_SYS_RESOURCE in the bounding set nothing gets above hostCeiling.
type SetLoginNofile struct{ Soft, Hard uint64 }

func (c SetLoginNofile) String() string {
	return fmt.Sprintf("nofile %d:%d in limits.d, the process started from a new login", c.Soft, c.Hard)
}

func (c SetLoginNofile) Apply(f *facts.Facts, _ *facts.Target) {
	p := &f.Target
	if checks.UnderSystemd(f) {
		return // limits.d does not apply to a service
	}
	f.HardNofile = append(f.HardNofile, facts.LimitLine{Value: c.Hard, Domain: "*", From: "the remedy's limits.d file"})
	if nr, ok := f.SysInt("fs.nr_open"); ok && c.Hard > uint64(nr) {
		return // pam_limits fails the session
	}
	hard := c.Hard
	if ceiling, _, blocked := checks.HostCeiling(f); blocked && hard > ceiling {
		hard = ceiling
	}
	p.NofileSoft, p.NofileHard = min(c.Soft, hard), hard
	p.Source = "a new login with limits.d nofile (the remedy)"
	if f.Login != nil {
		f.Login.Soft = &facts.LimitLine{Value: c.Soft, Domain: "*", From: "the remedy"}
		f.Login.Hard = &facts.LimitLine{Value: c.Hard, Domain: "*", From: "the remedy"}
	}
}

// SetProcessNofile is "prlimit --pid P --nofile=S:H": raising the hard
// limit needs CAP_SYS_RESOURCE here, and nothing goes above fs.nr_open.
type SetProcessNofile struct {
	PID        int
	Soft, Hard uint64
}

func (c SetProcessNofile) String() string {
	return fmt.Sprintf("nofile %d:%d for pid %d (prlimit)", c.Soft, c.Hard, c.PID)
}

func (c SetProcessNofile) Apply(f *facts.Facts, _ *facts.Target) {
	p := &f.Target
	if p.PID != c.PID {
		return
	}
	if nr, ok := f.SysInt("fs.nr_open"); ok && c.Hard > uint64(nr) {
		return
	}
	if c.Hard > p.NofileHard && p.NoRaiseBound && !p.CapSysResource {
		return
	}
	p.NofileSoft, p.NofileHard = c.Soft, c.Hard
}

// RestartUnit is "restart U": the process holding the port outside the
// unit is stopped and the unit's own process takes the port, with the
// unit's limits (ProcessFacts.Apart).
type RestartUnit struct{ Unit string }

func (c RestartUnit) String() string {
	return "restart " + c.Unit + " (the process outside it stopped)"
}

func (c RestartUnit) Apply(f *facts.Facts, _ *facts.Target) {
	a := f.Target.Apart
	if a == nil || a.Unit != c.Unit {
		return
	}
	f.Target = facts.ProcessFacts{ManagedBy: "systemd", Unit: a.Unit, NofileSoft: a.Nofile.Soft, NofileHard: a.Nofile.Hard,
		CapSysResource: true, NoRaiseBound: f.Target.NoRaiseBound, UnitActive: "active", Source: a.From + " (restarted through the unit)"}
	for i := range f.Listeners {
		if f.Listeners[i].Port == a.Port {
			f.Listeners[i].PID, f.Listeners[i].Holders, f.Listeners[i].StartedBy = 0, nil, a.Unit
		}
	}
}

// BindSourceAddresses is "N source addresses" the load generator binds
// (--source-ips), of the family the destinations need (ports.ephemeral
// counts no other): the host's own of that family first, then more
// until N distinct ones are bound; benchmarking addresses (198.18.0.0/15,
// RFC 2544, and the addresses after it; 2001:2::/48, RFC 5180) stand for
// the ones to add.
type BindSourceAddresses struct{ N int }

func (c BindSourceAddresses) String() string {
	return fmt.Sprintf("%d source addresses, bound by the load generator (--source-ips)", c.N)
}

func (c BindSourceAddresses) Apply(f *facts.Facts, t *facts.Target) {
	v6 := checks.SourcesV6(*t)
	family := func(s string) (string, bool) {
		ip := net.ParseIP(s)
		if ip == nil || (ip.To4() == nil) != v6 {
			return "", false
		}
		return ip.String(), true
	}
	if len(t.SourceIPs) == 0 {
		for _, a := range f.SourceAddresses {
			if _, ok := family(a); ok {
				t.SourceIPs = append(t.SourceIPs, a)
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range t.SourceIPs {
		if k, ok := family(s); ok {
			seen[k] = true
		}
	}
	for i := 0; len(seen) < c.N; i++ {
		n := uint32(198<<24|18<<16) + uint32(i)
		ip := fmt.Sprintf("%d.%d.%d.%d", n>>24, n>>16&255, n>>8&255, n&255)
		if v6 {
			ip = fmt.Sprintf("2001:2::%x", i+1)
		}
		if k, _ := family(ip); !seen[k] {
			seen[k] = true
			t.SourceIPs = append(t.SourceIPs, ip)
			f.SourceAddresses = append(f.SourceAddresses, ip)
		}
	}
}

// SetIoTDBProperty is "K=V in iotdb-system.properties" and a DataNode
// restart.
type SetIoTDBProperty struct{ Name, Value string }

func (c SetIoTDBProperty) String() string {
	return fmt.Sprintf("%s=%s in iotdb-system.properties, DataNode restarted", c.Name, c.Value)
}

func (c SetIoTDBProperty) Apply(f *facts.Facts, _ *facts.Target) {
	if f.IoTDB == nil {
		return
	}
	f.IoTDB.Properties[c.Name] = facts.IoTDBSetting{Name: c.Name, Value: c.Value, File: f.IoTDB.File}
}
