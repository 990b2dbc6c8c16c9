package facts

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/proclimits"
	"github.com/hostprep/hostprep/profiles"
)

// Unlimited is how an "unlimited"/"infinity" resource limit is stored
// (RLIM_INFINITY).
const Unlimited = proclimits.Unlimited

// Facts is everything the checks look at, gathered once. Gather fills it
// from the running host; LoadHostYAML fills it from a recorded host. Checks
// never read the host themselves.
type Facts struct {
	// Kernel is the release (uname -r), informational.
	Kernel string `json:"kernel"`
	// PageSize in bytes (os.Getpagesize); tcp_mem is counted in pages of
	// this size.
	PageSize int64 `json:"page_size_bytes"`
	// CPUs is the number of logical CPUs (gopsutil cpu.Counts).
	CPUs int `json:"cpus"`
	// MemTotal and MemAvailable in bytes (/proc/meminfo via gopsutil).
	MemTotal     uint64 `json:"mem_total_bytes"`
	MemAvailable uint64 `json:"mem_available_bytes"`
	// Sysctl maps keys as the kernel spells them (net.core.somaxconn) to
	// values as /proc/sys prints them; a key the kernel lacks is absent.
	// fs.file-nr is included ("allocated 0 max").
	Sysctl map[string]string `json:"sysctl"`
	// HostTasks is the number of tasks (threads) on the host now, the
	// fourth field of /proc/loadavg ("2/237": 237); 0 when not read.
	HostTasks uint64 `json:"host_tasks,omitempty"`
	// Conntrack is nf_conntrack's table, when the module is loaded.
	Conntrack Conntrack `json:"conntrack"`
	// Target is the process that will hold the sockets.
	Target ProcessFacts `json:"target_process"`
	// Login is the nofile pam_limits gives a new login session of the
	// user running hostprep, from /etc/security/limits.conf and limits.d
	// as hostconf reads them (each value with its file:line); nil when
	// not read (a host file that gives limits_d instead).
	Login *LoginNofile `json:"login_nofile,omitempty"`
	// LimitsD maps pam_limits domains ("*", "root", "@group", a user name)
	// to nofile soft/hard, as a host file (LoadHostYAML limits_d) states
	// them; Gather fills Login instead.
	LimitsD map[string]profiles.Limit `json:"limits_d,omitempty"`
	// HardNofile is every hard nofile configured on the host (file
	// descriptors, with FILE:LINE): limits.conf and limits.d lines of any
	// domain, root's included, and each unit's LimitNOFILE (Domain the
	// unit). "unlimited"/infinity lines are left out (pam_limits and
	// systemd turn them into fs.nr_open or PID 1's limit themselves).
	HardNofile []LimitLine `json:"hard_nofile,omitempty"`
	// BootNrOpen is fs.nr_open as the sysctl.d files set it at boot,
	// with the FILE:LINE (hostconf.SysctlAtBoot); nil when no file sets
	// it (the kernel default, profiles.DefaultNrOpen, then applies).
	BootNrOpen *LimitLine `json:"boot_nr_open,omitempty"`
	// Systemd says whether systemd runs as PID 1 and its DefaultLimitNOFILE.
	Systemd SystemdFacts `json:"systemd"`
	// SourceAddresses are the host's global unicast addresses, the source
	// addresses a loadgen can use.
	SourceAddresses []string `json:"source_addresses"`
	// ListeningPorts are the TCP ports in LISTEN state (from Listeners, or
	// /proc/net/tcp and tcp6 where sock_diag could not be read), sorted.
	ListeningPorts []int `json:"listening_ports"`
	// Listeners are the TCP sockets in LISTEN state with their backlog and
	// accept queue (sock_diag), sorted by port; the owning process is
	// looked up for the target's ports only.
	Listeners []Listener `json:"listeners,omitempty"`
	// ListenersKnown is false when sock_diag could not be read (then the
	// listen() backlog of no listener is known).
	ListenersKnown bool `json:"listeners_known"`
	// Pid1Nofile is the RLIMIT_NOFILE of PID 1 (/proc/1/limits): the
	// service manager's own hard limit is the ceiling systemd clamps a
	// unit's LimitNOFILE=infinity (or any value above fs.nr_open) to. Nil
	// when not readable.
	Pid1Nofile *profiles.Limit `json:"pid1_nofile,omitempty"`
	// Pid1NoRaise says why PID 1 cannot raise a hard nofile above its own
	// (no CAP_SYS_RESOURCE in CapEff, or a user namespace of its own); ""
	// when it can or that is not known. A unit's LimitNOFILE above PID 1's
	// hard limit is then capped at it.
	Pid1NoRaise string `json:"pid1_no_raise,omitempty"`
	// HereNofileHard is the hard RLIMIT_NOFILE hostprep was started with
	// (/proc/self/limits; the Go runtime raises only the soft one): the
	// most a process started from the same shell gets without
	// CAP_SYS_RESOURCE. 0 when not read.
	HereNofileHard uint64 `json:"here_nofile_hard,omitempty"`
	// IoTDB is the IoTDB release configuration read with --iotdb-home, nil
	// without it.
	IoTDB *IoTDBConfig `json:"iotdb,omitempty"`
	// TargetJVM is the heap and direct memory a running Java target was
	// started with, nil when the target is not a running JVM.
	TargetJVM *JVMFlags `json:"target_jvm,omitempty"`
	// ConfigNodeJVM is the heap and direct memory a running IoTDB
	// ConfigNode on this host was started with (role iotdb), nil when none
	// runs.
	ConfigNodeJVM *JVMFlags `json:"confignode_jvm,omitempty"`
	// Netstat holds the TcpExt counters of /proc/net/netstat
	// (ListenOverflows, ListenDrops, TCPMemoryPressures, TCPAbortOnMemory,
	// TCPTimeWaitOverflow, ...), counted since boot.
	Netstat map[string]uint64 `json:"netstat,omitempty"`
	// Sockstat is the TCP line of /proc/net/sockstat.
	Sockstat Sockstat `json:"sockstat"`
	// Clock is the kernel's NTP state (adjtimex).
	Clock Clock `json:"clock"`
	// Container says whether hostprep runs in a container and whether its
	// network namespace is its own.
	Container Container `json:"container"`
	// Measured is the --active measurement, nil when not run.
	Measured *ActiveResult `json:"measured,omitempty"`
	// Notes are facts that could not be gathered (permission denied, file
	// absent); the checks that need them say "skip".
	Notes []string `json:"notes,omitempty"`
}

