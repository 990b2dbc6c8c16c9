package checks

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/internal/verdict"
)

// memHost is a recorded host with the given RAM, MemAvailable (GiB) and
// tcp_mem (pages).
func memHost(t *testing.T, totalGiB, availGiB float64, tcpMem string) *facts.Facts {
	return host(t, fmt.Sprintf("mem_total_bytes: %d\nmem_available_bytes: %d\nsysctl: {net.ipv4.tcp_mem: %q}\n",
		int64(totalGiB*(1<<30)), int64(availGiB*(1<<30)), tcpMem))
}

// TestMemChecksAddUp: the sockets' own kernel memory and their buffers
// come out of one MemAvailable. Field case: 500000 sockets on 8 GiB with
// 3 GiB available passed mem.available (1953 MiB) and mem.tcp_mem (max
// 2304 MiB) each, together 4257 MiB; and mem.buffers passed a tcp_mem max
// of 5859 MiB on 3 GiB available because it multiplied the default
// buffer sizes instead of taking the kernel's cap, tcp_mem max.
func TestMemChecksAddUp(t *testing.T) {
	for _, c := range []struct {
		name            string
		totalGiB, avail float64
		tcpMem          string
		sockets         int
		id              string
		want            verdict.Status
	}{
		{"slab and tcp_mem max together exceed MemAvailable", 8, 3, "294912 442368 589824", 500000, "mem.buffers", verdict.Warn},
		{"tcp_mem max above MemAvailable at few sockets", 8, 3, "750000 1125000 1500000", 10000, "mem.buffers", verdict.Warn},
		{"kernel's own sizing on a roomy host", 8, 7, "94011 125350 188022", 10000, "mem.buffers", verdict.Pass},
		{"memory too small for slab and a page each", 8, 3, "100000 150000 200000", 500000, "mem.tcp_mem", verdict.Warn},
		{"pressure above max", 8, 7, "40000 50000 45590", 1000, "mem.tcp_mem", verdict.Warn},
	} {
		f := memHost(t, c.totalGiB, c.avail, c.tcpMem)
		tg := facts.Target{Sockets: c.sockets, Role: facts.Broker}
		if err := tg.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := testenv.CheckByID(t, Evaluate(f, tg), c.id); got.Status != c.want {
			t.Errorf("%s: %s %s: %s", c.name, c.id, got.Status, got.Summary)
		}
	}
}

// TestTCPMemRemedyPassesBothChecks: on hosts where mem.tcp_mem suggests
// a tcp_mem, that tcp_mem passes mem.tcp_mem and mem.buffers alike (the
// remedy used to cap at 3/4 of RAM while mem.buffers compared with
// MemAvailable, so following one made the other warn), also when the
// first finding was tcp_mem above RAM (its kernel-sizing remedy was then
// below one page per socket).
func TestTCPMemRemedyPassesBothChecks(t *testing.T) {
	suggestion := regexp.MustCompile(`net\.ipv4\.tcp_mem="(\d+ \d+ \d+)"`)
	tried := 0
	for _, initial := range []string{"100 150 200", "4294967296 4294967296 4294967296"} { // too small; written in bytes (above RAM)
		for _, totalGiB := range []float64{4, 8, 64, 512} {
			for _, availShare := range []float64{0.3, 0.6, 0.95} {
				for _, sockets := range []int{1000, 100000, 500000, 1000000} {
					f := memHost(t, totalGiB, totalGiB*availShare, initial)
					tg := facts.Target{Sockets: sockets, Role: facts.Broker}
					if err := tg.Validate(); err != nil {
						t.Fatal(err)
					}
					c := testenv.CheckByID(t, Evaluate(f, tg), "mem.tcp_mem")
					m := suggestion.FindStringSubmatch(c.Remedy)
					if m == nil {
						if c.Status != verdict.Pass && !strings.Contains(c.Remedy, "add memory") {
							t.Errorf("from %q: %g GiB, %d sockets: remedy gives no tcp_mem and does not say to add memory: %s", initial, totalGiB, sockets, c.Remedy)
						}
						continue // no tcp_mem can serve: the check says to add memory
					}
					tried++
					g := memHost(t, totalGiB, totalGiB*availShare, m[1])
					for _, id := range []string{"mem.tcp_mem", "mem.buffers"} {
						if c := testenv.CheckByID(t, Evaluate(g, tg), id); c.Status != verdict.Pass {
							t.Errorf("from %q: %g GiB (%.0f%% available), %d sockets, tcp_mem %q as suggested: %s %s: %s", initial, totalGiB, 100*availShare, sockets, m[1], id, c.Status, c.Summary)
						}
					}
				}
			}
		}
	}
	if tried < 10 {
		t.Errorf("only %d hosts got a tcp_mem suggestion; the test checked too little", tried)
	}
}
