package facts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
)

// Record and replay a host. `preflight --record DIR` gathers the live host
// and copies into DIR exactly the files preflight read, at their paths
// (DIR/proc/sys/net/core/somaxconn, DIR/etc/security/limits.d/...), and
// the answers it got from system calls and commands (sock_diag listeners,
// adjtimex, the parent shell's PID, the user, systemctl show, network
// addresses) in DIR/hostprep-record.json. `preflight --root DIR` reads
// them back, so the same checks give the same verdict: a host attached to
// a bug report becomes a test. The configuration files (system.conf and
// its drop-ins, a unit's file and drop-ins, limits.conf and limits.d) are
// those hostconf reports it read (gatherer.readConf); one that is a
// symlink is recorded as a symlink straight to the file it resolves to
// (or /dev/null), so a replay shadows, masks and names it as the host did.
//
// Nothing else is copied: no process environment (/proc/1/environ is
// read only for its container= entry, which the manifest keeps) or
// command line, of configuration files only the lines preflight reads
// (keepReadLines: a unit's Environment= may hold a password; the other
// lines are left empty so FILE:LINE stays true), no
// directory listing beyond the *.conf files read and the symbolic links
// in the unit directories (hostconf.UnitDirLinks: the aliases, linked unit
// files and masks systemd's unit name map reads; a link holds no
// secret), and no binary (the systemd binary's presence is kept as an
// empty file).

// RecordManifest is the name of the answers file in a recording.
const RecordManifest = "hostprep-record.json"

// Recording is DIR/hostprep-record.json: what preflight learnt from
// system calls and commands rather than from files.
type Recording struct {
	// Format is the manifest version (1).
	Format int `json:"format"`
	// Listeners and ListenersKnown are the sock_diag answer, with owners.
	Listeners      []Listener `json:"listeners"`
	ListenersKnown bool       `json:"listeners_known"`
	// Kernel is uname -r.
	Kernel string `json:"kernel"`
	// HardNofile is Facts.HardNofile, each line with its FILE:LINE: the
	// unit files it is read from are not copied (they may hold
	// Environment= secrets). HardNofileRead says it was gathered.
	HardNofile     []LimitLine `json:"hard_nofile,omitempty"`
	HardNofileRead bool        `json:"hard_nofile_read,omitempty"`
	// BootNrOpen is Facts.BootNrOpen (the sysctl.d files are not copied).
	BootNrOpen *LimitLine `json:"boot_nr_open,omitempty"`
	// PageSize in bytes.
	PageSize int64 `json:"page_size_bytes"`
	// Clock is the adjtimex answer.
	Clock Clock `json:"clock"`
	// ParentPID is the PID of the shell that started hostprep (whose
	// /proc/PID/limits a login-shell estimate reads).
	ParentPID int `json:"parent_pid"`
	// SelfPID is hostprep's own PID (whose /proc/PID/status gives its
	// capabilities).
	SelfPID int `json:"self_pid"`
	// User and Groups are who ran hostprep (pam_limits domains).
	User   string   `json:"user"`
	Groups []string `json:"groups"`
	// Container is the containment found (kind, own network namespace).
	Container Container `json:"container"`
	// SourceAddresses are the host's global addresses.
	SourceAddresses []string `json:"source_addresses"`
	// TargetJVM are the memory flags of a running Java target (from its
	// command line, which is not copied).
	TargetJVM *JVMFlags `json:"target_jvm,omitempty"`
	// ConfigNodeJVM are the memory flags of a running IoTDB ConfigNode
	// (from its command line, which is not copied).
	ConfigNodeJVM *JVMFlags `json:"confignode_jvm,omitempty"`
	// UserTasks are the tasks of the target's real user (summed over
	// /proc/*/status, which is not copied).
	UserTasks uint64 `json:"user_tasks,omitempty"`
	// NetNS and NetNSUnseen are the target's ProcessFacts.NetNS and
	// NetNSUnseen: whether it shares hostprep's network namespace is
	// read from /proc/PID/ns/net links, which a copy cannot carry.
	NetNS       string `json:"net_ns,omitempty"`
	NetNSUnseen string `json:"net_ns_unseen,omitempty"`
	// HeldFDs and HeldFDsUnseen are the target's (/proc/PID/fd is not
	// copied).
	HeldFDs       uint64 `json:"held_fds,omitempty"`
	HeldFDsUnseen string `json:"held_fds_unseen,omitempty"`
	// SystemctlShow maps a unit to `systemctl show -p ... UNIT` output.
	SystemctlShow map[string]string `json:"systemctl_show,omitempty"`
	// Files lists the files copied, relative to DIR.
	Files []string `json:"files"`
}

