package checks

import (
	"fmt"
	"math"
	"path"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Kernel memory checks. An idle TCP socket costs kernel slab memory (the
// tcp_sock, its inode and dentry, the struct file, an epoll item); data in
// flight additionally costs buffer pages, which the kernel accounts in
// net.ipv4.tcp_mem — counted in PAGES, not bytes.

// EstimatedBytesPerSocket is the kernel memory of one idle, established
// TCP socket held by a process that polls it with epoll, in bytes, used
// when --active did not measure it. Source: `hostprep preflight --active
// --sockets 15000 --role broker` on the build host (kernel 6.18, x86_64,
// nf_conntrack loaded but not tracking loopback), four runs: 3999, 4029,
// 4052 and 4318 bytes per socket (slope of Slab in /proc/meminfo against
// sockets open). It agrees with the slab object sizes: the tcp_sock (TCP
// cache, ~2.3 KiB), sock_inode_cache (~0.7 KiB), dentry, filp and the
// eventpoll item. Re-measure with --active when the kernel changes.
const EstimatedBytesPerSocket = 4096

func init() {
	register(CheckDef{ID: "mem.available", Doc: "sockets x kernel memory per socket <= MemAvailable and the room (limit - usage) of the target's memory cgroup and those above it, or for a unit not running the MemoryMax= (MemoryLimit=) its next start and its slices get", Func: checkMemAvailable})
	register(CheckDef{ID: "mem.tcp_mem", Doc: "net.ipv4.tcp_mem max (pages) >= one page of buffered data per socket", Func: checkMemTCPMem})
	register(CheckDef{ID: "mem.buffers", Doc: "socket buffers, capped by net.ipv4.tcp_mem max, plus the sockets' own kernel memory <= MemAvailable; on cgroup v2 a page of buffers per socket plus their kernel memory <= the room of the target's memory cgroup", Func: checkMemBuffers})
	register(CheckDef{ID: "mem.pressure", Doc: "no TCP memory pressure now or since boot (sockstat mem, TCPMemoryPressures, TCPAbortOnMemory)", Func: checkMemPressure})
}

// perSocketCost returns the kernel bytes per socket and where the number
// comes from.
func perSocketCost(f *facts.Facts) (float64, string) {
	ok, _ := measuredCost(f)
	switch {
	case ok:
		return f.Measured.BytesPerSocket, fmt.Sprintf("measured by --active over %s", plural.N(f.Measured.ReachedSockets, "socket"))
	case f.Measured != nil:
		return EstimatedBytesPerSocket, fmt.Sprintf("estimate, kept: --active over %s could not measure it (see the active check)", plural.N(f.Measured.ReachedSockets, "socket"))
	}
	return EstimatedBytesPerSocket, "estimate; `hostprep preflight --active` measures it"
}

// measuredCost says whether f carries a significant --active measurement
// of the cost per socket, and if there is a measurement that is not, why.
func measuredCost(f *facts.Facts) (bool, string) {
	if f.Measured == nil {
		return false, ""
	}
	return f.Measured.CostSignificance()
}

// memCeiling is the memory a target's sockets must fit in: the host's
// MemAvailable, or the room the target's memory cgroup leaves under its
// hard limit when that is less (past it the cgroup's OOM killer ends the
// process, whatever the host has free).
type memCeiling struct {
	bytes  float64
	name   string // "MemAvailable 22346 MiB", "the room its memory cgroup leaves, ..."
	cgroup bool   // the cgroup's, not MemAvailable
}

// memCeilingOf is the smaller of MemAvailable and the target's memory
// cgroup room, and what of the cgroup could not be read (unseen); ok is
// false when neither is known.
func memCeilingOf(f *facts.Facts) (c memCeiling, ok bool, unseen []string) {
	m := f.Target.Memory
	if m.Applies(f.Target.PID) {
		unseen = m.Unseen
	}
	if f.MemAvailable > 0 {
		c, ok = memCeiling{bytes: float64(f.MemAvailable), name: "MemAvailable " + Mib(float64(f.MemAvailable))}, true
	}
	if room, lim := m.Room(); lim && m.Applies(f.Target.PID) && (!ok || room < c.bytes) {
		whose := "the room its memory cgroup leaves"
		if m.Unit != "" {
			whose = "the room its memory cgroup will leave"
		}
		c, ok = memCeiling{bytes: room, cgroup: true, name: fmt.Sprintf("%s, %s (limit %s less usage %s, %s)",
			whose, Mib(room), Mib(float64(m.Limit)), Mib(float64(m.Usage)), m.From)}, true
	}
	return c, ok, unseen
}

// memCgroupRemedy raises the target's memory cgroup limit.
const memCgroupRemedy = "raise the target's memory cgroup limit (MemoryMax= in its unit: systemctl set-property UNIT MemoryMax=N; the container's --memory; cgroup v1 memory.limit_in_bytes) or spread the load"

// memSliceWhy is why hostprep tune does not raise a slice's memory limit.
const memSliceWhy = "hostprep tune does not write a slice's memory settings"

// memLimitRemedy raises the hard limit of m, the target's memory cgroup,
// so that need more bytes fit: for a unit that is not running whose
// limit is a slice's (m.Slice), that slice's setting to the slice's
// usage plus need (sliceRemedy, in MiB rounded up); for a running
// process whose limit is the memory.max (v1 memory.limit_in_bytes) of a
// slice's cgroup above it, that slice's MemoryMax=; else
// memCgroupRemedy.
func memLimitRemedy(m facts.MemCgroup, need float64) string {
	to := mibUp(float64(m.Usage) + need)
	if m.Slice != nil && m.Unit != "" {
		return sliceRemedy(*m.Slice, to, m.Unit, memSliceWhy) + "; or spread the load"
	}
	if cg := path.Base(path.Dir(m.From)); m.Unit == "" && strings.HasPrefix(m.From, "/sys/fs/cgroup") && strings.HasSuffix(cg, ".slice") {
		return fmt.Sprintf("raise the MemoryMax= of %s, the slice above the target (%s; %s): systemctl set-property %s MemoryMax=%s or more, or spread the load", cg, m.From, memSliceWhy, cg, to)
	}
	return memCgroupRemedy
}

// mibUp is bytes b as a systemd size in whole MiB, rounded up ("512M").
func mibUp(b float64) string { return fmt.Sprintf("%.0fM", math.Ceil(b/(1<<20))) }

// checkMemAvailable: the sockets' kernel memory against the smaller of
// MemAvailable and the target's memory cgroup room (memCeilingOf); a v2
// memory.high below that throttles the target, and a cgroup file that
// could not be read is a warning, never taken for no limit.
func checkMemAvailable(f *facts.Facts, t facts.Target) verdict.Check {
	c, ok, unseen := memCeilingOf(f)
	if !ok && len(unseen) == 0 {
		return skip("MemAvailable unknown")
	}
	per, src := perSocketCost(f)
	need := per * float64(t.Sockets)
	obs := fmt.Sprintf("MemAvailable %s of %s", Gib(float64(f.MemAvailable)), Gib(float64(f.MemTotal)))
	if m := f.Target.Memory; m.Applies(f.Target.PID) && m.From != "" {
		obs += fmt.Sprintf("; memory cgroup limit %s, usage %s (%s)", Mib(float64(m.Limit)), Mib(float64(m.Usage)), m.From)
	}
	exp := fmt.Sprintf("%s x %s per idle socket (%s) = %s of kernel memory, plus the application's own per-connection memory", plural.N(t.Sockets, "socket"), plural.N(int(math.Round(per)), "byte"), src, Mib(need))
	remedy, holder := "add memory or spread the load", "this host"
	if c.cgroup {
		remedy, holder = memLimitRemedy(f.Target.Memory, need), "the cgroup"
	}
	switch {
	case ok && need > c.bytes:
		return fail(fmt.Sprintf("%d idle sockets need about %s of kernel memory > %s", t.Sockets, Mib(need), c.name), obs, exp,
			fmt.Sprintf("%s: %s holds about %d idle sockets", remedy, holder, int64(c.bytes/per)))
	case ok && need > 0.8*c.bytes:
		return warn(fmt.Sprintf("%d idle sockets need about %s of kernel memory, %.0f %% of %s, leaving little for the application", t.Sockets, Mib(need), 100*need/c.bytes, c.name), obs, exp,
			remedy+" over more hosts")
	case len(unseen) > 0:
		return warn(fmt.Sprintf("%d idle sockets need about %s of kernel memory; not seen: %s, which may limit the target's memory below that", t.Sockets, Mib(need), strings.Join(unseen, ", ")), obs, exp,
			unseenMemRemedy(unseen))
	}
	m := f.Target.Memory
	if high, ok := m.HighRoom(); ok && need > high {
		return warn(fmt.Sprintf("%d idle sockets need about %s of kernel memory > the room under memory.high, %s (memory.high %s less usage %s, %s): the kernel throttles the target there and reclaims hard; it does not OOM-kill it", t.Sockets, Mib(need), Mib(high), Mib(float64(m.High)), Mib(float64(m.HighUsage)), m.HighFrom),
			obs, exp, highRemedy(m, need))
	}
	return pass(fmt.Sprintf("%d idle sockets need about %s of kernel memory; %s", t.Sockets, Mib(need), c.name), obs, exp)
}

func checkMemTCPMem(f *facts.Facts, t facts.Target) verdict.Check {
	m, ok := f.SysFields("net.ipv4.tcp_mem")
	if !ok || len(m) != 3 {
		return skip("net.ipv4.tcp_mem not readable")
	}
	page := float64(f.PageSize)
	maxPages := m[2]
	needPages := int64(t.Sockets) // one page (sk_mem_quantum) per socket with any data queued
	obs := fmt.Sprintf("tcp_mem %d %d %s (min %s, pressure %s, max %s; a page is %s)", m[0], m[1], plural.N(m[2], "page"), Mib(float64(m[0])*page), Mib(float64(m[1])*page), Mib(float64(m[2])*page), plural.N(f.PageSize, "byte"))
	exp := fmt.Sprintf("max >= %s (%s): one page of buffered data for each of %s", plural.N(needPages, "page"), Mib(float64(needPages)*page), plural.N(t.Sockets, "socket"))
	lo, mid, hi, fits := SuggestTCPMem(f, t)
	suggest := "add memory or spread the load over more hosts"
	if fits {
		suggest = fmt.Sprintf("sysctl -w net.ipv4.tcp_mem=\"%d %d %d\" (pages: %s / %s / %s)", lo, mid, hi, Mib(float64(lo)*page), Mib(float64(mid)*page), Mib(float64(hi)*page))
	}
	if c, ok := tcpMemAboveRAM(f, m, obs, exp, suggest); ok {
		return c // above RAM is wrong whatever the target: it comes first
	}
	if m[0] > m[1] || m[1] > m[2] {
		// tcp_mem is min <= pressure <= max (ip-sysctl.rst): with pressure
		// above max the kernel hits the hard limit before it ever starts
		// to moderate buffers.
		return warn(fmt.Sprintf("tcp_mem %d %d %d is out of order: it is min <= pressure <= max (pages), and with pressure above max TCP refuses memory before memory pressure ever starts", m[0], m[1], m[2]),
			obs, exp, suggest)
	}
	if maxPages >= needPages {
		return pass(fmt.Sprintf("tcp_mem max %s (%s) covers %s with a page of buffered data each", plural.N(maxPages, "page"), Mib(float64(maxPages)*page), plural.N(t.Sockets, "socket")), obs, exp)
	}
	if !fits {
		room, _ := bufferRoom(f, t)
		return warn(fmt.Sprintf("tcp_mem max %s (%s) is below what %s with buffered data need (%s, %s), and this host's memory cannot hold both: MemAvailable %s less the sockets' own kernel memory leaves %s for buffers",
			plural.N(maxPages, "page"), Mib(float64(maxPages)*page), plural.N(t.Sockets, "socket"), plural.N(needPages, "page"), Mib(float64(needPages)*page), Mib(float64(f.MemAvailable)), Mib(max(room, 0))),
			obs, exp, suggest)
	}
	return warn(fmt.Sprintf("tcp_mem max %s (%s) is below what %s with buffered data need (%s, %s): tcp_mem counts pages of %s, not bytes; past it the kernel drops data and logs \"TCP: out of memory -- consider tuning tcp_mem\"",
		plural.N(maxPages, "page"), Mib(float64(maxPages)*page), plural.N(t.Sockets, "socket"), plural.N(needPages, "page"), Mib(float64(needPages)*page), plural.N(f.PageSize, "byte")),
		obs, exp, suggest)
}

// suggestTCPMem is the tcp_mem (pages: min, pressure, max) both memory
// checks accept for t: max is twice the target's page of buffered data per
// socket, or the kernel's own sizing for this RAM (tcp_init_mem) when that
// is more, and no higher than bufferRoom leaves; min and pressure are 1/2
// and 3/4 of it. fits is false when that room is below one page per
// socket: no tcp_mem serves both then.
func SuggestTCPMem(f *facts.Facts, t facts.Target) (lo, mid, hi int64, fits bool) {
	page := float64(f.PageSize)
	need := int64(t.Sockets)
	hi = 2 * need
	if f.MemTotal > 0 {
		limit := int64(float64(f.MemTotal) / page / 16)
		hi = max(hi, limit/4*3*2)
	}
	room, _ := bufferRoom(f, t)
	if roomPages := int64(room / page); f.MemAvailable > 0 && hi > roomPages {
		hi = roomPages
	}
	return hi / 2, hi * 3 / 4, hi, hi >= need
}

// bufferRoom is the memory socket buffers may take on this host, in
// bytes: MemAvailable less the sockets' own kernel memory (mem.available),
// and no more than 3/4 of RAM. It is negative when the sockets alone do
// not fit. slab is the sockets' kernel memory, bytes.
func bufferRoom(f *facts.Facts, t facts.Target) (room, slab float64) {
	per, _ := perSocketCost(f)
	slab = per * float64(t.Sockets)
	room = float64(f.MemAvailable) - slab
	if f.MemTotal > 0 {
		room = min(room, 0.75*float64(f.MemTotal))
	}
	return room, slab
}

// checkMemBuffers: socket buffers against the host (hostBuffers) and,
// where they are charged to it, against the target's memory cgroup
// (cgroupBuffers); when both warn the summary says both.
func checkMemBuffers(f *facts.Facts, t facts.Target) verdict.Check {
	c := hostBuffers(f, t)
	if c.Status == verdict.Skip {
		return c
	}
	cg, ok := cgroupBuffers(f, t)
	switch {
	case !ok:
		return c
	case c.Status == verdict.Pass:
		cg.Observed = c.Observed + "; " + cg.Observed
		return cg
	}
	c.Summary += "; and " + cg.Summary
	c.Observed += "; " + cg.Observed
	c.Remedy += "; " + cg.Remedy
	return c
}

// unseenMemRemedy is the remedy for memory limits that could not be
// read (unseen): a Slice= preflight does not expand (unitSlices: "the
// slice of UNIT: ...") is judged once the unit runs; anything else needs
// the rights to read it.
func unseenMemRemedy(unseen []string) string {
	for _, u := range unseen {
		if strings.HasPrefix(u, "the slice of ") {
			return "start the unit and judge the running process (hostprep preflight --pid PID), whose cgroup names its slice, or write its Slice= without specifiers taken from the host"
		}
	}
	return "run as root (or hostprep preflight --pid PID as the target's user) so its memory cgroup can be read"
}

// highRemedy raises m's memory.high so that need more bytes fit: the
// slice's MemoryHigh= for a unit that is not running whose memory.high is
// a slice's (m.HighSlice), else the unit's.
func highRemedy(m facts.MemCgroup, need float64) string {
	if m.HighSlice == nil || m.Unit == "" {
		return "raise the target's memory.high (MemoryHigh= in its unit: systemctl set-property UNIT MemoryHigh=N) or spread the load"
	}
	return sliceRemedy(*m.HighSlice, mibUp(float64(m.HighUsage)+need), m.Unit, memSliceWhy) + "; or spread the load"
}

// cgroupBuffers: on cgroup v2 the kernel charges socket buffers to the
// memory cgroup of the socket (memory.stat "sock"; cgroup-v2.rst), so a
// target with a memory limit must hold, besides its sockets' own kernel
// memory, their buffered data under it: at least one page per socket
// with data queued (sk_mem_quantum, as mem.tcp_mem counts it), whatever
// tcp_mem allows the host. Past the limit the cgroup's OOM killer ends
// the target. ok is false when no such limit applies (no limit, cgroup
// v1, where buffers are charged only to a kmem.tcp limit of its own, or
// a limit that could not be read: mem.available names that) or the
// sockets fit.
func cgroupBuffers(f *facts.Facts, t facts.Target) (verdict.Check, bool) {
	m := f.Target.Memory
	room, lim := m.Room()
	if !lim || !m.Applies(f.Target.PID) || !m.SockCharged {
		return verdict.Check{}, false
	}
	per, _ := perSocketCost(f)
	slab := per * float64(t.Sockets)
	buf := float64(t.Sockets) * float64(f.PageSize)
	if slab+buf <= room {
		return verdict.Check{}, false
	}
	obs := fmt.Sprintf("memory cgroup limit %s, usage %s (%s)", Mib(float64(m.Limit)), Mib(float64(m.Usage)), m.From)
	return warn(fmt.Sprintf("%s with a page of buffered data each need about %s (their own kernel memory %s and buffers %s) > the room the target's memory cgroup leaves, %s (%s): on cgroup v2 socket buffers are charged to the cgroup (memory.stat sock), and past its limit the OOM killer ends the target whatever tcp_mem allows the host",
		plural.N(t.Sockets, "socket"), Mib(slab+buf), Mib(slab), Mib(buf), Mib(room), m.From),
		obs, fmt.Sprintf("the sockets' kernel memory + a page of buffered data per socket <= the room under the target's memory cgroup limit (%s)", Mib(room)), memLimitRemedy(m, slab+buf)), true
}

// hostBuffers: the kernel lets socket buffers grow until tcp_mem max
// (pages; Documentation/networking/ip-sysctl.rst: above it TCP refuses
// allocations), whatever tcp_rmem/tcp_wmem allow one socket, so the most
// buffers can take is tcp_mem max. That, on top of the sockets' own
// kernel memory, must fit in MemAvailable, or buffers can exhaust RAM
// before TCP memory pressure starts.
func hostBuffers(f *facts.Facts, t facts.Target) verdict.Check {
	m, ok := f.SysFields("net.ipv4.tcp_mem")
	if !ok || len(m) != 3 {
		return skip("net.ipv4.tcp_mem not readable")
	}
	if f.MemAvailable == 0 {
		return skip("MemAvailable unknown")
	}
	page := float64(f.PageSize)
	capBytes := float64(m[2]) * page
	room, slab := bufferRoom(f, t)
	avail := float64(f.MemAvailable)
	obs := fmt.Sprintf("tcp_mem max %s (%s); the sockets' own kernel memory %s; MemAvailable %s", plural.N(m[2], "page"), Mib(capBytes), Mib(slab), Mib(avail))
	exp := fmt.Sprintf("tcp_mem max + the sockets' kernel memory <= MemAvailable (buffers may take at most %s)", Mib(max(room, 0)))
	if capBytes <= room {
		return pass(fmt.Sprintf("socket buffers are capped at tcp_mem max %s; with the sockets' own %s that fits in MemAvailable %s", Mib(capBytes), Mib(slab), Mib(avail)), obs, exp)
	}
	if room <= 0 {
		return warn(fmt.Sprintf("the sockets' own kernel memory (%s) leaves no room in MemAvailable %s for socket buffers (tcp_mem max %s)", Mib(slab), Mib(avail), Mib(capBytes)),
			obs, exp, "add memory or spread the load over more hosts")
	}
	return warn(fmt.Sprintf("socket buffers may grow to tcp_mem max %s, and with the sockets' own kernel memory %s that exceeds MemAvailable %s: buffers can exhaust RAM before TCP memory pressure starts",
		Mib(capBytes), Mib(slab), Mib(avail)),
		obs, exp, fmt.Sprintf("set net.ipv4.tcp_mem max to at most %s (%s; pages of %s)", plural.N(int64(room/page), "page"), Mib(room), plural.N(f.PageSize, "byte")))
}

func checkMemPressure(f *facts.Facts, t facts.Target) verdict.Check {
	m, ok := f.SysFields("net.ipv4.tcp_mem")
	pressures, aborts := f.Netstat["TCPMemoryPressures"], f.Netstat["TCPAbortOnMemory"]
	obs := fmt.Sprintf("socket buffers now %s (sockstat mem); TCPMemoryPressures %d, TCPAbortOnMemory %d since boot", plural.N(f.Sockstat.MemPages, "page"), pressures, aborts)
	exp := "below tcp_mem pressure; counters 0"
	if ok && len(m) == 3 && int64(f.Sockstat.MemPages) >= m[1] {
		return fail(fmt.Sprintf("TCP is under memory pressure now: %s of socket buffers >= tcp_mem pressure %s", plural.N(f.Sockstat.MemPages, "page"), plural.N(m[1], "page")),
			obs, exp, "find the sockets with full queues (ss -tm), or raise net.ipv4.tcp_mem (pages)")
	}
	if pressures > 0 || aborts > 0 {
		return warn(fmt.Sprintf("TCP ran out of socket memory before: TCPMemoryPressures %d, TCPAbortOnMemory %s reset since boot", pressures, plural.N(aborts, "connection")),
			obs, exp, "raise net.ipv4.tcp_mem (pages) or reduce buffered data per connection; check dmesg for \"TCP: out of memory\"")
	}
	return pass("no TCP memory pressure now or since boot", obs, exp)
}

// tcpMemAboveRAM warns, whatever the socket count, when tcp_mem's pressure
// or max threshold (pages) lies above physical memory: TCP memory
// pressure then never starts before RAM runs out (typically tcp_mem
// written in bytes, or copied from a bigger host). suggest is the remedy
// mem.tcp_mem gives for the target (suggestTCPMem), so following it
// passes both.
func tcpMemAboveRAM(f *facts.Facts, m []int64, obs, exp, suggest string) (verdict.Check, bool) {
	if f.MemTotal == 0 {
		return verdict.Check{}, false
	}
	page, ram := float64(f.PageSize), float64(f.MemTotal)
	var above []string
	for i, name := range []string{"min", "pressure", "max"} {
		if i > 0 && float64(m[i])*page > ram {
			above = append(above, fmt.Sprintf("%s %s (%s)", name, plural.N(m[i], "page"), Mib(float64(m[i])*page)))
		}
	}
	if len(above) == 0 {
		return verdict.Check{}, false
	}
	return warn(fmt.Sprintf("tcp_mem %s above physical memory %s: TCP memory pressure never starts before RAM runs out, and the OOM killer comes first (was tcp_mem written in bytes? it counts pages of %s)", strings.Join(above, " and "), Mib(ram), plural.N(f.PageSize, "byte")),
		obs, fmt.Sprintf("%s; pressure and max below RAM", exp), "set tcp_mem in pages, below RAM and enough for the target: "+suggest), true
}
