package preflight

import (
	"fmt"
	"math"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/verdict"
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
	register(CheckDef{ID: "mem.available", Doc: "sockets x kernel memory per socket <= MemAvailable", Func: checkMemAvailable})
	register(CheckDef{ID: "mem.tcp_mem", Doc: "net.ipv4.tcp_mem max (pages) >= one page of buffered data per socket", Func: checkMemTCPMem})
	register(CheckDef{ID: "mem.buffers", Doc: "worst case tcp_rmem+tcp_wmem defaults x sockets is capped below RAM by tcp_mem", Func: checkMemBuffers})
	register(CheckDef{ID: "mem.pressure", Doc: "no TCP memory pressure now or since boot (sockstat mem, TCPMemoryPressures, TCPAbortOnMemory)", Func: checkMemPressure})
}

// perSocketCost returns the kernel bytes per socket and where the number
// comes from.
func perSocketCost(f *Facts) (float64, string) {
	ok, _ := measuredCost(f)
	switch {
	case ok:
		return f.Measured.BytesPerSocket, fmt.Sprintf("measured by --active over %s", plural.N(f.Measured.ReachedSockets, "socket"))
	case f.Measured != nil:
		return EstimatedBytesPerSocket, fmt.Sprintf("estimate, kept: --active over %s could not measure it (see the active check)", plural.N(f.Measured.ReachedSockets, "socket"))
	}
	return EstimatedBytesPerSocket, "estimate; --active measures it"
}

// measuredCost says whether f carries a significant --active measurement
// of the cost per socket, and if there is a measurement that is not, why.
func measuredCost(f *Facts) (bool, string) {
	if f.Measured == nil {
		return false, ""
	}
	return f.Measured.CostSignificance()
}

func checkMemAvailable(f *Facts, t Target) verdict.Check {
	if f.MemAvailable == 0 {
		return skip("MemAvailable unknown")
	}
	per, src := perSocketCost(f)
	need := per * float64(t.Sockets)
	avail := float64(f.MemAvailable)
	obs := fmt.Sprintf("MemAvailable %s of %s", gib(avail), gib(float64(f.MemTotal)))
	exp := fmt.Sprintf("%s x %s per idle socket (%s) = %s of kernel memory, plus the application's own per-connection memory", plural.N(t.Sockets, "socket"), plural.N(int(math.Round(per)), "byte"), src, mib(need))
	switch {
	case need > avail:
		return fail(fmt.Sprintf("%d idle sockets need about %s of kernel memory > MemAvailable %s", t.Sockets, mib(need), mib(avail)), obs, exp,
			fmt.Sprintf("add memory or spread the load: this host holds about %d idle sockets", int64(avail/per)))
	case need > 0.8*avail:
		return warn(fmt.Sprintf("%d idle sockets need about %s of kernel memory, %.0f %% of MemAvailable %s, leaving little for the application", t.Sockets, mib(need), 100*need/avail, mib(avail)), obs, exp,
			"add memory or spread the load over more hosts")
	}
	return pass(fmt.Sprintf("%d idle sockets need about %s of kernel memory; MemAvailable %s", t.Sockets, mib(need), mib(avail)), obs, exp)
}

func checkMemTCPMem(f *Facts, t Target) verdict.Check {
	m, ok := f.SysFields("net.ipv4.tcp_mem")
	if !ok || len(m) != 3 {
		return skip("net.ipv4.tcp_mem not readable")
	}
	page := float64(f.PageSize)
	maxPages := m[2]
	needPages := int64(t.Sockets) // one page (sk_mem_quantum) per socket with any data queued
	obs := fmt.Sprintf("tcp_mem %d %d %s (min %s, pressure %s, max %s; a page is %s)", m[0], m[1], plural.N(m[2], "page"), mib(float64(m[0])*page), mib(float64(m[1])*page), mib(float64(m[2])*page), plural.N(f.PageSize, "byte"))
	exp := fmt.Sprintf("max >= %s (%s): one page of buffered data for each of %s", plural.N(needPages, "page"), mib(float64(needPages)*page), plural.N(t.Sockets, "socket"))
	if c, ok := tcpMemAboveRAM(f, m, obs, exp); ok {
		return c // above RAM is wrong whatever the target: it comes first
	}
	if maxPages >= needPages {
		return pass(fmt.Sprintf("tcp_mem max %s (%s) covers %s with a page of buffered data each", plural.N(maxPages, "page"), mib(float64(maxPages)*page), plural.N(t.Sockets, "socket")), obs, exp)
	}
	// Suggest {N, 1.5 N, 2 N} pages, capped so max stays under 3/4 of RAM.
	hi := 2 * needPages
	if cap := int64(float64(f.MemTotal) * 0.75 / page); f.MemTotal > 0 && hi > cap {
		hi = cap
	}
	lo, mid := hi/2, hi*3/4
	return warn(fmt.Sprintf("tcp_mem max %s (%s) is below what %s with buffered data need (%s, %s): tcp_mem counts pages of %s, not bytes; past it the kernel drops data and logs \"TCP: out of memory -- consider tuning tcp_mem\"",
		plural.N(maxPages, "page"), mib(float64(maxPages)*page), plural.N(t.Sockets, "socket"), plural.N(needPages, "page"), mib(float64(needPages)*page), plural.N(f.PageSize, "byte")),
		obs, exp, fmt.Sprintf("sysctl -w net.ipv4.tcp_mem=\"%d %d %d\" (pages: %s / %s / %s)", lo, mid, hi, mib(float64(lo)*page), mib(float64(mid)*page), mib(float64(hi)*page)))
}

