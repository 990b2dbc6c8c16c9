// Package journal keeps hostprep's record of what it changed
// (/var/lib/hostprep/state.json): the original value of every sysctl key
// and the original bytes (or absence) of every file hostprep touched,
// recorded before the first change, plus what hostprep last set, so that
// rollback can restore the host exactly and tell when someone else changed
// a value since.
package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hostprep/hostprep/tune/files"
)

// DefaultPath is where the journal lives on a host.
const DefaultPath = "/var/lib/hostprep/state.json"

// Version of the state.json format.
const Version = 1

// Key is one sysctl key hostprep set.
type Key struct {
	// Original is the value before hostprep first set the key.
	Original string `json:"original"`
	// Set is the value hostprep last wrote (or is about to write).
	Set string `json:"set"`
	// Mode is the profile's mode for the key (verify compares with it).
	Mode string `json:"mode,omitempty"`
	// Want is the profile's value (for at-least/at-most: the bound).
	Want string `json:"want,omitempty"`
	// Seq orders keys by first change; rollback goes in reverse.
	Seq int `json:"seq"`
}

// Companion is a key the kernel may change along with one hostprep
// writes (State.Companions).
type Companion struct {
	// Original is the value before hostprep's first apply.
	Original string `json:"original"`
	// Set is the value the applies' writes left, when they moved it;
	// "" when none did.
	Set string `json:"set,omitempty"`
	// Pending: an apply that may move it was journaled and has not
	// settled it (killed part way); rollback then takes it as moved.
	Pending bool `json:"pending,omitempty"`
}

// File is one file hostprep owns.
type File struct {
	// Existed says whether the file was there before hostprep wrote it.
	Existed bool `json:"existed"`
	// Original holds its bytes then (base64 in JSON).
	Original []byte `json:"original,omitempty"`
	// Mode is its permission bits then.
	Mode uint32 `json:"mode,omitempty"`
	// Owner is its owner then (nil for a file that did not exist, or a
	// journal written before owners were recorded).
	Owner *Owner `json:"owner,omitempty"`
	// SetSHA256 is the hex SHA-256 of the bytes hostprep last wrote.
	SetSHA256 string `json:"set_sha256"`
	// Seq orders files by first change.
	Seq int `json:"seq"`
	// Link is the target of the symbolic link that was there (Debian's
	// 99-sysctl.conf -> ../sysctl.conf, a mask -> /dev/null, or one that
	// led nowhere), restored as a link by rollback; "" for a file.
	Link string `json:"link,omitempty"`
}

// Owner is a file's numeric owner and group.
type Owner struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// IDs returns uid and gid, or -1, -1 for a nil Owner (leave as written).
func (o *Owner) IDs() (int, int) {
	if o == nil {
		return -1, -1
	}
	return o.UID, o.GID
}

// Process is a running process whose RLIMIT_NOFILE hostprep raised
// (--pid/--service). StartTime tells a reused pid from the process
// hostprep raised: rollback touches the pid only when both match.
type Process struct {
	PID int `json:"pid"`
	// StartTime is field 22 of /proc/PID/stat (clock ticks after boot).
	StartTime uint64 `json:"start_time"`
	// Service is the systemd unit, for --service.
	Service string `json:"service,omitempty"`
	// Original is the limit before hostprep first raised it (file
	// descriptors, soft and hard).
	Original Limit `json:"original"`
	// Set is the limit hostprep last set.
	Set Limit `json:"set"`
	// Seq orders processes by first change.
	Seq int `json:"seq"`
}

// Persisted is the union of every applied profile's persistent settings
// (later apply wins), from which the owned files are rendered.
type Persisted struct {
	// Sysctl lines of 60-hostprep.conf, by key.
	Sysctl map[string]PersistedKey `json:"sysctl,omitempty"`
	// Nofile limits for limits.d, and the users they are written for.
	Nofile      *Limit   `json:"nofile,omitempty"`
	NofileUsers []string `json:"nofile_users,omitempty"`
	// DefaultLimitNOFILE for system.conf.d.
	DefaultLimitNOFILE *Limit `json:"default_limit_nofile,omitempty"`
	// Services maps unit name to its LimitNOFILE.
	Services map[string]Limit `json:"services,omitempty"`
	// TasksMax maps a unit of Services to the TasksMax= its drop-in sets,
	// in tasks (math.MaxUint64: infinity); a unit without one gets none.
	TasksMax map[string]uint64 `json:"tasks_max,omitempty"`
	// VerifyAtBoot is hostprep-verify.service and its timer (tune apply
	// --verify-at-boot); nil when not installed.
	VerifyAtBoot *VerifyUnit `json:"verify_at_boot,omitempty"`
}

