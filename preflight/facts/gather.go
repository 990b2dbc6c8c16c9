package facts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/unitname"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/shirou/gopsutil/v3/common"
	"github.com/shirou/gopsutil/v3/cpu"
	"github.com/shirou/gopsutil/v3/mem"
	"golang.org/x/sys/unix"
)

// GatherOptions say where facts come from.
type GatherOptions struct {
	// Root is prepended to /proc, /sys and /etc paths ("" or "/" is the
	// live host), the way node_exporter's --path.procfs makes collectors
	// testable against a fixture tree.
	Root string
	// PID is the process that will hold the sockets (--pid); 0 = none.
	PID int
	// Service is the systemd unit that will hold them (--service).
	Service string
	// ServiceFromProfile says Service came from a profile's
	// systemd.services, not from --service: a unit that is not installed
	// is then a failing fd.soft finding (UnitMissing) instead of an
	// exitcode.BadInput error.
	ServiceFromProfile bool
	// Self says the process that will hold the sockets is this one
	// (Target.InProcess), unless PID or Service names another.
	Self bool
	// AltServices are the profile's other units, tried in order when
	// Service (from the profile) is not installed.
	AltServices []string
	// SourceIPs overrides the host's global addresses (--source-ips).
	SourceIPs []string
	// Role and Ports say whose listeners are the target's (Target.Role,
	// Target.ListenerPorts): their owning process is looked up, and for
	// a broker or iotdb with no PID or Service named, that process is the
	// target.
	Role  Role
	Ports []int
	// IoTDBHome is an IoTDB release directory (--iotdb-home) whose
	// configuration is read; "" = none.
	IoTDBHome string
	// Record is a directory to copy what is read into (--record; see
	// record.go); "" = none. It needs the live host (Root "" or "/").
	Record string
	// Capacity judges a listener owner's capacity when several processes
	// hold the target's listeners (the runner passes the checks' own
	// arithmetic down; facts cannot import it). nil: the lowest PID is
	// judged and the note says capacity was not compared.
	Capacity CapacityFunc
}

// CapacityFunc is how many sockets the target described by f and t can
// hold, and the resource that limits it ("nofile soft 1024").
type CapacityFunc func(f *Facts, t Target) (sockets int64, limitedBy string)

// sysctlKeys are the /proc/sys keys the checks read.
var sysctlKeys = []string{
	"fs.file-max", "fs.file-nr", "fs.nr_open",
	"net.core.somaxconn",
	"net.ipv4.ip_local_port_range", "net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_max_syn_backlog", "net.ipv4.tcp_syncookies",
	"net.ipv4.tcp_tw_reuse", "net.ipv4.tcp_tw_reuse_delay", "net.ipv4.tcp_timestamps", "net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_mem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
	"net.ipv4.tcp_max_orphans", "net.ipv4.tcp_max_tw_buckets",
	"vm.max_map_count",
	"kernel.pid_max", "kernel.threads-max",
}

type Gatherer struct {
	Root string
	F    *Facts
	// rec collects the paths read when recording (--record), nil otherwise.
	rec *recorder
	// rep holds a recording's answers when replaying (--root DIR with a
	// hostprep-record.json), nil otherwise.
	rep *Recording
	// Capacity is GatherOptions.Capacity.
	Capacity CapacityFunc
}

// path is p under the root; every file preflight reads is named through
// it (or readConf, for hostconf's), which is what --record copies.
func (g *Gatherer) path(p string) string {
	full := filepath.Join(g.Root, p)
	g.rec.add(full)
	return full
}

// sysctl reads one /proc/sys key into Facts.Sysctl; an absent key (not
// in this kernel) is left out, another error noted.
func (g *Gatherer) sysctl(k string) {
	b, err := os.ReadFile(g.path(sysctlkey.File("/proc/sys", k)))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			g.note("%s: %v", k, err)
		}
		return
	}
	g.F.Sysctl[k] = strings.TrimRight(string(b), "\n")
}

// live says whether the gatherer reads the running host (not a recorded
// or fixture root): system calls and commands answer only then.
func (g *Gatherer) live() bool { return g.Root == "/" }

