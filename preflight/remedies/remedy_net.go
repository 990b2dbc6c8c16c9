package remedies

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/preflight/checks"
	"github.com/hostprep/hostprep/preflight/facts"
)

// Remedies of the network and memory checks (check_ports.go,
// check_conntrack.go, check_tcp.go, check_mem.go, check_iotdb.go): the
// sysctls, source addresses and IoTDB properties their printed remedies
// set.

func init() {
	registerRemedy("ports.ephemeral", remedyPortsEphemeral)
	registerRemedy("ports.time_wait", remedyPortsTimeWait)
	registerRemedy("conntrack", remedyConntrack)
	registerRemedy("tcp.orphans", remedyTCPOrphans)
	registerRemedy("tcp.tw_buckets", remedyTCPTWBuckets)
	registerRemedy("mem.tcp_mem", remedyMemTCPMem)
	registerRemedy("iotdb.max_map_count", remedyIoTDBMapCount)
	registerRemedy("iotdb.frame_size", remedyIoTDBFrame)
}

func remedyPortsEphemeral(f *facts.Facts, t facts.Target) []Change {
	c, ok := checks.LoadgenCapacity(f, t)
	if !ok || c.Total >= int64(t.Sockets) {
		return nil
	}
	if c.PerPair == 0 {
		return []Change{SetSysctl{Key: "net.ipv4.ip_local_port_range", Value: fmt.Sprintf("%d %d", checks.WidestLow, checks.WidestHigh)}}
	}
	return []Change{BindSourceAddresses{N: int(checks.CeilDiv(int64(t.Sockets), c.PerPair))}}
}

func remedyPortsTimeWait(f *facts.Facts, t facts.Target) []Change {
	if len(t.SourceIPs) > 0 {
		return nil // IP_BIND_ADDRESS_NO_PORT is the load generator's code
	}
	cs := []Change{SetSysctl{Key: "net.ipv4.tcp_tw_reuse", Value: "1"}}
	if strings.TrimSpace(f.Sysctl["net.ipv4.tcp_timestamps"]) == "0" {
		cs = append(cs, SetSysctl{Key: "net.ipv4.tcp_timestamps", Value: "1"})
	}
	return cs
}

func remedyConntrack(f *facts.Facts, t facts.Target) []Change {
	c := f.Conntrack
	if !c.Loaded || checks.ConntrackUnknown(c) != "" {
		return nil
	}
	n := uint64(t.Sockets)
	want := c.Count + n + n/4
	var cs []Change
	if want > c.Max {
		cs = append(cs, SetSysctl{Key: "net.netfilter.nf_conntrack_max", Value: strconv.FormatUint(want, 10)})
	}
	if b := checks.ConntrackBuckets(c, want); b > c.Buckets && !c.Unknown("nf_conntrack_buckets") {
		cs = append(cs, SetConntrackHashsize{Buckets: b})
	}
	return cs
}

func remedyTCPOrphans(f *facts.Facts, t facts.Target) []Change {
	m, ok := f.SysInt("net.ipv4.tcp_max_orphans")
	if !ok {
		return nil
	}
	if now := int64(f.Sockstat.Orphan); now >= m {
		return sysctlSets([]string{checks.AtLeast(t, "net.ipv4.tcp_max_orphans", max(int64(t.Sockets), 2*now))})
	}
	return []Change{SetSysctl{Key: "net.ipv4.tcp_max_orphans", Value: strconv.Itoa(t.Sockets)}}
}

func remedyTCPTWBuckets(f *facts.Facts, t facts.Target) []Change {
	return []Change{SetSysctl{Key: "net.ipv4.tcp_max_tw_buckets", Value: strconv.FormatInt(int64(t.ConnRate)*checks.TimeWaitSeconds, 10)}}
}

func remedyMemTCPMem(f *facts.Facts, t facts.Target) []Change {
	lo, mid, hi, fits := checks.SuggestTCPMem(f, t)
	if !fits {
		return nil
	}
	return []Change{SetSysctl{Key: "net.ipv4.tcp_mem", Value: fmt.Sprintf("%d %d %d", lo, mid, hi)}}
}

func remedyIoTDBMapCount(f *facts.Facts, t facts.Target) []Change {
	return sysctlSets([]string{checks.AtLeast(t, "vm.max_map_count", checks.MinMaxMapCount)})
}

func remedyIoTDBFrame(f *facts.Facts, t facts.Target) []Change {
	if f.IoTDB == nil || t.IoTDB.BatchPoints == 0 {
		return nil
	}
	return []Change{SetIoTDBProperty{Name: facts.PropFrameSize, Value: strconv.FormatInt(int64(t.IoTDB.BatchPoints)*checks.BytesPerPoint*2, 10)}}
}