// VerifyUnit is how hostprep-verify.service runs `hostprep tune verify`.
type VerifyUnit struct {
	// Bin is the hostprep binary the unit runs (absolute).
	Bin string `json:"bin"`
	// TextfileDir is node_exporter's textfile directory the run writes
	// hostprep_tune.prom into.
	TextfileDir string `json:"textfile_dir"`
	// Every is the timer's period as systemd.time(7) writes it ("1h").
	Every string `json:"every"`
}

// PersistedKey is one line of the sysctl.d file.
type PersistedKey struct {
	Value    string `json:"value"`
	Optional bool   `json:"optional,omitempty"`
	Comment  string `json:"comment,omitempty"`
	// Mode is the profile's mode for the key (at-least, at-most, exact;
	// "" = exact): verify --boot compares the boot value with it, also
	// for keys the runtime already satisfied (so not in State.Keys).
	Mode string `json:"mode,omitempty"`
}

// Limit is a soft:hard pair (file descriptors for nofile).
type Limit struct {
	Soft uint64 `json:"soft"`
	Hard uint64 `json:"hard"`
}

// Apply is one apply that changed something.
type Apply struct {
	Profile string `json:"profile"`
	// Source is how --profile named it (a built-in name or a file's
	// absolute path; profiles.Profile.Source), for "apply again" advice.
	Source string `json:"source,omitempty"`
	// Sets are the --set overrides it was applied with.
	Sets []string  `json:"sets,omitempty"`
	At   time.Time `json:"at"`
	Root string    `json:"root,omitempty"`
	// InProgress is the completion marker: true from the journal write
	// before the first change until every change of this apply is made,
	// then cleared. A journal whose last apply is still in progress
	// records an apply that was killed part way (status says so).
	InProgress bool `json:"in_progress,omitempty"`
}

// Interrupted returns the last apply when it never completed (killed part
// way), else nil.
func (s *State) Interrupted() *Apply {
	if len(s.Applies) == 0 || !s.Applies[len(s.Applies)-1].InProgress {
		return nil
	}
	return &s.Applies[len(s.Applies)-1]
}

// State is the content of state.json.
type State struct {
	Version int `json:"version"`
	// Applies lists every apply that changed something, oldest first.
	Applies []Apply `json:"applies"`
	// Keys are the sysctl keys hostprep set (runtime layer).
	Keys map[string]*Key `json:"keys,omitempty"`
	// Companions are keys hostprep did not plan whose value the kernel
	// may change when a planned key is written (an interface tree's all
	// and default entries, the same setting of its other interfaces, an
	// alias such as net.ipv4.ip_forward), by dotted key. Rollback puts
	// back those its own writes (or the applies') moved.
	Companions map[string]*Companion `json:"companions,omitempty"`
	// Files are the owned files, by absolute path (including any --root).
	Files map[string]*File `json:"files,omitempty"`
	// Processes are running processes hostprep raised, by pid.
	Processes map[string]*Process `json:"processes,omitempty"`
	// Dirs are directories hostprep created (drop-in dirs), removed on
	// rollback when empty.
	Dirs []string `json:"dirs,omitempty"`
	// Persisted is what the owned files hold.
	Persisted Persisted `json:"persisted"`
	// NextSeq numbers the next first change.
	NextSeq int `json:"next_seq"`
	// Root is the tree the file paths above were written under ("" for
	// /). A journal written into an image with --root /srv/image names
	// /srv/image/etc/...; read on the booted image (root /) the paths are
	// rebased to /etc/....
	Root string `json:"root,omitempty"`
	// PersistName is the name of hostprep's sysctl.d file as of the last
	// apply (written before its first change, so an interrupted apply
	// that moves the file is finished under the new name); "" in a
	// journal from before names were remembered.
	PersistName string `json:"persist_name,omitempty"`
	// RollbackStarted is the completion marker of a rollback: set (UTC)
	// in the journal written before its first undo; a rollback that
	// finishes removes the journal or clears it. A journal that still
	// has it records a rollback killed part way (status says so).
	RollbackStarted *time.Time `json:"rollback_started,omitempty"`
	// RollbackIncomplete is when a rollback that ran to its end started,
	// set when it could not restore every item: the journal keeps only
	// those (status says so, rather than that it was killed). Cleared
	// by the next apply or rollback.
	RollbackIncomplete *time.Time `json:"rollback_incomplete,omitempty"`
}