// recorder collects what a gather reads.
type recorder struct {
	paths map[string]bool
	// links maps a configuration file that is a symlink to the file it
	// resolves to (relative to the root, as hostconf resolves it): the
	// recording holds the same link, pointing straight there.
	links map[string]string
	// filterAs maps a symlink's target to the link, whose name says which
	// lines of it to keep (keepReadLines).
	filterAs map[string]string
	// unitLinks says the unit directories' links (hostconf.UnitDirLinks)
	// are recorded.
	unitLinks bool
	m         Recording
}

func newRecorder() *recorder {
	return &recorder{paths: map[string]bool{}, links: map[string]string{}, filterAs: map[string]string{}}
}

// link records that p (on the host) is a symlink resolving to target
// (relative to the root).
func (r *recorder) link(p, target string) {
	if r != nil {
		r.links[p] = target
	}
}

// recordedProcFiles are read by libraries under /proc (gopsutil: meminfo,
// cpuinfo, stat; procnet: net/netstat, net/tcp, net/tcp6), and the kernel
// release a replay reads instead of uname.
var recordedProcFiles = []string{"/proc/meminfo", "/proc/cpuinfo", "/proc/stat", "/proc/net/netstat", "/proc/net/sockstat",
	"/proc/net/tcp", "/proc/net/tcp6", "/proc/sys/kernel/osrelease"}

// neverRecorded are paths read but not copied: the process environment
// may hold secrets (the manifest keeps the container= entry only).
var neverRecorded = map[string]bool{"/proc/1/environ": true}

// binaryMarkers are files whose presence is read, not their bytes.
var binaryMarkers = map[string]bool{"/lib/systemd/systemd": true, "/usr/lib/systemd/systemd": true}

func (r *recorder) add(p string) {
	if r != nil {
		r.paths[p] = true
	}
}

// loadRecording reads DIR/hostprep-record.json, nil when absent (a plain
// tree such as tests build).
func LoadRecording(root string) (*Recording, error) {
	b, err := os.ReadFile(filepath.Join(root, RecordManifest))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if errors.Is(err, syscall.ENOTDIR) {
		return nil, exitcode.BadInputf("--root %s is not a directory: give the directory `hostprep preflight --record DIR` wrote", root)
	}
	if err != nil {
		return nil, exitcode.BadInputf("--root %s: %v", root, err)
	}
	var m Recording
	if err := json.Unmarshal(b, &m); err != nil || m.Format != 1 {
		return nil, exitcode.BadInputf("--root %s: %s is not a hostprep recording (format 1): %v; record one with hostprep preflight --record DIR", root, RecordManifest, err)
	}
	return &m, nil
}

// checkRecordedRoot refuses a --root that is not a recorded host
// (exitcode.BadInput): the live host's own root ("/"), or a directory
// without the manifest --record writes. "" (no --root) is fine.
func CheckRecordedRoot(root string) error {
	if root == "" {
		return nil
	}
	if filepath.Clean(root) == "/" {
		return exitcode.BadInputf("--root %s is the live host: drop --root (it replays a host recorded with hostprep preflight --record DIR)", root)
	}
	if st, err := os.Stat(root); err == nil && !st.IsDir() {
		return exitcode.BadInputf("--root %s is not a directory: give the directory `hostprep preflight --record DIR` wrote", root)
	}
	if _, err := os.Stat(filepath.Join(root, RecordManifest)); err != nil {
		return exitcode.BadInputf("--root %s: not a recorded host (no %s in it); record one on the host with hostprep preflight --record DIR and pass that DIR", root, RecordManifest)
	}
	return nil
}

// checkRecordDir refuses a --record path that cannot become a recording
// (exitcode.BadInput): an existing file or other non-directory, a
// directory that is not empty, or a path below a file. A path that does
// not exist yet is fine; write creates it.
func CheckRecordDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, syscall.ENOTDIR):
		return exitcode.BadInputf("--record %s: a part of the path is a file, not a directory; give a new or empty directory", dir)
	case err != nil:
		return nil
	case !st.IsDir():
		return exitcode.BadInputf("--record %s: exists and is not a directory; give a new or empty directory, e.g. --record %s.d", dir, filepath.Clean(dir))
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return exitcode.BadInputf("--record %s: the directory is not empty; give a new or empty directory, so the recording holds only what preflight read", dir)
	}
	return nil
}