// Conntrack is the nf_conntrack table state.
type Conntrack struct {
	Loaded bool `json:"loaded" yaml:"loaded"`
	// Max is net.netfilter.nf_conntrack_max (entries).
	Max uint64 `json:"max" yaml:"max"`
	// Count is net.netfilter.nf_conntrack_count (entries in use now).
	Count uint64 `json:"count" yaml:"count"`
	// Buckets is the hash size (net.netfilter.nf_conntrack_buckets).
	Buckets uint64 `json:"buckets" yaml:"buckets"`
	// Unreadable names the files that exist but could not be read
	// ("nf_conntrack_count: permission denied"): their value above is 0
	// and not known. A file that is absent (ENOENT) is not listed: without
	// nf_conntrack_max the module is not loaded.
	Unreadable []string `json:"unreadable,omitempty" yaml:"unreadable"`
}

// unknown says which of nf_conntrack_max, _count and _buckets could not be
// read ("nf_conntrack_count"), by the prefix of Unreadable's entries.
func (c Conntrack) Unknown(name string) bool {
	for _, u := range c.Unreadable {
		if u == name || strings.HasPrefix(u, name+":") {
			return true
		}
	}
	return false
}

// ProcessFacts are the limits of the process that will hold the sockets:
// hostprep's own only when that process is hostprep itself (Self).
type ProcessFacts struct {
	// Self is true when the process that will hold the sockets is this
	// hostprep run itself (Target.InProcess: the MQTT probe's embedded
	// broker): its limits are the ones it runs with, read from
	// /proc/self/limits, and no PID is cited (the process exits with the
	// run).
	Self bool `json:"self,omitempty" yaml:"-"`
	// ManagedBy is "systemd" (a unit) or "shell" (started from a login
	// session; pam_limits applies).
	ManagedBy string `json:"managed_by" yaml:"managed_by"`
	// PID is the process read with --pid (or a unit's MainPID), 0 if none.
	PID int `json:"pid,omitempty" yaml:"pid"`
	// Unit is the systemd unit (--service), "" if none.
	Unit string `json:"unit,omitempty" yaml:"unit"`
	// NofileSoft and NofileHard are RLIMIT_NOFILE (file descriptors);
	// Unlimited for "unlimited"/"infinity".
	NofileSoft uint64 `json:"nofile_soft" yaml:"nofile_soft"`
	NofileHard uint64 `json:"nofile_hard" yaml:"nofile_hard"`
	// HeldFDs are the file descriptors a running process holds now that
	// are not sockets (data and log files, pipes, eventfds: /proc/PID/fd
	// links other than socket:[N]); they count against its nofile before
	// any socket does. 0 when not read.
	HeldFDs uint64 `json:"held_fds,omitempty" yaml:"held_fds"`
	// HeldFDsUnseen says why those could not be counted (another user's
	// /proc/PID/fd needs root): fd.soft and fd.hard then do not pass.
	HeldFDsUnseen string `json:"held_fds_unseen,omitempty" yaml:"held_fds_unseen"`
	// NetNS names the network namespace of a running process when it is
	// not hostprep's ("net:[4026532310], hostprep's net:[4026531840]",
	// from the /proc/PID/ns/net links); "" when it is the same or was not
	// read. The network checks then cannot judge it.
	NetNS string `json:"net_ns,omitempty" yaml:"net_ns"`
	// NetNSUnseen says why whether it shares hostprep's network namespace
	// could not be read (another user's /proc/PID/ns/net needs root);
	// the network checks then cannot judge it either.
	NetNSUnseen string `json:"net_ns_unseen,omitempty" yaml:"net_ns_unseen"`
	// CapSysResource says whether the process may raise its hard limit
	// (CapEff bit 24).
	CapSysResource bool `json:"cap_sys_resource" yaml:"-"`
	// Source says where the numbers come from ("/proc/123/limits",
	// "systemctl show mosquitto.service", "limits.d for user root", ...).
	Source string `json:"source,omitempty" yaml:"source"`
	// Assumed is true when no process was named or found (no --pid,
	// --service, profile unit, or owner of the target's listener): the
	// limits are what a process started from a login shell here would get.
	Assumed bool `json:"assumed,omitempty" yaml:"-"`
	// NoRaiseBound is true when CAP_SYS_RESOURCE is not in the capability
	// bounding set (CapBnd) here: no process started from this session,
	// nor any it starts, can raise a hard nofile (a container, a sandbox).
	NoRaiseBound bool `json:"no_raise_bound,omitempty" yaml:"-"`
	// Requested is the LimitNOFILE the unit asks for when systemd had to
	// resolve it ("infinity:infinity"), "" when it applied as written.
	Requested string `json:"requested,omitempty" yaml:"-"`
	// UnitFile is the unit's own file when the unit was read from disk
	// ("" when systemctl answered or no file exists).
	UnitFile string `json:"unit_file,omitempty" yaml:"unit_file"`
	// UnitLimitNOFILE is the LimitNOFILE the unit's files and drop-ins set
	// ("2097152:2097152 (/etc/systemd/system/x.service.d/60-hostprep.conf)"),
	// recorded when systemd is not running: it cannot apply then, and the
	// limits above are those a process started from a login shell gets.
	UnitLimitNOFILE string `json:"unit_limit_nofile,omitempty" yaml:"unit_limit_nofile"`
	// UnitMissing is true when Unit (named by a profile) is not installed:
	// no unit file in any of systemd's unit directories
	// (hostconf.UnitDirs; drop-ins alone do not make a unit), or the
	// unit is masked (its file is a symlink to /dev/null or empty).
	// fd.soft then fails: there is no such service whose limits could be
	// checked.
	UnitMissing bool `json:"unit_missing,omitempty" yaml:"unit_missing"`
	// UnitActive is the unit's ActiveState as systemctl show reports it
	// ("active", "inactive", "failed"); "" when not asked.
	UnitActive string `json:"unit_active,omitempty" yaml:"-"`
	// Apart is set when a unit was named (--service, the profile's) but
	// another process, outside the unit's cgroup, holds the target's
	// listener: the facts above are then that process's (its
	// /proc/PID/limits), and Apart keeps the unit's. nil otherwise.
	Apart *UnitApart `json:"apart_from_unit,omitempty" yaml:"-"`
	// Tasks are the process's thread and task limits (iotdb.threads); the
	// zero value when no process was read.
	Tasks TaskFacts `json:"tasks,omitzero" yaml:"-"`
	// Memory is the memory cgroup bound of a running process, or the one
	// a unit that is not running gets at its next start (mem.available);
	// the zero value when neither was read.
	Memory MemCgroup `json:"memory_cgroup,omitzero" yaml:"-"`
}