// New returns an empty state.
func New() *State {
	return &State{Version: Version, Keys: map[string]*Key{}, Files: map[string]*File{}, Processes: map[string]*Process{}}
}

// Profiles lists the distinct profile names applied, in first-apply order.
func (s *State) Profiles() []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range s.Applies {
		if !seen[a.Profile] {
			seen[a.Profile] = true
			out = append(out, a.Profile)
		}
	}
	return out
}

// Empty reports whether the state records nothing to undo.
func (s *State) Empty() bool {
	return len(s.Keys) == 0 && len(s.Files) == 0 && len(s.Dirs) == 0 && len(s.Processes) == 0
}

// Clone returns a deep copy (via JSON).
func (s *State) Clone() *State {
	b, _ := json.Marshal(s)
	c := New()
	_ = json.Unmarshal(b, c)
	return c
}

// Load reads the journal at path. A missing journal gives (nil, nil):
// nothing applied.
func Load(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	s := New()
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("journal %s is damaged (%v); it records what hostprep changed, so restore it from a backup rather than deleting it", path, err)
	}
	if s.Version != Version {
		return nil, fmt.Errorf("journal %s has version %d, this hostprep reads version %d", path, s.Version, Version)
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("journal %s is damaged (%v); it records what hostprep changed, so restore it from a backup rather than deleting it", path, err)
	}
	if s.Keys == nil {
		s.Keys = map[string]*Key{}
	}
	if s.Files == nil {
		s.Files = map[string]*File{}
	}
	if s.Processes == nil {
		s.Processes = map[string]*Process{}
	}
	return s, nil
}

// Save writes the journal atomically (temporary file, fsync, rename, fsync
// of the directory), creating its directory (mode 0755) when missing.
func Save(path string, s *State) error {
	if _, err := files.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return files.WriteAtomic(path, append(b, '\n'), 0o600)
}

// Remove deletes the journal (rollback done).
func Remove(path string) error { return files.Remove(path) }

// SHA256 is the hex SHA-256 of b, as in File.SetSHA256.
func SHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// validate checks the fields status, verify, apply and rollback rely on,
// so that a damaged or crafted journal is refused on load instead of
// crashing a later step: every entry present, file and directory paths
// absolute and clean, set_sha256 64 lowercase hex digits, pids positive.
func (s *State) validate() error {
	for k, v := range s.Keys {
		if k == "" || v == nil {
			return fmt.Errorf("key %q: empty entry", k)
		}
	}
	for p, f := range s.Files {
		if f == nil {
			return fmt.Errorf("file %q: empty entry", p)
		}
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return fmt.Errorf("file %q: not an absolute clean path", p)
		}
		if strings.ContainsRune(f.Link, 0) || (f.Link != "" && !f.Existed) {
			return fmt.Errorf("file %s: link %q without an existing original", p, f.Link)
		}
		if !isSHA256Hex(f.SetSHA256) {
			return fmt.Errorf("file %s: set_sha256 %q is not 64 lowercase hex digits", p, f.SetSHA256)
		}
	}
	for id, pr := range s.Processes {
		if pr == nil || pr.PID <= 0 {
			return fmt.Errorf("process %q: empty entry or pid not positive", id)
		}
	}
	for _, d := range s.Dirs {
		if !filepath.IsAbs(d) || filepath.Clean(d) != d {
			return fmt.Errorf("directory %q: not an absolute clean path", d)
		}
	}
	if n := s.PersistName; n != "" && (strings.ContainsAny(n, "/\x00") || strings.HasPrefix(n, ".") || !strings.HasSuffix(n, ".conf")) {
		return fmt.Errorf("persist_name %q: not a plain *.conf file name", n)
	}
	return nil
}

// isSHA256Hex reports whether h is a hex SHA-256 as SHA256 returns it.
func isSHA256Hex(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
