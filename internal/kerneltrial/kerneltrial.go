// Package kerneltrial asks the running kernel whether it takes a sysctl
// value. It writes the value in a network namespace made for the trial
// (unshare(CLONE_NEWNET) on a locked OS thread that exits afterwards, so
// the namespace goes with it), reads back what the kernel stored, and
// never writes in the caller's own namespace.
//
// Only keys the kernel keeps per network namespace can be tried. Which
// keys those are is found the same way, not listed: a key under net/ that
// a new namespace shows, writable. Global keys (fs.*, vm.*, the net.core
// buffer limits, tcp_mem) are reported as not tried, and the caller falls
// back to its table of bounds for them.
//
// A new namespace has no interface but lo. A key of another interface
// (net.ipv6.conf.eth0.hop_limit) is tried on an entry of the same tree
// the namespace has (conf's "default", which the kernel builds every
// interface's entry from; neigh's "lo"): the same handlers and bounds,
// seeded with the interface's values. Result.TriedAs says so.
//
// A new namespace starts from the kernel's defaults (or init_net's
// values), not from the caller's. Before the trial, every key of the
// directories tried is copied from the caller's namespace into the new
// one, so a rule between keys (ip_local_port_range against
// ip_unprivileged_port_start) is judged against the caller's values.
package kerneltrial

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/internal/sysctlval"
)

// procSys is the live sysctl tree, as seen by the calling thread.
const procSys = "/proc/sys"

// maxSearchWrites bounds the writes of one nearest-value search; a field
// of 64 bits needs at most 64 halvings.
const maxSearchWrites = 64

// ErrUnavailable is wrapped by Try's error when no trial namespace can be
// made (not root, no CAP_SYS_ADMIN, a seccomp filter): the caller falls
// back to its table and says so.
var ErrUnavailable = errors.New("no trial network namespace")

// Write is one value to try, as the kernel prints it ("4096 131072 6291456").
type Write struct {
	Key   string // as the kernel spells it: net.ipv4.tcp_rmem
	Value string
}

// Fault is one field the kernel refused and the nearest value it takes.
type Fault struct {
	// Field is 1-based (tcp_rmem: 1 min, 2 default, 3 max); 0 for a
	// one-number key.
	Field int
	// Value is the refused number; Nearest the accepted number nearest to
	// it, found by a search of writes between it and the namespace's
	// current (accepted) value; Found is false when the search found none.
	Value, Nearest int64
	Found          bool
}

// Result is the kernel's answer for one Write.
type Result struct {
	Write
	// PerNamespace is true when the key was tried: it lives in each
	// network namespace. False: global or absent here, or NotTried says
	// why the write could not be a verdict; nothing was kept.
	PerNamespace bool
	// NotTried says why a per-namespace key gave no verdict: the write
	// was denied, not judged (EROFS: /proc/sys mounted read-only, as in a
	// container; EPERM, EACCES).
	NotTried string
	// Accepted: the write went through; Stored is then what the kernel
	// prints afterwards (fields separated by one space), which may differ
	// from Value where the kernel clamps or normalises.
	Accepted bool
	Stored   string
	// MovedTo is what the key held at the end of the trial when a later
	// write of it changed the value it was given ("" when none did): the
	// kernel ties the two keys (one variable under two names, such as
	// net.ipv4.ip_forward and net.ipv4.conf.all.forwarding, or an all
	// entry copied into the others), so an apply could not leave both.
	MovedTo string
	// TriedAs is the key written in the trial namespace when it is not
	// Key: an interface's key is tried on its tree's stand-in entry
	// (net.ipv6.conf.default.hop_limit for net.ipv6.conf.eth0.hop_limit).
	TriedAs string
	// Err is the kernel's refusal (EINVAL) when !Accepted.
	Err error
	// Faults are the fields at fault when refused; Nearest is Value with
	// each of them replaced by its nearest accepted number, as the kernel
	// stores it, "" when no accepted value was found.
	Faults  []Fault
	Nearest string
}

// afterTrial, when set (by tests only), runs between the trial and the
// guard: the moment another writer's change would fall into.
var afterTrial func()

