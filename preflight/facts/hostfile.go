package facts

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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
	HostTasks         *uint64           `yaml:"host_tasks"`
	// TargetProcess is the process that will hold the sockets: with a pid,
	// its /proc/PID/limits; with managed_by systemd and a unit but no pid,
	// the unit's LimitNOFILE as written ("infinity" allowed), which
	// preflight resolves as systemd does (see resolveNofile).
	TargetProcess *hostTarget `yaml:"target_process"`
	// Pid1Nofile is PID 1's RLIMIT_NOFILE (/proc/1/limits).
	Pid1Nofile *struct {
		Soft nofileValue `yaml:"soft"`
		Hard nofileValue `yaml:"hard"`
	} `yaml:"pid1_nofile"`
	// Files are configuration files on the host (absolute path -> content):
	// limits.conf and limits.d, system.conf and its drop-ins, unit files
	// and their drop-ins. They are read as a live host's would be: limits.d
	// for a login of root (unless limits_d is given), DefaultLimitNOFILE (unless
	// systemd.default_limit_nofile is), and the LimitNOFILE of a
	// target_process unit given without nofile numbers.
	Files map[string]string `yaml:"files"`
	// Listeners are the TCP listeners (sock_diag, ss -ltn): port, backlog
	// (Send-Q), accept_queue (Recv-Q), address (default 0.0.0.0),
	// process and pid.
	Listeners []Listener `yaml:"listeners"`
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
		// yaml.v3 lists type errors one per line; an error is one line.
		return nil, exitcode.BadInputf("%s: %s", name, strings.Join(strings.Fields(err.Error()), " "))
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
	h.applySysctl(f)
	h.applyMachine(f)
	if h.TargetProcess != nil {
		if err := h.TargetProcess.apply(f); err != nil {
			return nil, err
		}
	}
	if err := h.applyFiles(f); err != nil {
		return nil, err
	}
	f.capUnlimited()
	if err := h.applyCapabilities(f); err != nil {
		return nil, err
	}
	if h.LimitsD != nil {
		f.LimitsD = h.LimitsD
	}
	if err := h.applySystemd(f); err != nil {
		return nil, err
	}
	if h.SourceAddresses != nil {
		f.SourceAddresses = h.SourceAddresses
	}
	if err := h.applyListeners(f); err != nil {
		return nil, err
	}
	h.applyCounters(f)
	if f.PageSize <= 0 {
		return nil, exitcode.BadInputf("page_size %d: want bytes > 0 (4096)", f.PageSize)
	}
	return f, nil
}

// applySysctl sets the recorded sysctls first, then re-derives the
// RAM-based defaults only for keys the recording leaves out; a recorded
// fs.file-max without fs.file-nr gets a matching fs.file-nr.
func (h *HostFile) applySysctl(f *Facts) {
	for _, k := range []string{"net.ipv4.tcp_max_syn_backlog", "net.ipv4.tcp_max_tw_buckets", "net.ipv4.tcp_max_orphans", "net.ipv4.tcp_mem", "kernel.threads-max"} {
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
}

// applyMachine sets the recorded kernel, CPUs, MemAvailable, conntrack
// and PID 1's nofile.
func (h *HostFile) applyMachine(f *Facts) {
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
	if h.HostTasks != nil {
		f.HostTasks = *h.HostTasks
	}
	if h.Pid1Nofile != nil {
		f.Pid1Nofile = &profiles.Limit{Soft: uint64(h.Pid1Nofile.Soft), Hard: uint64(h.Pid1Nofile.Hard)}
	}
}

// applyCapabilities clears the capabilities the target process lacks; a
// name other than CAP_SYS_RESOURCE is bad input.
func (h *HostFile) applyCapabilities(f *Facts) error {
	for _, c := range h.CapabilitiesMissing {
		switch strings.ToUpper(c) {
		case "CAP_SYS_RESOURCE":
			f.Target.CapSysResource = false
		default:
			return exitcode.BadInputf("capabilities_missing %q: only CAP_SYS_RESOURCE matters to preflight", c)
		}
	}
	return nil
}

// applySystemd sets whether systemd runs and its DefaultLimitNOFILE; a
// default_limit_nofile systemd would not parse is bad input.
func (h *HostFile) applySystemd(f *Facts) error {
	if h.Systemd == nil {
		return nil
	}
	if h.Systemd.Running != nil {
		f.Systemd.Running = *h.Systemd.Running
	}
	if h.Systemd.DefaultLimitNOFILE != "" {
		l, err := parseSystemdLimit(h.Systemd.DefaultLimitNOFILE)
		if err != nil {
			return exitcode.BadInputf("systemd.default_limit_nofile %q: %v", h.Systemd.DefaultLimitNOFILE, err)
		}
		f.Systemd.DefaultLimitNOFILE = &l
	}
	return nil
}

// applyCounters sets the recorded netstat and sockstat counters, the
// clock and the container.
func (h *HostFile) applyCounters(f *Facts) {
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
}

// String is a short description for test logs.
func (h *HostFile) String() string { return fmt.Sprintf("%+v", *h) }

// nofileValue is a recorded nofile number, or "infinity"/"unlimited"
// (Unlimited).
type nofileValue uint64

func (v *nofileValue) UnmarshalYAML(n *yaml.Node) error {
	switch s := strings.TrimSpace(n.Value); s {
	case "infinity", "unlimited", "max":
		*v = nofileValue(Unlimited)
		return nil
	default:
		u, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: nofile %q: want a number or infinity", n.Line, s)
		}
		*v = nofileValue(u)
		return nil
	}
}

