package checks

import (
	"fmt"
	"math"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/preflight/facts"
)

// CapacityLimit is one resource's ceiling in sockets.
type CapacityLimit struct {
	// Check is the check ID that covers the resource.
	Check string `json:"check"`
	// Resource names it ("soft nofile", "ephemeral ports", ...).
	Resource string `json:"resource"`
	// Sockets this resource allows.
	Sockets int64 `json:"sockets"`
	// Assumed is true when the number is not the target's own: the soft
	// nofile a login shell here gets, for a server whose process was not
	// named or found (its owner not visible without root).
	Assumed bool `json:"assumed,omitempty"`
}

// UnknownLimit is a ceiling that could not be read.
type UnknownLimit struct {
	// Check is the check ID that covers the resource.
	Check string `json:"check"`
	// Resource names what could not be read ("MemAvailable (/proc/meminfo)").
	Resource string `json:"resource"`
}

// Capacity is how many sockets the host (for this role and target
// process) can hold, and what limits it.
type Capacity struct {
	// Sockets is the smallest of Limits: the estimated number of sockets
	// the target process can hold on this host.
	Sockets int64 `json:"sockets"`
	// LimitedBy is the check ID of the smallest limit.
	LimitedBy string `json:"limited_by"`
	// Limits are the per-resource ceilings considered.
	Limits []CapacityLimit `json:"limits"`
	// Unknown are the ceilings that could not be read (meminfo, a sysctl,
	// the conntrack table): Sockets is the smallest of the known ones, and
	// may be lower still.
	Unknown []UnknownLimit `json:"unknown,omitempty"`
	// BytesPerSocket is the kernel memory per idle socket used, and
	// BytesPerSocketSource says whether it was measured or estimated (and
	// why a --active run did not count); BytesPerSocketMeasured is true
	// only for a significant --active measurement.
	BytesPerSocket         float64 `json:"bytes_per_socket"`
	BytesPerSocketSource   string  `json:"bytes_per_socket_source"`
	BytesPerSocketMeasured bool    `json:"bytes_per_socket_measured"`
	// Measured is the --active result, nil when not run.
	Measured *facts.ActiveResult `json:"measured,omitempty"`
}

// softNofileLimit is the capacity the target's soft nofile leaves, less
// headroom and the files it holds now; marked Assumed when it is not the
// service's own but a login shell's. ok is false for an unlimited one.
func softNofileLimit(f *facts.Facts, t facts.Target) (CapacityLimit, bool) {
	s := f.Target.NofileSoft
	if s == facts.Unlimited {
		return CapacityLimit{}, false
	}
	if UnseenServer(f.Target, t) || ShellStandsIn(f) {
		// not the service's own limit: say so, in the limit and the text
		why, _ := unseenWhy(f, t)
		return CapacityLimit{Check: "fd.soft", Assumed: true, Sockets: UsableFDs(s),
			Resource: "soft nofile a login shell here gets, less headroom, assumed: " + why}, true
	}
	res := "soft nofile of the target process, less headroom"
	if h := f.Target.HeldFDs; h > 0 {
		res += fmt.Sprintf(" and the %s it holds now", plural.N(h, "other file"))
	}
	return CapacityLimit{Check: "fd.soft", Resource: res, Sockets: max(UsableFDs(s)-int64(f.Target.HeldFDs), 0)}, true
}

