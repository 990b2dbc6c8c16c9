// Package factstest builds the recorded host trees that the tests of
// preflight's phases gather from.
package factstest

import (
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// LimitsFile is a /proc/PID/limits with nofile 1024:524288.
const LimitsFile = `Limit                     Soft Limit           Hard Limit           Units     
Max cpu time              unlimited            unlimited            seconds   
Max open files            1024                 524288               files     
Max locked memory         8388608              8388608              bytes     
`

// FixtureRoot writes a recorded /proc, /sys and /etc tree, node_exporter
// style, to a temporary directory and returns it: a host with a
// mosquitto (pid 4242, nofile 1024:524288) in mosquitto.service, an emqx
// unit, systemd running and limits.conf lines. extra adds or replaces
// files (path under the root: content).
func FixtureRoot(t *testing.T, extra map[string]string) string {
	files := map[string]string{
		"proc/sys/fs/file-max":                        "9223372036854775807\n",
		"proc/sys/fs/file-nr":                         "2016\t0\t9223372036854775807\n",
		"proc/sys/fs/nr_open":                         "1048576\n",
		"proc/sys/net/core/somaxconn":                 "4096\n",
		"proc/sys/net/ipv4/ip_local_port_range":       "32768\t60999\n",
		"proc/sys/net/ipv4/ip_local_reserved_ports":   "\n",
		"proc/sys/net/ipv4/tcp_mem":                   "94500\t126000\t189000\n",
		"proc/sys/net/netfilter/nf_conntrack_max":     "65536\n",
		"proc/sys/net/netfilter/nf_conntrack_count":   "60000\n",
		"proc/sys/net/netfilter/nf_conntrack_buckets": "16384\n",
		"proc/sys/kernel/osrelease":                   "6.1.0-13-amd64\n",
		"proc/net/netstat": "TcpExt: SyncookiesSent ListenOverflows ListenDrops TCPMemoryPressures\n" +
			"TcpExt: 0 7 9 0\nIpExt: InNoRoutes\nIpExt: 0\n",
		"proc/net/sockstat": "sockets: used 200\nTCP: inuse 12 orphan 1 tw 30 alloc 14 mem 5\nUDP: inuse 1 mem 0\n",
		"proc/net/tcp": "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
			"   0: 00000000:075B 00000000:0000 0A 00000000:00000000 00:00000000 00000000   107        0 1 1 0000000000000000 100 0 0 10 0\n" +
			"   1: 0100007F:9C40 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1\n",
		"proc/net/tcp6": "  sl  local_address rem_address   st\n" +
			"   0: 00000000000000000000000000000000:2382 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   0 0 3 1\n",
		"proc/4242/limits":                                   LimitsFile,
		"proc/4242/status":                                   "Name:\tmosquitto\nCapEff:\t0000000000000000\n",
		"proc/4242/cgroup":                                   "0::/system.slice/mosquitto.service\n",
		"proc/meminfo":                                       "MemTotal:       16384000 kB\nMemFree:         8000000 kB\nMemAvailable:   12000000 kB\nBuffers: 0 kB\nCached: 0 kB\n",
		"run/systemd/system/.keep":                           "",
		"etc/systemd/system.conf":                            "[Manager]\n#DefaultLimitNOFILE=1024:524288\n",
		"etc/systemd/system.conf.d/10-nofile.conf":           "[Manager]\nDefaultLimitNOFILE=4096:65536\n",
		"lib/systemd/system/emqx.service":                    "[Service]\nExecStart=/usr/bin/emqx\nLimitNOFILE=65536\nUser=emqx\n",
		"etc/systemd/system/emqx.service.d/60-hostprep.conf": "[Service]\nLimitNOFILE=1048576:2097152\n",
		"etc/security/limits.conf":                           "# comment\n*  soft  nofile  1048576\n*  hard  nofile  1048576\nroot - nofile 65536\n@adm hard nofile 4096\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return testenv.TempTree(t, files)
}