// hostTarget is the recorded target_process.
type hostTarget struct {
	ManagedBy       string      `yaml:"managed_by"`
	PID             int         `yaml:"pid"`
	Unit            string      `yaml:"unit"`
	NofileSoft      nofileValue `yaml:"nofile_soft"`
	NofileHard      nofileValue `yaml:"nofile_hard"`
	Source          string      `yaml:"source"`
	UnitFile        string      `yaml:"unit_file"`
	UnitLimitNOFILE string      `yaml:"unit_limit_nofile"`
	UnitMissing     bool        `yaml:"unit_missing"`
	// Threads, NprocSoft, PidsMax ("max" or infinity: no limit) and
	// PidsCurrent are TaskFacts.
	Threads     uint64      `yaml:"threads"`
	RootUser    bool        `yaml:"root_user"`
	UserTasks   uint64      `yaml:"user_tasks"`
	NprocSoft   nofileValue `yaml:"nproc_soft"`
	PidsMax     nofileValue `yaml:"pids_max"`
	PidsCurrent uint64      `yaml:"pids_current"`
	// HeldFDs, HeldFDsUnseen and NetNS are ProcessFacts'.
	HeldFDs       uint64 `yaml:"held_fds"`
	HeldFDsUnseen string `yaml:"held_fds_unseen"`
	NetNS         string `yaml:"net_ns"`
	// Active is the unit's ActiveState as a yes/no (false: "inactive"),
	// MainPID its main process (systemctl show MainPID; 0 when it is not
	// running; same as pid).
	Active  *bool `yaml:"active"`
	MainPID int   `yaml:"main_pid"`
}

// apply sets f.Target from the recording (after sysctls and pid1_nofile,
// which a unit's limit is resolved against).
func (h *hostTarget) apply(f *Facts) error {
	tp := ProcessFacts{ManagedBy: h.ManagedBy, PID: h.PID, Unit: h.Unit, Source: h.Source, UnitFile: h.UnitFile,
		UnitLimitNOFILE: h.UnitLimitNOFILE, UnitMissing: h.UnitMissing, CapSysResource: true,
		NofileSoft: uint64(h.NofileSoft), NofileHard: uint64(h.NofileHard),
		HeldFDs: h.HeldFDs, HeldFDsUnseen: h.HeldFDsUnseen, NetNS: h.NetNS,
		Tasks: TaskFacts{Threads: h.Threads, RootUser: h.RootUser, UserTasks: h.UserTasks, NprocSoft: uint64(h.NprocSoft), PidsMax: uint64(h.PidsMax), PidsCurrent: h.PidsCurrent}}
	if h.MainPID != 0 {
		if h.PID != 0 && h.PID != h.MainPID {
			return exitcode.BadInputf("target_process: pid %d and main_pid %d differ: give one", h.PID, h.MainPID)
		}
		tp.PID = h.MainPID
	}
	if h.Active != nil {
		tp.UnitActive = map[bool]string{true: "active", false: "inactive"}[*h.Active]
	}
	if h.PidsMax != 0 {
		tp.Tasks.PidsFrom = "recorded pids.max"
	}
	if tp.ManagedBy == "" {
		tp.ManagedBy = "shell"
	}
	if tp.ManagedBy != "shell" && tp.ManagedBy != "systemd" {
		return exitcode.BadInputf("target_process.managed_by %q: want shell or systemd", tp.ManagedBy)
	}
	if tp.Source == "" {
		tp.Source = "recorded"
	}
	f.Target = tp
	if tp.ManagedBy == "systemd" && tp.PID == 0 && f.Systemd.Running {
		// a unit not running: its LimitNOFILE as systemd will apply it
		f.applyUnitLimit(profiles.Limit{Soft: tp.NofileSoft, Hard: tp.NofileHard}, "LimitNOFILE of "+tp.Unit+" ("+tp.Source+")")
	}
	return nil
}