// capacityOf is the smallest per-resource ceiling, in sockets: every
// ceiling a check judges (soft nofile, fs.nr_open, fs.file-max, ports,
// conntrack, memory), with those that could not be read named in Unknown
// rather than dropped.
func CapacityOf(f *facts.Facts, t facts.Target) Capacity {
	var c Capacity
	add := func(check, res string, n int64) {
		c.Limits = append(c.Limits, CapacityLimit{Check: check, Resource: res, Sockets: max(n, 0)})
	}
	unknown := func(check, res string) {
		c.Unknown = append(c.Unknown, UnknownLimit{Check: check, Resource: res})
	}
	if l, ok := softNofileLimit(f, t); ok {
		c.Limits = append(c.Limits, l)
	}
	if u := f.Target.HeldFDsUnseen; u != "" && f.Target.PID > 0 {
		unknown("fd.soft", "the files the target holds ("+u+")")
	}
	if nr, ok := f.SysInt("fs.nr_open"); ok {
		add("fd.nr_open", "fs.nr_open (the highest nofile any process gets), less headroom", UsableFDs(uint64(max(nr, 0))))
	} else {
		unknown("fd.nr_open", "fs.nr_open")
	}
	if fm, ok := f.SysInt("fs.file-max"); ok {
		var alloc int64
		if nr, ok := f.SysFields("fs.file-nr"); ok {
			alloc = nr[0]
		}
		add("fd.file_max", "free file handles (fs.file-max - fs.file-nr)", fm-alloc)
	} else {
		unknown("fd.file_max", "fs.file-max")
	}
	if ns := f.Target.NetNSApart(); t.Role == facts.Loadgen && ns != "" {
		unknown("ports.ephemeral", "the ephemeral ports of the target's network namespace ("+ns+")")
	} else if t.Role == facts.Loadgen {
		if pc, ok := LoadgenCapacity(f, t); ok {
			add("ports.ephemeral", "ephemeral ports: "+pc.formula, pc.Total)
		} else {
			unknown("ports.ephemeral", "net.ipv4.ip_local_port_range")
		}
	}
	if ct, ns := f.Conntrack, f.Target.NetNSApart(); ns != "" && ct.Loaded {
		unknown("conntrack", "the nf_conntrack table of the target's network namespace ("+ns+")")
	} else if ct.Loaded && ConntrackUnknown(ct) != "" {
		unknown("conntrack", ConntrackUnknown(ct))
	} else if ct.Loaded && conntrackTracking(ct) {
		// a full table (count >= max) allows no new connection
		add("conntrack", "free nf_conntrack entries", int64(ct.Max)-int64(min(ct.Count, ct.Max)))
	}
	if t.Role == facts.IoTDB {
		rooms, unseen := threadRooms(f, t)
		for _, u := range unseen {
			unknown("iotdb.threads", u)
		}
		if len(rooms) > 0 {
			least := rooms[0]
			for _, r := range rooms {
				if r.room < least.room {
					least = r
				}
			}
			add("iotdb.threads", "threads the DataNode can still start, one per session ("+least.name+")", least.room)
		}
	}
	c.BytesPerSocket, c.BytesPerSocketSource = perSocketCost(f)
	c.BytesPerSocketMeasured, _ = measuredCost(f)
	lim, unk := memCapacity(f, c.BytesPerSocket)
	c.Limits, c.Unknown = append(c.Limits, lim...), append(c.Unknown, unk...)
	c.Sockets = math.MaxInt64
	for _, l := range c.Limits {
		if l.Sockets < c.Sockets {
			c.Sockets, c.LimitedBy = l.Sockets, l.Check
		}
	}
	if len(c.Limits) == 0 {
		c.Sockets = 0
	}
	c.Measured = f.Measured
	return c
}

// memCapacity is mem.available's ceiling for sockets of per bytes each:
// the smaller of MemAvailable and the room the target's memory cgroup
// leaves (memCeilingOf), naming the cgroup's limit file; and, as
// unknown, MemAvailable when not read and each cgroup file that could
// not be.
func memCapacity(f *facts.Facts, per float64) (lim []CapacityLimit, unknown []UnknownLimit) {
	mc, ok, unseen := memCeilingOf(f)
	for _, u := range unseen {
		unknown = append(unknown, UnknownLimit{Check: "mem.available", Resource: "the target's memory cgroup: " + u})
	}
	if f.MemAvailable == 0 {
		unknown = append(unknown, UnknownLimit{Check: "mem.available", Resource: "MemAvailable (/proc/meminfo)"})
	}
	res := "MemAvailable / kernel bytes per socket"
	if mc.cgroup {
		res = "room in the target's memory cgroup (limit - usage, " + f.Target.Memory.From + ") / kernel bytes per socket"
	}
	if ok {
		lim = append(lim, CapacityLimit{Check: "mem.available", Resource: res, Sockets: max(int64(mc.bytes/per), 0)})
	}
	return lim, unknown
}

// OwnerCapacity is capacityOf as a CapacityFunc: what Gather compares
// listener owners by.
func OwnerCapacity(f *facts.Facts, t facts.Target) (int64, string) {
	c := CapacityOf(f, t)
	return c.Sockets, c.LimitedBy
}

// Limit is the ceiling check reports in c, if it reports one.
func (c Capacity) Limit(check string) (CapacityLimit, bool) {
	for _, l := range c.Limits {
		if l.Check == check {
			return l, true
		}
	}
	return CapacityLimit{}, false
}