// UnitApart is the unit a process holding the target's port runs
// outside of (issue: a broker restarted by hand from a shell keeps the
// shell's nofile 1024 while its unit says 1048576).
type UnitApart struct {
	// Unit is the named unit ("emqx.service"); Active its ActiveState
	// ("inactive"; "" when not known) and MainPID its main process (0 when
	// it is not running).
	Unit    string `json:"unit"`
	Active  string `json:"active,omitempty"`
	MainPID int    `json:"main_pid,omitempty"`
	// Port is the target port the other process holds, Process its comm.
	Port    int    `json:"port"`
	Process string `json:"process,omitempty"`
	// Nofile is RLIMIT_NOFILE a start through the unit gives (file
	// descriptors, resolved as systemd resolves LimitNOFILE), From where
	// that comes from.
	Nofile profiles.Limit `json:"nofile"`
	From   string         `json:"from,omitempty"`
}

// state says how the unit stands: "is inactive", "runs as pid 17".
func (a UnitApart) State() string {
	switch {
	case a.MainPID > 0:
		return fmt.Sprintf("runs as pid %d", a.MainPID)
	case a.Active != "":
		return "is " + a.Active
	}
	return "has no main process"
}

// MemCgroup is what the memory controller lets a running process still
// allocate: each cgroup from its own up to the root of the hierarchy
// limits every task below it, so the room is the least limit - usage of
// any of them. Its hard limit is cgroup v2 memory.max or v1
// memory.limit_in_bytes: past it the cgroup's OOM killer ends a process
// in it (cgroup-v2.rst: "the OOM killer is invoked in the cgroup"). v2
// memory.high only throttles: above it the cgroup is put under heavy
// reclaim, never OOM-killed. Kernel memory of sockets (the tcp_sock, its
// file, inode, dentry) is charged to the cgroup as well.
type MemCgroup struct {
	// Limit and Usage are the hard limit and usage, bytes, of the cgroup
	// that leaves the least room (memory.max and memory.current, or
	// memory.limit_in_bytes and memory.usage_in_bytes), From that limit
	// file; "" when no cgroup up the hierarchy limits memory ("max", or
	// v1's 9223372036854771712: PAGE_COUNTER_MAX pages in bytes).
	Limit uint64 `json:"limit_bytes,omitempty"`
	Usage uint64 `json:"usage_bytes,omitempty"`
	From  string `json:"from,omitempty"`
	// High, HighUsage and HighFrom are the same for v2 memory.high.
	High      uint64 `json:"high_bytes,omitempty"`
	HighUsage uint64 `json:"high_usage_bytes,omitempty"`
	HighFrom  string `json:"high_from,omitempty"`
	// Unseen names the cgroup files that bound it but could not be read
	// (permission, a file missing where the controller is mounted).
	Unseen []string `json:"unseen,omitempty"`
	// Unit is set for a unit that is not running: the limits are those
	// its next start gets from its unit files and drop-ins (MemoryMax=,
	// MemoryLimit=, MemoryHigh=; systemctl show where systemd has it
	// loaded) and its slices', From naming the FILE:LINE; its own usage
	// is 0 and a slice's is what that slice's cgroup uses now.
	Unit string `json:"unit,omitempty"`
	// Slice is, for a unit that is not running whose limit (From) is a
	// slice's, that slice's setting; HighSlice the same for HighFrom.
	// nil otherwise.
	Slice     *SliceRef `json:"slice,omitempty"`
	HighSlice *SliceRef `json:"high_slice,omitempty"`
	// SockCharged is true when the kernel charges socket buffers to the
	// limits above (cgroup v2's memory controller: memory.stat "sock");
	// cgroup v1 charges them only to a memory.kmem.tcp limit, not read.
	SockCharged bool `json:"sock_charged,omitempty"`
}