// applyListeners sets the recorded listening ports and listeners: ports
// alone leave every backlog unknown.
func (h *HostFile) applyListeners(f *Facts) error {
	if h.ListeningPorts != nil {
		// ports alone: the backlog of no listener is known
		f.ListeningPorts, f.Listeners, f.ListenersKnown = h.ListeningPorts, nil, false
	}
	if h.Listeners != nil {
		f.Listeners, f.ListenersKnown = nil, true
		for _, l := range h.Listeners {
			if l.Address == "" {
				l.Address = "0.0.0.0"
			}
			if l.Port < 1 || l.Port > 65535 {
				return exitcode.BadInputf("listeners: port %d: want 1..65535", l.Port)
			}
			f.Listeners = append(f.Listeners, l)
			if !slices.Contains(f.ListeningPorts, l.Port) {
				f.ListeningPorts = append(f.ListeningPorts, l.Port)
			}
		}
		sortListeners(f.Listeners)
		sort.Ints(f.ListeningPorts)
	}
	return nil
}

// fileDirs are where recorded files may live: the configuration preflight
// reads, nothing else.
var fileDirs = []string{"/etc/security/", "/etc/systemd/", "/usr/lib/systemd/", "/lib/systemd/", "/run/systemd/",
	"/etc/sysctl.conf", "/etc/sysctl.d/", "/run/sysctl.d/", "/usr/lib/sysctl.d/", "/lib/sysctl.d/"}

// applyFiles writes Files into a throwaway root and reads them with the
// same code that reads a live host's.
func (h *HostFile) applyFiles(f *Facts) error {
	if len(h.Files) == 0 {
		return nil
	}
	dir, err := os.MkdirTemp("", "hostprep-host-")
	if err != nil {
		return exitcode.Environmentf("files: %v", err)
	}
	defer os.RemoveAll(dir)
	for p, content := range h.Files {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || !underAny(p, fileDirs) {
			return exitcode.BadInputf("files: %q: want an absolute, clean path under %s", p, strings.Join(fileDirs, ", "))
		}
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return exitcode.Environmentf("files: %v", err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			return exitcode.Environmentf("files: %v", err)
		}
	}
	// A host file is no live host: no systemctl to ask, and the login
	// limits.d is read for is root's.
	g := &Gatherer{Root: dir, F: f, rep: &Recording{User: "root"}}
	if h.LimitsD == nil {
		g.loginNofile()
	}
	if h.Systemd == nil || h.Systemd.DefaultLimitNOFILE == "" {
		g.systemdDefault()
	}
	g.hardNofile()
	for i := range f.HardNofile {
		f.HardNofile[i].From = strings.TrimPrefix(f.HardNofile[i].From, dir)
	}
	if tp := h.TargetProcess; tp != nil && tp.ManagedBy == "systemd" && tp.Unit != "" && tp.PID == 0 && tp.NofileSoft == 0 && tp.NofileHard == 0 {
		if err := g.targetService(context.Background(), tp.Unit, false); err != nil {
			return err
		}
		f.Target.Source = strings.ReplaceAll(f.Target.Source, dir, "")
		f.Target.UnitFile = strings.TrimPrefix(f.Target.UnitFile, dir)
	}
	return nil
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}