// Try writes each value in order in one new network namespace, as an
// apply would write them (a later write sees the earlier ones), and
// returns one Result per Write. A refused value is left as it was and
// its nearest accepted value is searched for and left written, so later
// writes see what an apply of the nearest values would leave.
//
// Errors wrap ErrUnavailable when the namespace cannot be made; any
// other error means the trial could not be trusted (a value of the
// caller's namespace changed during it, which Try then restores).
func Try(writes []Write) ([]Result, error) {
	before := map[string]string{}
	for _, w := range writes {
		if v, err := read(path(w.Key)); err == nil {
			before[w.Key] = v
		}
	}
	type answer struct {
		res   []Result
		final map[string]string
		err   error
	}
	ch := make(chan answer, 1)
	go func() {
		// The thread is never unlocked: it exits with the goroutine, and
		// the namespace with it.
		runtime.LockOSThread()
		res, final, err := tryLocked(writes)
		ch <- answer{res, final, err}
	}()
	a := <-ch
	if afterTrial != nil {
		afterTrial()
	}
	// The guard: a key the trial wrote must be the caller's own as before.
	// Only a key that now holds what the trial left in its namespace leaked
	// out of it; one changed to anything else was changed by another
	// writer meanwhile, and is not the trial's to put back.
	for k, v := range before {
		left, wrote := a.final[k]
		if now, err := read(path(k)); err == nil && wrote && now != v && now == left {
			_ = os.WriteFile(path(k), []byte(v), 0)
			return nil, fmt.Errorf("kernel trial: %s changed in this namespace during the trial (%s -> %s, restored): it is not per namespace", k, v, now)
		}
	}
	return a.res, a.err
}

// tryLocked runs on a locked thread: it copies the caller's values of the
// tried directories, moves the thread to a new network namespace, seeds
// it and tries every write. final holds, for each key it wrote, the value
// the namespace has at the end.
func tryLocked(writes []Write) (out []Result, final map[string]string, err error) {
	seed := map[string]map[string]string{} // trial dir -> trial file -> caller's value
	for _, w := range writes {
		p, _ := trialPath(w.Key)
		dir := filepath.Dir(p)
		if !strings.HasPrefix(w.Key, "net.") || seed[dir] != nil {
			continue
		}
		seed[dir] = map[string]string{}
		for f, v := range readDir(filepath.Dir(path(w.Key))) {
			seed[dir][filepath.Join(dir, filepath.Base(f))] = v
		}
	}
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		return nil, nil, fmt.Errorf("%w: unshare(CLONE_NEWNET): %v", ErrUnavailable, err)
	}
	for _, files := range seed {
		seedDir(files)
	}
	out = make([]Result, len(writes))
	for i, w := range writes {
		out[i] = tryOne(w)
	}
	markMoved(out)
	final = map[string]string{}
	for _, r := range out {
		// A key tried as another leaves the caller's key alone: nothing
		// of it for the guard to look for.
		if r.PerNamespace && r.TriedAs == "" {
			if v, err := read(path(r.Key)); err == nil {
				final[r.Key] = v
			}
		}
	}
	return out, final, nil
}

// markMoved reads again each key the trial wrote as itself and sets
// MovedTo where a later write changed it. A file two writes shared (an
// interface's key tried on the entry that stands for it, and that entry's
// own key) is left out: the trial made them one, not the kernel.
func markMoved(out []Result) {
	files := map[string]int{}
	for _, r := range out {
		p, _ := trialPath(r.Key)
		files[p]++
	}
	for i, r := range out {
		p, _ := trialPath(r.Key)
		if !r.Accepted || r.TriedAs != "" || files[p] > 1 {
			continue
		}
		if v, err := read(p); err == nil && v != r.Stored {
			out[i].MovedTo = v
		}
	}
}

// tryOne tries one write in the trial namespace.
func tryOne(w Write) Result {
	r := Result{Write: w}
	p, as := trialPath(w.Key)
	r.TriedAs = as
	if !strings.HasPrefix(w.Key, "net.") || !writable(p) {
		return r
	}
	r.PerNamespace = true
	base, err := read(p)
	if err != nil {
		r.PerNamespace = false
		return r
	}
	err = write(p, w.Value)
	switch {
	case err == nil:
		r.Accepted = true
		r.Stored, _ = read(p)
		return r
	case errors.Is(err, unix.EROFS) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES):
		r.PerNamespace, r.NotTried = false, fmt.Sprintf("writing %s was denied (%v), not judged", p, err)
		return r
	}
	r.Err = err
	r.Faults, r.Nearest = nearest(p, w.Value, base)
	return r
}

// nearest finds, field by field, the accepted number nearest to each
// refused one, between it and base (the namespace's current value, which
// the kernel holds and so accepts). A field is at fault when base with
// that one field changed is refused. The nearest value is written and
// read back; "" when it is refused too or the values are not numbers.
func nearest(p, value, base string) ([]Fault, string) {
	want, ok1 := numbers(value)
	have, ok2 := numbers(base)
	if !ok1 || !ok2 || len(want) != len(have) {
		return nil, ""
	}
	writes := 0
	accepts := func(f []int64) bool {
		writes++
		return write(p, join(f)) == nil
	}
	var faults []Fault
	cand := append([]int64(nil), want...)
	for i := range want {
		if want[i] == have[i] {
			continue
		}
		t := append([]int64(nil), have...)
		t[i] = want[i]
		if accepts(t) {
			continue
		}
		field := i + 1
		if len(want) == 1 {
			field = 0
		}
		// Invariant: bad is refused, good accepted; halve the gap.
		bad, good := want[i], have[i]
		for gap(bad, good) > 1 && writes < maxSearchWrites*len(want) {
			t[i] = mid(bad, good)
			if accepts(t) {
				good = t[i]
			} else {
				bad = t[i]
			}
		}
		faults = append(faults, Fault{Field: field, Value: want[i], Nearest: good, Found: gap(bad, good) <= 1})
		cand[i] = good
	}
	if len(faults) == 0 {
		// No single field is at fault: the combination is (min above max).
		return nil, ""
	}
	for _, f := range faults {
		if !f.Found {
			return faults, ""
		}
	}
	if write(p, join(cand)) != nil {
		return faults, ""
	}
	stored, _ := read(p)
	return faults, stored
}