func (g *Gatherer) note(format string, a ...any) {
	g.F.Notes = append(g.F.Notes, fmt.Sprintf(format, a...))
}

// Gather reads the facts of the running host. It needs no root for the
// passive facts (a --pid of another user's process needs read access to
// /proc/PID/limits). Missing optional sources (nf_conntrack not loaded, no
// IPv6) are recorded as such; errors that make the run meaningless
// (--pid that does not exist, /proc not mounted) are exitcode errors.
func Gather(ctx context.Context, o GatherOptions) (*Facts, error) {
	root := o.Root
	if root == "" {
		root = "/"
	}
	g := &Gatherer{Root: root, F: &Facts{
		PageSize: int64(os.Getpagesize()),
		Sysctl:   map[string]string{},
	}}
	g.Capacity = o.Capacity
	f := g.F
	if o.Record != "" {
		if !g.live() {
			return nil, exitcode.BadInputf("--record %s with --root %s: a recording is made of the live host; drop --root", o.Record, o.Root)
		}
		g.rec = newRecorder()
	}
	if !g.live() {
		rep, err := LoadRecording(root)
		if err != nil {
			return nil, err
		}
		g.rep = rep
		if rep != nil {
			f.PageSize = rep.PageSize
		}
	}
	if _, err := os.Stat(g.path("/proc/sys")); err != nil && !g.live() {
		return nil, exitcode.BadInputf("--root %s: no proc/sys in it (%v); pass a directory recorded with hostprep preflight --record DIR", root, err)
	} else if err != nil {
		return nil, exitcode.Environmentf("preflight needs procfs: %v (mount /proc, or pass the root that holds proc/)", err)
	}
	var uts unix.Utsname
	if root == "/" && unix.Uname(&uts) == nil {
		f.Kernel = unix.ByteSliceToString(uts.Release[:])
	} else if b, err := os.ReadFile(g.path("/proc/sys/kernel/osrelease")); err == nil {
		f.Kernel = strings.TrimSpace(string(b))
	}
	for _, k := range sysctlKeys {
		g.sysctl(k)
	}
	g.memory(ctx)
	g.hostTasks()
	g.conntrack()
	g.netstat()
	g.sockstat()
	g.listeners(o.Ports)
	g.pid1()
	if err := g.sourceAddresses(o.SourceIPs); err != nil {
		g.note("source addresses: %v", err)
	}
	g.systemd()
	g.loginNofile()
	g.hardNofile()
	if err := g.targetAndConfig(ctx, o); err != nil {
		return nil, err
	}
	f.capUnlimited()
	g.clock()
	g.container()
	if g.rec != nil {
		g.rec.fill(f)
		if err := g.rec.write(o.Record); err != nil {
			return nil, err
		}
		// Judge what was recorded, read back from it: the live files were
		// copied a moment after they were read (fs.file-nr, meminfo move),
		// and a replay must give this run's verdict byte for byte.
		replay := o
		replay.Root, replay.Record = o.Record, ""
		return Gather(ctx, replay)
	}
	logFacts(root, f)
	return f, nil
}

// targetAndConfig finds the target process — --pid, --service, else
// hostprep itself when it holds the sockets (Self), else for a server
// role the owner of its listener, else a login shell's limits — and
// reads the IoTDB configuration.
func (g *Gatherer) targetAndConfig(ctx context.Context, o GatherOptions) error {
	if o.Self && o.PID == 0 && o.Service == "" {
		if err := g.targetSelf(); err != nil {
			return err
		}
	} else if err := g.targetNamed(ctx, o); err != nil {
		return err
	}
	g.targetJVM()
	if o.Role == IoTDB {
		g.configNodeJVM()
	}
	if o.IoTDBHome != "" {
		c, err := ReadIoTDBConfig(o.IoTDBHome)
		if err != nil {
			return err
		}
		g.F.IoTDB = c
	}
	return nil
}