func checkMemBuffers(f *Facts, t Target) verdict.Check {
	r, ok1 := f.SysFields("net.ipv4.tcp_rmem")
	w, ok2 := f.SysFields("net.ipv4.tcp_wmem")
	m, ok3 := f.SysFields("net.ipv4.tcp_mem")
	if !ok1 || !ok2 || !ok3 || len(r) != 3 || len(w) != 3 || len(m) != 3 {
		return skip("tcp_rmem, tcp_wmem or tcp_mem not readable")
	}
	per := float64(r[1] + w[1])
	worst := per * float64(t.Sockets)
	capBytes := float64(m[2]) * float64(f.PageSize)
	obs := fmt.Sprintf("tcp_rmem default %d + tcp_wmem default %s = %s per socket with data in flight; x %s = %s; tcp_mem max %s; MemAvailable %s",
		r[1], plural.N(w[1], "byte"), fmt.Sprintf("%.0f", per), plural.N(t.Sockets, "socket"), gib(worst), mib(capBytes), mib(float64(f.MemAvailable)))
	exp := "worst-case socket buffers capped by tcp_mem max below MemAvailable"
	if worst <= float64(f.MemAvailable) {
		return pass(fmt.Sprintf("worst case %s of socket buffers fits in MemAvailable %s", gib(worst), gib(float64(f.MemAvailable))), obs, exp)
	}
	if capBytes <= float64(f.MemAvailable) {
		return pass(fmt.Sprintf("worst case %s of socket buffers is capped at tcp_mem max %s, below MemAvailable", gib(worst), mib(capBytes)), obs, exp)
	}
	return warn(fmt.Sprintf("worst case %s of socket buffers (%s with full default buffers) and tcp_mem max %s exceeds MemAvailable %s: nothing stops buffers from exhausting RAM before TCP memory pressure starts (tcp_mem may have been written in bytes)",
		gib(worst), plural.N(t.Sockets, "socket"), mib(capBytes), mib(float64(f.MemAvailable))),
		obs, exp, fmt.Sprintf("set net.ipv4.tcp_mem max below MemAvailable, in pages of %s (e.g. max %s = %s)", plural.N(f.PageSize, "byte"), plural.N(int64(float64(f.MemAvailable)*0.75)/f.PageSize, "page"), mib(float64(f.MemAvailable)*0.75)))
}

func checkMemPressure(f *Facts, t Target) verdict.Check {
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
// written in bytes, or copied from a bigger host).
func tcpMemAboveRAM(f *Facts, m []int64, obs, exp string) (verdict.Check, bool) {
	if f.MemTotal == 0 {
		return verdict.Check{}, false
	}
	page, ram := float64(f.PageSize), float64(f.MemTotal)
	var above []string
	for i, name := range []string{"min", "pressure", "max"} {
		if i > 0 && float64(m[i])*page > ram {
			above = append(above, fmt.Sprintf("%s %s (%s)", name, plural.N(m[i], "page"), mib(float64(m[i])*page)))
		}
	}
	if len(above) == 0 {
		return verdict.Check{}, false
	}
	limit := int64(ram / page / 16) // tcp_init_mem(): free buffer pages / 16
	return warn(fmt.Sprintf("tcp_mem %s above physical memory %s: TCP memory pressure never starts before RAM runs out, and the OOM killer comes first (was tcp_mem written in bytes? it counts pages of %s)", strings.Join(above, " and "), mib(ram), plural.N(f.PageSize, "byte")),
		obs, fmt.Sprintf("%s; pressure and max below RAM", exp),
		fmt.Sprintf("hostprep tune apply with net.ipv4.tcp_mem below RAM in pages, e.g. the kernel's own sizing for this RAM \"%d %d %d\"", limit/4*3, limit, limit/4*3*2)), true
}
