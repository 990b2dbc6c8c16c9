package facts

import (
	"fmt"
	"math/bits"

	"github.com/hostprep/hostprep/profiles"
)

// Stock host used when a recorded host leaves a field out: "as on a stock
// Debian 12 host with kernel 6.1, 8 GiB RAM, 4 CPUs", as the field cases
// in testdata/cases assume.
const (
	StockMemTotal = 8 << 30 // bytes
	StockCPUs     = 4
	StockKernel   = "6.1.0-13-amd64"
	stockPageSize = 4096
)

// StockDebian12 returns the Facts of an idle stock Debian 12 host (kernel
// 6.1, systemd 252) with memTotal bytes of RAM (StockMemTotal if 0).
//
// Where each value comes from:
//   - net.core.somaxconn 4096: SOMAXCONN in include/linux/socket.h since 5.4.
//   - net.ipv4.ip_local_port_range "32768 60999": inet_init_net(),
//     net/ipv4/af_inet.c; ip_local_reserved_ports empty.
//   - tcp_max_syn_backlog, tcp_max_tw_buckets, tcp_max_orphans: derived from
//     the established-hash size, which alloc_large_system_hash sizes at one
//     bucket per 128 KiB of RAM rounded up to a power of two (tcp_init() in
//     net/ipv4/tcp.c, tcp_sk_init() in net/ipv4/tcp_ipv4.c):
//     syn_backlog = max(128, ehash/128), tw_buckets = ehash/2,
//     max_orphans = ehash/2. 8 GiB gives 512, 32768, 32768 (a 24 GiB host
//     gives 2048, 131072, 131072, as measured on the build machine).
//   - tcp_mem: tcp_init_mem() in net/ipv4/tcp.c: limit = free buffer pages
//     / 16; {limit/4*3, limit, limit/4*3*2} pages. Free buffer pages are
//     taken as MemTotal/page size (the real figure is ~0.5 % lower).
//   - tcp_rmem "4096 131072 6291456", tcp_wmem "4096 16384 4194304",
//     tcp_syncookies 1, tcp_tw_reuse 2 (loopback only), tcp_fin_timeout 60:
//     Documentation/networking/ip-sysctl.rst defaults.
//   - fs.nr_open 1048576: sysctl_nr_open = 1024*1024 (fs/file.c). systemd
//     PID 1 may raise it on boot; cases that depend on it set it.
//   - fs.file-max 9223372036854775807: systemd >= 240 raises it to LONG_MAX
//     (NEWS for v240); fs.file-nr allocated 1504 on an idle host.
//   - systemd DefaultLimitNOFILE 1024:524288: systemd >= 240 built-in
//     default; a login shell inherits the same (no limits.d entries).
//   - nf_conntrack not loaded (no firewall rules on a stock install).
//   - one global source address, sshd listening on port 22 (backlog 128),
//     PID 1 (systemd 252) with nofile fs.nr_open as its own limit, clock
//     synchronised by systemd-timesyncd, not in a container, no counters.
func StockDebian12(memTotal uint64) *Facts {
	if memTotal == 0 {
		memTotal = StockMemTotal
	}
	f := &Facts{
		Kernel:       StockKernel,
		PageSize:     stockPageSize,
		CPUs:         StockCPUs,
		MemTotal:     memTotal,
		MemAvailable: memTotal / 8 * 7, // idle host: ~7/8 available
		Sysctl: map[string]string{
			"net.core.somaxconn":               "4096",
			"net.ipv4.ip_local_port_range":     "32768\t60999",
			"net.ipv4.ip_local_reserved_ports": "",
			"net.ipv4.tcp_syncookies":          "1",
			"net.ipv4.tcp_tw_reuse":            "2",
			"net.ipv4.tcp_timestamps":          "1",
			"net.ipv4.tcp_fin_timeout":         "60",
			"net.ipv4.tcp_rmem":                "4096\t131072\t6291456",
			"net.ipv4.tcp_wmem":                "4096\t16384\t4194304",
			"fs.nr_open":                       "1048576",
			"fs.file-max":                      "9223372036854775807",
			"fs.file-nr":                       "1504\t0\t9223372036854775807",
			// systemd's /usr/lib/sysctl.d/50-pid-max.conf (systemd >= 243)
			"kernel.pid_max": "4194304",
		},
		HostTasks: 180, // an idle Debian 12 server (/proc/loadavg)
		Target: ProcessFacts{
			ManagedBy: "shell", NofileSoft: 1024, NofileHard: 524288, Assumed: true,
			CapSysResource: true, Source: "stock Debian 12 login shell (systemd DefaultLimitNOFILE 1024:524288)",
		},
		Systemd: SystemdFacts{
			Running:            true,
			DefaultLimitNOFILE: &profiles.Limit{Soft: 1024, Hard: 524288},
		},
		SourceAddresses: []string{"192.0.2.1"},
		ListeningPorts:  []int{22},
		// sshd: listen(fd, 128) (SSH_LISTEN_BACKLOG in OpenSSH's sshd.c)
		Listeners:      []Listener{{Address: "0.0.0.0", Port: 22, Backlog: 128, Process: "sshd"}, {Address: "::", Port: 22, Backlog: 128, Process: "sshd"}},
		ListenersKnown: true,
		Netstat:        map[string]uint64{},
		Pid1Nofile:     &profiles.Limit{Soft: 1024, Hard: 524288},
		Clock:          Clock{Known: true, Synced: true},
	}
	f.deriveMemorySysctls(memTotal)
	return f
}

// deriveMemorySysctls sets the RAM-derived kernel defaults (see
// StockDebian12) unless already present.
func (f *Facts) deriveMemorySysctls(memTotal uint64) {
	ehash := uint64(1)
	if b := memTotal / (128 << 10); b > 1 {
		ehash = 1 << bits.Len64(b-1) // round up to a power of two
	}
	set := func(k, v string) {
		if _, ok := f.Sysctl[k]; !ok {
			f.Sysctl[k] = v
		}
	}
	set("net.ipv4.tcp_max_syn_backlog", fmt.Sprint(max(128, ehash/128)))
	set("net.ipv4.tcp_max_tw_buckets", fmt.Sprint(ehash/2))
	set("net.ipv4.tcp_max_orphans", fmt.Sprint(ehash/2))
	limit := max(memTotal/uint64(f.PageSize)/16, 128)
	set("net.ipv4.tcp_mem", fmt.Sprintf("%d\t%d\t%d", limit/4*3, limit, limit/4*3*2))
	// set_max_threads() in kernel/fork.c: RAM / (8 x THREAD_SIZE), with
	// THREAD_SIZE 16 KiB on x86_64.
	set("kernel.threads-max", fmt.Sprint(max(memTotal/(8*16<<10), 20)))
}