// targetNamed finds a target process other than hostprep itself: --pid,
// --service (or the profile's units), else for a server role the owner
// of its listener, else a login shell's limits.
func (g *Gatherer) targetNamed(ctx context.Context, o GatherOptions) error {
	pid := o.PID
	if pid == 0 && o.Service == "" && o.Role != Loadgen {
		pid = g.ListenerOwner(o.Ports, o.Role)
	}
	if o.ServiceFromProfile && len(o.AltServices) > 0 {
		o.Service = g.firstInstalled(append([]string{o.Service}, o.AltServices...))
	}
	if err := g.target(ctx, pid, o.Service, o.ServiceFromProfile); err != nil {
		return err
	}
	if pid != o.PID {
		g.F.Target.Source = "owner of the listener on " + g.ownerEndpoint(pid) + ", " + g.F.Target.Source
	}
	if err := g.ownerOfMissingUnit(o); err != nil {
		return err
	}
	g.ownerApartFromUnit(o)
	return nil
}

// firstInstalled is the first of the profile's units that has a unit file
// (boot.UnitNofile under the root), else the first the host has but
// cannot start (masked, or a unit file systemd cannot parse: that is
// what to report, not that another alternative is missing), else the
// first: a profile naming [emqx, mosquitto] is judged on the broker the
// host has.
func (g *Gatherer) firstInstalled(units []string) string {
	unstartable := ""
	for _, u := range units {
		u = unitname.Service(u)
		nf, err := g.unitFromFiles(u)
		switch {
		case err == nil && nf.missing == "":
			return u
		case err == nil && !nf.absent && unstartable == "":
			unstartable = u
		}
	}
	return cmp.Or(unstartable, units[0])
}

// ownerOfMissingUnit judges, when a process owns the role's listener (a
// service started by hand, from a tarball's scripts), that process instead
// of a unit that cannot tell: the profile's unit is not installed, or
// systemd is not running, so no unit (--service or the profile's) applies
// and the running owner's limits are the truth, not a login shell's. The
// unit becomes a note and a line of the target's source.
func (g *Gatherer) ownerOfMissingUnit(o GatherOptions) error {
	t := g.F.Target
	missing := t.UnitMissing && o.ServiceFromProfile
	inert := t.Unit != "" && !t.UnitMissing && !g.F.Systemd.Running
	if !(missing || inert) || o.PID != 0 || o.Role == Loadgen {
		return nil
	}
	owner := g.ListenerOwner(o.Ports, o.Role)
	if owner == 0 {
		return nil
	}
	unit := t.Unit
	g.F.Target = ProcessFacts{UnitLimitNOFILE: t.UnitLimitNOFILE}
	if err := g.targetPID(owner, fmt.Sprintf("/proc/%d/limits", owner)); err != nil {
		return err
	}
	why := fmt.Sprintf("the profile's unit %s is not installed, but the listener on %s is owned by pid %d: judged that running process instead", unit, g.ownerEndpoint(owner), owner)
	if inert {
		why = fmt.Sprintf("systemd is not running here, so the unit %s applies to nothing; the listener on %s is owned by pid %d: judged that running process instead", unit, g.ownerEndpoint(owner), owner)
	}
	g.F.Target.Source = why + ", " + g.F.Target.Source
	g.note("%s", why)
	return nil
}

// ownerApartFromUnit judges the process that holds the target's port
// when it runs outside the unit that was named (judgePortOwner), and reads
// its facts as --pid would (tasks, memory cgroup, the files it holds),
// keeping the unit's limits and the words naming both.
func (g *Gatherer) ownerApartFromUnit(o GatherOptions) {
	if o.PID != 0 || o.Role == Loadgen {
		return
	}
	owner := g.F.JudgePortOwner(o.Ports)
	if owner == 0 {
		return
	}
	named := g.F.Target
	g.F.Target = ProcessFacts{}
	if err := g.targetPID(owner, named.Source); err != nil {
		g.F.Target = named
		g.note("pid %d: %v", owner, err)
		return
	}
	g.F.Target.Apart = named.Apart
}