// applies says whether the memory cgroup bound is the target's: read
// from a running process (pid != 0) or from a unit that is not running.
func (m MemCgroup) Applies(pid int) bool { return pid != 0 || m.Unit != "" }

// room is the least memory the cgroups leave under their hard limit
// (bytes, 0 when usage is at or above it); ok is false when none limits.
func (m MemCgroup) Room() (float64, bool) {
	if m.From == "" {
		return 0, false
	}
	return float64(max(int64(m.Limit)-int64(m.Usage), 0)), true
}

// highRoom is the same under memory.high.
func (m MemCgroup) HighRoom() (float64, bool) {
	if m.HighFrom == "" {
		return 0, false
	}
	return float64(max(int64(m.High)-int64(m.HighUsage), 0)), true
}

// TaskFacts are what bounds the threads a process can start: IoTDB's
// DataNode runs one thread per client connection.
type TaskFacts struct {
	// Threads is the number of threads the process runs now (Threads: of
	// /proc/PID/status); 0 when not read.
	Threads uint64 `json:"threads,omitempty"`
	// RootUser is true when its real user ID is 0, and CapSysAdmin when
	// its CapEff has CAP_SYS_ADMIN: the kernel holds neither to
	// RLIMIT_NPROC (copy_process in kernel/fork.c; nor CAP_SYS_RESOURCE).
	RootUser bool `json:"root_user,omitempty"`
	// User is its real user's name (the uid when it has none); "" when
	// not read.
	User string `json:"user,omitempty"`
	// UID and GID are its real user and group IDs ("" when not read).
	UID         string `json:"uid,omitempty"`
	GID         string `json:"gid,omitempty"`
	CapSysAdmin bool   `json:"cap_sys_admin,omitempty"`
	// UserTasks are the tasks (threads) of its real user on the host now,
	// all of which RLIMIT_NPROC counts; 0 when not read.
	UserTasks uint64 `json:"user_tasks,omitempty"`
	// NprocSoft is its soft RLIMIT_NPROC (tasks of its real user ID;
	// Unlimited for "unlimited"); 0 when not read.
	NprocSoft uint64 `json:"nproc_soft,omitempty"`
	// PidsMax and PidsCurrent are pids.max and pids.current of the cgroup
	// (its own or one above it) that leaves the least room, and PidsFrom
	// that pids.max file; "" when no cgroup up the hierarchy limits tasks
	// (systemd's TasksMax=infinity is "max").
	PidsMax     uint64 `json:"pids_max,omitempty"`
	PidsCurrent uint64 `json:"pids_current,omitempty"`
	PidsFrom    string `json:"pids_from,omitempty"`
	// UnitTasksMax is, for a systemd unit that is not running, the
	// TasksMax= its next start gets (the pids.max of its cgroup) and where
	// that comes from; PidsMax then holds it (PidsFrom set, PidsCurrent 0)
	// unless it is infinity.
	UnitTasksMax string `json:"unit_tasks_max,omitempty"`
	// PidsSlice is, for a unit that is not running, the TasksMax= of the
	// slice above it that leaves the least room when it is below the
	// unit's own (PidsMax, PidsCurrent and PidsFrom then hold that slice's
	// limit, the tasks its cgroup holds now and where they come from); nil
	// otherwise.
	PidsSlice *SliceRef `json:"pids_slice,omitempty"`
	// Unseen names what bounds them that could not be read.
	Unseen []string `json:"unseen,omitempty"`
}

