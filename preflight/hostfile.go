package preflight

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"gopkg.in/yaml.v3"
)

// HostFile is a recorded host, the `host:` block of a field case
// (preflight/testdata/cases/*.yaml). Every field is optional: an absent one
// is taken from StockDebian12.
type HostFile struct {
	Kernel            *string           `yaml:"kernel"`
	CPUs              *int              `yaml:"cpus"`
	MemTotalBytes     *uint64           `yaml:"mem_total_bytes"`
	MemAvailableBytes *uint64           `yaml:"mem_available_bytes"`
	PageSize          *int64            `yaml:"page_size"`
	Sysctl            map[string]string `yaml:"sysctl"`
	Conntrack         *Conntrack        `yaml:"conntrack"`
	TargetProcess     *ProcessFacts     `yaml:"target_process"`
	// CapabilitiesMissing lists capabilities the target process lacks
	// (CAP_SYS_RESOURCE).
	CapabilitiesMissing []string `yaml:"capabilities_missing"`
	// LimitsD maps pam_limits domains to nofile soft/hard.
	LimitsD map[string]profiles.Limit `yaml:"limits_d"`
	Systemd *struct {
		Running *bool `yaml:"running"`
		// DefaultLimitNOFILE as system.conf spells it ("1024:524288").
		DefaultLimitNOFILE string `yaml:"default_limit_nofile"`
	} `yaml:"systemd"`
	SourceAddresses []string          `yaml:"source_addresses"`
	ListeningPorts  []int             `yaml:"listening_ports"`
	Netstat         map[string]uint64 `yaml:"netstat"`
	Sockstat        *struct {
		InUse    uint64 `yaml:"inuse"`
		Orphan   uint64 `yaml:"orphan"`
		TW       uint64 `yaml:"tw"`
		Alloc    uint64 `yaml:"alloc"`
		MemPages uint64 `yaml:"mem"`
	} `yaml:"sockstat"`
	Clock     *Clock     `yaml:"clock"`
	Container *Container `yaml:"container"`
}

// LoadHostYAML reads a recorded host (the `host:` mapping of a field case)
// strictly — an unknown field is an error, so a typo does not silently
// fall back to a default — and returns its Facts with the stock Debian 12
// defaults filled in. Errors are exitcode.BadInput naming the source.
func LoadHostYAML(name string, r io.Reader) (*Facts, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, exitcode.BadInputf("%s: %v", name, err)
	}
	var h HostFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&h); err != nil && err != io.EOF {
		return nil, exitcode.BadInputf("%s: %v", name, err)
	}
	return h.Facts()
}

// Facts applies the recorded fields over StockDebian12 (with the recorded
// RAM, so RAM-derived kernel defaults follow it).
func (h *HostFile) Facts() (*Facts, error) {
	var memTotal uint64
	if h.MemTotalBytes != nil {
		memTotal = *h.MemTotalBytes
	}
	f := StockDebian12(memTotal)
	if h.PageSize != nil {
		f.PageSize = *h.PageSize
	}
	// Recorded sysctls first, then re-derive the RAM-based defaults only for
	// keys the recording leaves out.
	for _, k := range []string{"net.ipv4.tcp_max_syn_backlog", "net.ipv4.tcp_max_tw_buckets", "net.ipv4.tcp_max_orphans", "net.ipv4.tcp_mem"} {
		delete(f.Sysctl, k)
	}
	for k, v := range h.Sysctl {
		f.Sysctl[k] = v
	}
	f.deriveMemorySysctls(f.MemTotal)
	if v, ok := h.Sysctl["fs.file-max"]; ok {
		if _, rec := h.Sysctl["fs.file-nr"]; !rec {
			f.Sysctl["fs.file-nr"] = "1504\t0\t" + strings.TrimSpace(v)
		}
	}
	if h.Kernel != nil {
		f.Kernel = *h.Kernel
	}
	if h.CPUs != nil {
		f.CPUs = *h.CPUs
	}
	if h.MemAvailableBytes != nil {
		f.MemAvailable = *h.MemAvailableBytes
	}
	if h.Conntrack != nil {
		f.Conntrack = *h.Conntrack
	}
	if h.TargetProcess != nil {
		tp := *h.TargetProcess
		if tp.ManagedBy == "" {
			tp.ManagedBy = "shell"
		}
		if tp.ManagedBy != "shell" && tp.ManagedBy != "systemd" {
			return nil, exitcode.BadInputf("target_process.managed_by %q: want shell or systemd", tp.ManagedBy)
		}
		if tp.Source == "" {
			tp.Source = "recorded"
		}
		tp.CapSysResource = true
		f.Target = tp
	}
	for _, c := range h.CapabilitiesMissing {
		switch strings.ToUpper(c) {
		case "CAP_SYS_RESOURCE":
			f.Target.CapSysResource = false
		default:
			return nil, exitcode.BadInputf("capabilities_missing %q: only CAP_SYS_RESOURCE matters to preflight", c)
		}
	}
	if h.LimitsD != nil {
		f.LimitsD = h.LimitsD
	}
	if h.Systemd != nil {
		if h.Systemd.Running != nil {
			f.Systemd.Running = *h.Systemd.Running
		}
		if h.Systemd.DefaultLimitNOFILE != "" {
			l, err := parseSystemdLimit(h.Systemd.DefaultLimitNOFILE)
			if err != nil {
				return nil, exitcode.BadInputf("systemd.default_limit_nofile %q: %v", h.Systemd.DefaultLimitNOFILE, err)
			}
			f.Systemd.DefaultLimitNOFILE = &l
		}
	}
	if h.SourceAddresses != nil {
		f.SourceAddresses = h.SourceAddresses
	}
	if h.ListeningPorts != nil {
		f.ListeningPorts = h.ListeningPorts
	}
	for k, v := range h.Netstat {
		f.Netstat[k] = v
	}
	if s := h.Sockstat; s != nil {
		f.Sockstat = Sockstat{InUse: s.InUse, Orphan: s.Orphan, TW: s.TW, Alloc: s.Alloc, MemPages: s.MemPages}
	}
	if h.Clock != nil {
		f.Clock = *h.Clock
	}
	if h.Container != nil {
		f.Container = *h.Container
	}
	if f.PageSize <= 0 {
		return nil, exitcode.BadInputf("page_size %d: want bytes > 0 (4096)", f.PageSize)
	}
	return f, nil
}

// String is a short description for test logs.
func (h *HostFile) String() string { return fmt.Sprintf("%+v", *h) }