func gap(a, b int64) uint64 {
	if a > b {
		return uint64(a) - uint64(b)
	}
	return uint64(b) - uint64(a)
}

// mid is the number halfway from a to b, without overflow.
func mid(a, b int64) int64 {
	if a > b {
		return a - int64(gap(a, b)/2)
	}
	return a + int64(gap(a, b)/2)
}

// numbers parses a value of white-space separated integers.
func numbers(v string) ([]int64, bool) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return nil, false
	}
	out := make([]int64, len(f))
	for i, s := range f {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, false
		}
		out[i] = n
	}
	return out, true
}

func join(f []int64) string {
	s := make([]string, len(f))
	for i, n := range f {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, " ")
}

// seedDir writes the caller's values into the trial namespace's keys of
// one directory where they differ. A write that fails because of another
// key's value not yet copied succeeds on the second pass; one that fails
// twice is left at the new namespace's value.
func seedDir(files map[string]string) {
	var retry []string
	for pass := 0; pass < 2; pass++ {
		names := retry
		if pass == 0 {
			names = names[:0]
			for f := range files {
				names = append(names, f)
			}
		}
		retry = nil
		for _, f := range names {
			if !writable(f) {
				continue
			}
			if now, err := read(f); err != nil || now == files[f] {
				continue
			}
			if write(f, files[f]) != nil {
				retry = append(retry, f)
			}
		}
	}
}

// readDir reads every readable key file of one directory of /proc/sys.
func readDir(dir string) map[string]string {
	out := map[string]string{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		f := filepath.Join(dir, e.Name())
		if v, err := read(f); err == nil {
			out[f] = v
		}
	}
	return out
}

// trialPath is the file a trial writes for key, and the key it stands for
// when that is not key ("" otherwise). The key of an interface a new
// namespace does not have (any but lo) is written on the entry of its
// tree that stands for any interface: conf's "default", which every
// interface's entry is built from, and neigh's "lo" (a new namespace has
// no neigh default: the kernel registers that one in the initial
// namespace only).
func trialPath(key string) (p, as string) {
	tree, dev, rest, ok := sysctlkey.Interface(key)
	if !ok || dev == "lo" {
		return path(key), ""
	}
	standIn := "default"
	if strings.HasSuffix(tree, "/neigh/") {
		standIn = "lo"
	}
	d := tree + standIn + "/" + rest
	return filepath.Join(procSys, d), sysctlkey.Dotted(d)
}

func path(key string) string {
	return sysctlkey.File(procSys, key)
}

// writable reports a regular file with a write bit (the kernel shows a
// global key read-only in a namespace other than the initial one).
func writable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o222 != 0
}

// read returns a key's value as sysctlval.Normal gives it: trimmed, a
// numeric vector's fields separated by one space.
func read(p string) (string, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return sysctlval.Normal(string(b)), nil
}

// write writes v as a sysctl(8) would, in one write(2); the kernel's
// refusal is the returned errno.
func write(p, v string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.Write([]byte(v + "\n"))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Release is the running kernel's release (uname -r), "" when unknown.
func Release() string {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Release[:])
}

// BufferFloors asks the running kernel for its smallest socket buffers,
// SOCK_MIN_RCVBUF and SOCK_MIN_SNDBUF in bytes (include/net/sock.h: they
// follow from struct sk_buff's size, so they differ between builds and
// architectures). A socket given SO_RCVBUF or SO_SNDBUF 1 gets the floor,
// which getsockopt reports. The global keys net.core.rmem_max and
// rmem_default refuse a value below the first, wmem_max and wmem_default
// one below the second (extra1 in net/core/sysctl_net_core.c), and no
// network namespace can try them: this asks without writing anything.
func BufferFloors() (rcv, snd int64, err error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Close(fd)
	for _, o := range []struct {
		opt int
		out *int64
	}{{unix.SO_RCVBUF, &rcv}, {unix.SO_SNDBUF, &snd}} {
		if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, o.opt, 1); err != nil {
			return 0, 0, err
		}
		v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, o.opt)
		if err != nil {
			return 0, 0, err
		}
		*o.out = int64(v)
	}
	return rcv, snd, nil
}