// targetJVM reads the memory flags of a running Java target from its
// command line, which is never copied by --record (it may hold secrets):
// the two values go into the recording's answers instead.
func (g *Gatherer) targetJVM() {
	switch pid := g.F.Target.PID; {
	case g.rep != nil:
		g.F.TargetJVM = g.rep.TargetJVM
	case pid > 0:
		src := fmt.Sprintf("/proc/%d/cmdline", pid)
		if b, err := os.ReadFile(filepath.Join(g.Root, src)); err == nil {
			g.F.TargetJVM = ParseJVMFlags(b, src)
		}
	}
	if g.rec != nil {
		g.rec.m.TargetJVM = g.F.TargetJVM
	}
}

// configNodeMain is the main class of an IoTDB ConfigNode's JVM
// (sbin/start-confignode.sh).
const configNodeMain = "org.apache.iotdb.confignode.service.ConfigNode"

// configNodeJVM finds a running IoTDB ConfigNode (a java process whose
// main class is configNodeMain) and reads its memory flags from its
// command line, like targetJVM: a recording keeps the two values only.
func (g *Gatherer) configNodeJVM() {
	switch {
	case g.rep != nil:
		g.F.ConfigNodeJVM = g.rep.ConfigNodeJVM
	case g.live():
		dirs, err := os.ReadDir("/proc")
		if err != nil {
			g.note("/proc: %v", err)
			return
		}
		for _, d := range dirs {
			pid, err := strconv.Atoi(d.Name())
			if err != nil {
				continue
			}
			src := fmt.Sprintf("/proc/%d/cmdline", pid)
			b, err := os.ReadFile(src)
			if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), configNodeMain) {
				continue
			}
			if j := ParseJVMFlags(b, src); j != nil && j.Heap > 0 {
				g.F.ConfigNodeJVM = j
				break
			}
		}
	}
	if g.rec != nil {
		g.rec.m.ConfigNodeJVM = g.F.ConfigNodeJVM
	}
}

// logFacts logs what was gathered at debug level.
func logFacts(root string, f *Facts) {
	slog.Debug("preflight: facts gathered", "root", root, "kernel", f.Kernel, "cpus", f.CPUs,
		"mem_total_bytes", f.MemTotal, "mem_available_bytes", f.MemAvailable, "sysctl_keys", len(f.Sysctl),
		"systemd_running", f.Systemd.Running, "conntrack_loaded", f.Conntrack.Loaded,
		"source_addresses", f.SourceAddresses, "listening_ports", len(f.ListeningPorts),
		"container", f.Container.Kind, "own_netns", f.Container.OwnNetNS, "notes", len(f.Notes))
	for _, n := range f.Notes {
		slog.Debug("preflight: fact not gathered", "note", n)
	}
	tp := f.Target
	slog.Debug("preflight: target process limits", "managed_by", tp.ManagedBy, "pid", tp.PID, "unit", tp.Unit,
		"nofile_soft", FmtNofile(tp.NofileSoft), "nofile_hard", FmtNofile(tp.NofileHard), "cap_sys_resource", tp.CapSysResource,
		"unit_file", tp.UnitFile, "unit_limit_nofile", tp.UnitLimitNOFILE, "unit_missing", tp.UnitMissing, "source", tp.Source)
	if d := f.Systemd.DefaultLimitNOFILE; d != nil {
		slog.Debug("preflight: systemd DefaultLimitNOFILE", "limit", FmtLimit(*d), "applies", f.Systemd.Running)
	}
	if l := f.Login; l != nil {
		slog.Debug("preflight: login nofile (pam_limits)", "login", l.Describe())
	}
}

// memory fills CPUs, MemTotal and MemAvailable with gopsutil, pointed at
// the configured root.
func (g *Gatherer) memory(ctx context.Context) {
	ctx = context.WithValue(ctx, common.EnvKey, common.EnvMap{
		common.HostProcEnvKey: g.path("/proc"),
		common.HostSysEnvKey:  g.path("/sys"),
	})
	if vm, err := mem.VirtualMemoryWithContext(ctx); err == nil {
		g.F.MemTotal, g.F.MemAvailable = vm.Total, vm.Available
	} else {
		g.note("memory: %v", err)
	}
	if n, err := cpu.CountsWithContext(ctx, true); err == nil && n > 0 {
		g.F.CPUs = n
	} else {
		g.note("cpu count: %v", err)
	}
}