// write copies the recorded files into dir and writes the manifest. dir
// must not exist or be empty, so a recording holds nothing else.
func (r *recorder) write(dir string) error {
	if err := CheckRecordDir(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			return exitcode.BadInputf("--record %s: a part of the path is a file, not a directory; give a new or empty directory", dir)
		}
		return exitcode.Environmentf("--record %s: %v", dir, err)
	}
	var files []string
	for _, p := range recordedProcFiles {
		r.paths[p] = true
	}
	paths := make([]string, 0, len(r.paths))
	for p := range r.paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, src := range paths {
		if _, ok := r.links[src]; ok {
			continue
		}
		filter := src
		if l, ok := r.filterAs[src]; ok {
			filter = l
		}
		ok, err := copyRecorded(src, filepath.Join(dir, src), filter)
		if err != nil {
			return exitcode.Environmentf("--record %s: %s: %v", dir, src, err)
		}
		if ok {
			files = append(files, strings.TrimPrefix(src, "/"))
		}
	}
	links, err := r.writeLinks(dir)
	if err != nil {
		return exitcode.Environmentf("--record %s: %v", dir, err)
	}
	files = append(files, links...)
	sort.Strings(files)
	r.m.Format, r.m.Files = 1, files
	b, err := json.MarshalIndent(&r.m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, RecordManifest), append(b, '\n'), 0o644); err != nil {
		return exitcode.Environmentf("--record %s: %v", dir, err)
	}
	return nil
}

// writeLinks makes the recorded symlinks under dir, each pointing
// straight to the file it resolves to (an absolute target is taken
// relative to the root by hostconf, as chroot would), and returns them
// relative to dir.
func (r *recorder) writeLinks(dir string) ([]string, error) {
	var out []string
	for src, target := range r.links {
		dst := filepath.Join(dir, src)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.Symlink(target, dst); err != nil {
			return nil, err
		}
		out = append(out, strings.TrimPrefix(src, "/"))
	}
	sort.Strings(out)
	return out, nil
}

// copyRecorded copies one path read: a regular file's bytes, a
// directory as an empty directory, a binary marker as an empty file.
// Absent paths and /proc/1/environ are skipped (ok false). filter is the
// path whose kind says which lines to keep (keepReadLines): src itself,
// or the symlink that led to it.
func copyRecorded(src, dst, filter string) (bool, error) {
	if neverRecorded[src] {
		return false, nil
	}
	st, err := os.Stat(src)
	if err != nil {
		return false, nil // absence is what a replay should see too
	}
	if st.IsDir() {
		return false, os.MkdirAll(dst, 0o755)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return false, err
	}
	if binaryMarkers[src] {
		return true, os.WriteFile(dst, nil, 0o644)
	}
	in, err := os.Open(src)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return false, nil
		}
		return false, err
	}
	defer in.Close()
	// procfs files report size 0: copy what a read returns
	b, err := io.ReadAll(in)
	if err != nil {
		return false, fmt.Errorf("read: %w", err)
	}
	return true, os.WriteFile(dst, KeepReadLines(filter, b), 0o644)
}

// recordedSystemdKeys are the keys of systemd unit, slice and manager
// files preflight reads: a recording keeps their assignments and blanks
// every other line (keepReadLines). A key read but not listed here would
// be lost from a recording, and its replay judge the unit without it:
// TestRecordKeepsEveryKeyRead fails then.
var RecordedSystemdKeys = append([]string{"LimitNOFILE", "User", "DefaultLimitNOFILE", "TasksMax", "DefaultTasksMax",
	"Slice", "DefaultMemoryLow", "DefaultMemoryMin"}, MemKeys...)

// keepReadLines keeps of a configuration file only the lines preflight
// reads — a unit's Environment= or a drop-in's ExecStart= may hold
// secrets: section headers and the recordedSystemdKeys of systemd files
// (hostconf.KeepSettings: continuations whole, and a line that stops
// systemd's parser still stopping it), and the nofile lines of
// limits.conf and limits.d. Other lines are left empty, so every kept
// line keeps its number (a replay names the same FILE:LINE). Other files
// (procfs) are kept whole.
func KeepReadLines(path string, b []byte) []byte {
	var out string
	switch {
	case strings.HasPrefix(path, "/etc/security/"):
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			l, _, _ = strings.Cut(l, "#") // as hostconf reads it
			if f := strings.Fields(l); len(f) != 4 || !strings.EqualFold(f[2], "nofile") {
				lines[i] = ""
			}
		}
		out = strings.Join(lines, "\n")
	case strings.Contains(path, "/systemd/"):
		out = string(hostconf.KeepSettings(b, RecordedSystemdKeys))
	default:
		return b
	}
	if out == "" && len(b) > 0 {
		out = "\n" // an empty file would read as masked (hostconf)
	}
	return []byte(out)
}

// fill takes the answers of system calls from the gathered facts.
func (r *recorder) fill(f *Facts) {
	r.m.Listeners, r.m.ListenersKnown = f.Listeners, f.ListenersKnown
	r.m.Kernel, r.m.PageSize, r.m.Clock = f.Kernel, f.PageSize, f.Clock
	r.m.Container, r.m.SourceAddresses = f.Container, f.SourceAddresses
}