// SystemdFacts describe systemd as a service manager.
type SystemdFacts struct {
	// Running is true when systemd is PID 1: /run/systemd/system exists
	// (sd_booted(3); the same test tune uses before it writes drop-ins).
	// When false, no unit's LimitNOFILE applies to anything.
	Running bool `json:"running"`
	// DefaultLimitNOFILE is system.conf's DefaultLimitNOFILE, or systemd's
	// built-in 1024:524288 (systemd >= 240) when unset; nil when systemd is
	// not installed.
	DefaultLimitNOFILE *profiles.Limit `json:"default_limit_nofile,omitempty"`
	// DefaultLimitNOFILEFrom is the FILE:LINE that sets it, or "systemd's
	// built-in default" (hostconf.ManagerNofile).
	DefaultLimitNOFILEFrom string `json:"default_limit_nofile_from,omitempty"`
}

// LoginNofile is RLIMIT_NOFILE as pam_limits sets it at login
// (hostconf.NofileForGroups): Soft and Hard each nil when no line
// applies, the session then keeps what it inherits.
type LoginNofile struct {
	// User is the login user; Groups their groups (pam_limits @group
	// domains).
	User   string     `json:"user"`
	Groups []string   `json:"groups,omitempty"`
	Soft   *LimitLine `json:"soft,omitempty"`
	Hard   *LimitLine `json:"hard,omitempty"`
}

