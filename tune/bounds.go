package tune

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/sysctlval"
)

// conntrackEntryBytes is the kernel memory one conntrack entry takes:
// struct nf_conn from its slab (about 320 bytes on x86_64 with the usual
// extensions) plus its hash bucket.
const conntrackEntryBytes = 320

// kernelRelease is the host's kernel release (kernel.osrelease), "" in
// image mode or when unreadable.
func (pl *Plan) kernelRelease() string {
	v, ok, err := pl.current("kernel.osrelease")
	if err != nil || !ok {
		return ""
	}
	return strings.TrimSpace(v)
}

// memTotal is MemTotal from PROC/meminfo in bytes (0 when unknown).
func (pl *Plan) memTotal() uint64 {
	b, err := os.ReadFile(filepath.Join(pl.env.proc(), "meminfo"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.ParseUint(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// memoryWarnings warns about targets that only make sense with more RAM
// than the host has: tcp_mem pressure or max (in pages) above physical
// memory, and a conntrack table that would not fit.
func (pl *Plan) memoryWarnings(targets map[string]target) {
	mem := pl.memTotal()
	if mem == 0 {
		return
	}
	gib := func(b uint64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
	page := uint64(os.Getpagesize())
	if t, ok := targets["net.ipv4.tcp_mem"]; ok {
		if f, err := sysctlval.Fields(t.value); err == nil && len(f) == 3 {
			for i, name := range []string{"", "pressure", "max"} {
				if i == 0 || f[i] < 0 || uint64(f[i])*page <= mem {
					continue
				}
				pl.Warnings = append(pl.Warnings, fmt.Sprintf("sysctl net.ipv4.tcp_mem %q: %s %s is %s, above this host's physical memory (%s): TCP gets no back-pressure before the OOM killer; tcp_mem is in pages of %s, not bytes", t.value, name, plural.N(f[i], "page"), gib(uint64(f[i])*page), gib(mem), plural.N(page, "byte")))
			}
		}
	}
	for _, k := range []string{"net.netfilter.nf_conntrack_max", "net.nf_conntrack_max"} {
		t, ok := targets[k]
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(t.value, 10, 64); err == nil && n*conntrackEntryBytes > mem {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("sysctl %s %d: a full table takes about %s (%s an entry), more than this host's physical memory (%s); lower it to what the host can hold", k, n, gib(n*conntrackEntryBytes), plural.N(conntrackEntryBytes, "byte"), gib(mem)))
		}
	}
}