// LimitLine is one nofile value (file descriptors, Unlimited for
// unlimited) and the line that sets it.
type LimitLine struct {
	Value uint64 `json:"value"`
	// Domain is the line's pam_limits domain: the user, @group or "*".
	Domain string `json:"domain"`
	// From is FILE:LINE ("/etc/security/limits.d/60-hostprep.conf:3").
	From string `json:"from"`
}

// Sockstat is /proc/net/sockstat's TCP line.
type Sockstat struct {
	InUse  uint64 `json:"inuse"`
	Orphan uint64 `json:"orphan"`
	TW     uint64 `json:"tw"`
	Alloc  uint64 `json:"alloc"`
	// MemPages is "mem": pages of queued socket buffers (not socket
	// structures: it stays near 0 for idle sockets).
	MemPages uint64 `json:"mem_pages"`
}

// Clock is the kernel clock discipline state from adjtimex(2).
type Clock struct {
	// Known is false when adjtimex could not be called.
	Known bool `json:"known" yaml:"known"`
	// Synced is false when STA_UNSYNC is set (no NTP/PTP daemon disciplines
	// the clock).
	Synced bool `json:"synced" yaml:"synced"`
	// MaxErrorUS is the kernel's maximum error estimate, microseconds.
	MaxErrorUS int64 `json:"max_error_us" yaml:"max_error_us"`
}

// Container describes containment.
type Container struct {
	// Kind is "" on a plain host, else what gave it away (docker, podman,
	// lxc, kubernetes, ...).
	Kind string `json:"kind,omitempty" yaml:"kind"`
	// OwnNetNS is true when the network namespace is not the host's
	// (init_net): per-namespace net.* keys are then the container's own.
	OwnNetNS bool `json:"own_netns" yaml:"own_netns"`
}

// SysInt returns a single-number sysctl value.
func (f *Facts) SysInt(key string) (int64, bool) {
	v, ok := f.Sysctl[key]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		// fs.file-max may print LONG_MAX; anything unparsable is "absent".
		u, err2 := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err2 != nil {
			return 0, false
		}
		if u > math.MaxInt64 {
			return math.MaxInt64, true
		}
		return int64(u), true
	}
	return n, true
}

// SysFields returns the fields of a multi-value sysctl ("4096 131072
// 6291456"); tabs and spaces both separate.
func (f *Facts) SysFields(key string) ([]int64, bool) {
	v, ok := f.Sysctl[key]
	if !ok {
		return nil, false
	}
	var out []int64
	for _, s := range strings.Fields(v) {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, false
		}
		out = append(out, n)
	}
	return out, len(out) > 0
}
