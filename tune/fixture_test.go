package tune

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/sysctl"
)

// stockSysctl is a stock Debian 12 host (kernel 6.1, 8 GiB, 4 CPUs) as the
// kernel prints it; multi-value keys use tabs as the kernel does.
var stockSysctl = map[string]string{
	"fs.nr_open":                          "1048576",
	"fs.file-max":                         "9223372036854775807",
	"net.core.somaxconn":                  "4096",
	"net.core.netdev_max_backlog":         "1000",
	"net.core.rmem_default":               "212992",
	"net.core.wmem_default":               "212992",
	"net.core.rmem_max":                   "212992",
	"net.core.wmem_max":                   "212992",
	"net.core.optmem_max":                 "20480",
	"net.ipv4.tcp_max_syn_backlog":        "512",
	"net.ipv4.ip_local_port_range":        "32768\t60999",
	"net.ipv4.ip_local_reserved_ports":    "",
	"net.ipv4.ip_unprivileged_port_start": "1024",
	"net.ipv4.tcp_rmem":                   "4096\t131072\t6291456",
	"net.ipv4.tcp_wmem":                   "4096\t16384\t4194304",
	"net.ipv4.tcp_mem":                    "92160\t122880\t184320",
	"net.ipv4.tcp_fin_timeout":            "60",
	"net.ipv4.tcp_max_tw_buckets":         "65536",
	"net.ipv4.tcp_tw_reuse":               "2",
	"net.ipv4.tcp_syn_retries":            "6",
	"net.core.dev_weight":                 "64", // only in the initial network namespace
}

// procNetTCP has sshd (22) and a broker (1883) listening, and one
// established connection from ephemeral port 40000.
const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1000 1 0000000000000000 100 0 0 10 0
   1: 00000000:075B 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   2: 0100007F:9C40 0100007F:075B 01 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 100 0 0 10 0
`

// fakeHost is a temporary /proc/sys, /proc/net and / tree.
type fakeHost struct {
	t                  testing.TB
	procSys, proc, etc string
	root               string
	env                Env
}

func newHost(t testing.TB, overrides map[string]string) *fakeHost {
	t.Helper()
	base := t.TempDir()
	h := &fakeHost{t: t, procSys: filepath.Join(base, "proc", "sys"), proc: filepath.Join(base, "proc"), root: filepath.Join(base, "root")}
	vals := map[string]string{}
	for k, v := range stockSysctl {
		vals[k] = v
	}
	for k, v := range overrides {
		if v == "<absent>" {
			delete(vals, k)
			continue
		}
		vals[k] = v
	}
	for k, v := range vals {
		h.writeKey(k, v)
	}
	must(t, os.MkdirAll(filepath.Join(h.proc, "net"), 0o755))
	must(t, os.WriteFile(filepath.Join(h.proc, "net", "tcp"), []byte(procNetTCP), 0o644))
	for _, d := range []string{"etc/sysctl.d", "etc/security/limits.d", "etc/systemd", "var/lib"} {
		must(t, os.MkdirAll(filepath.Join(h.root, d), 0o755))
	}
	// The files the old script appended to: hostprep must never touch them.
	must(t, os.WriteFile(filepath.Join(h.root, "etc/sysctl.conf"), []byte("# /etc/sysctl.conf - stock\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(h.root, "etc/security/limits.conf"), []byte("# /etc/security/limits.conf - stock\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(h.root, "etc/sysctl.d/99-other.conf"), []byte("vm.swappiness = 10\n"), 0o644))
	h.env = Env{
		ProcSys:            h.procSys,
		Proc:               h.proc,
		Root:               h.root,
		LockFile:           filepath.Join(base, "hostprep.lock"),
		LockWait:           300 * time.Millisecond,
		SystemdRunDir:      filepath.Join(base, "run-systemd-system-absent"),
		SkipPrivilegeCheck: true,
	}
	return h
}

// newImage lays tree (paths relative to the image, "/etc/...") under a
// fresh image directory and returns it with the image-mode Env (--root)
// that tunes it.
func newImage(t testing.TB, tree map[string]string) (string, Env) {
	t.Helper()
	img := filepath.Join(t.TempDir(), "img")
	must(t, os.MkdirAll(img, 0o755))
	testenv.WriteTree(t, img, tree)
	return img, Env{Root: img, Image: true, SkipPrivilegeCheck: true}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (h *fakeHost) keyPath(k string) string {
	return sysctlkey.File(h.procSys, k)
}

func (h *fakeHost) writeKey(k, v string) {
	p := h.keyPath(k)
	must(h.t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(h.t, os.WriteFile(p, []byte(v+"\n"), 0o644))
}

func (h *fakeHost) get(k string) string {
	b, err := os.ReadFile(h.keyPath(k))
	must(h.t, err)
	return strings.TrimSpace(string(b))
}

func (h *fakeHost) file(rel string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(h.root, rel))
	if err != nil {
		return "", false
	}
	return string(b), true
}

// entry is one file of a snapshot: bytes, mode and mtime.
type entry struct {
	data  string
	mode  fs.FileMode
	mtime time.Time
}

// snapshot records every file and directory under /proc/sys and / (the
// lock file aside), so a test can tell that nothing at all changed.
func (h *fakeHost) snapshot() map[string]entry {
	h.t.Helper()
	out := map[string]entry{}
	for _, dir := range []string{h.procSys, h.root} {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			e := entry{mode: info.Mode(), mtime: info.ModTime()}
			if d.IsDir() {
				e.mtime = time.Time{} // the journal directory's own mtime is not the point
			} else if d.Type()&fs.ModeSymlink != 0 {
				t, err := os.Readlink(p) // a link is its target, whatever it leads to
				if err != nil {
					return err
				}
				e.data = "-> " + t
			} else {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				e.data = string(b)
				if strings.HasPrefix(p, h.procSys) {
					// The kernel prints its canonical form (tabs between
					// fields) whatever was written; compare the fields,
					// not the fixture's bytes.
					e.data = strings.Join(strings.Fields(e.data), " ")
					e.mtime = time.Time{}
				}
			}
			out[p] = e
			return nil
		})
		must(h.t, err)
	}
	return out
}

// diffSnapshots lists what differs between two snapshots (bytes, mode,
// mtime, presence), sorted.
func diffSnapshots(a, b map[string]entry, withMtime bool) []string {
	var d []string
	for p, ea := range a {
		eb, ok := b[p]
		switch {
		case !ok:
			d = append(d, "removed "+p)
		case ea.data != eb.data:
			d = append(d, fmt.Sprintf("changed %s: %q -> %q", p, ea.data, eb.data))
		case ea.mode != eb.mode:
			d = append(d, fmt.Sprintf("mode %s: %v -> %v", p, ea.mode, eb.mode))
		case withMtime && !ea.mtime.Equal(eb.mtime):
			d = append(d, fmt.Sprintf("mtime %s: %v -> %v", p, ea.mtime, eb.mtime))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			d = append(d, "added "+p)
		}
	}
	sort.Strings(d)
	return d
}

func (h *fakeHost) assertUnchanged(before map[string]entry) {
	h.t.Helper()
	if d := diffSnapshots(before, h.snapshot(), false); len(d) > 0 {
		h.t.Fatalf("host changed:\n  %s", strings.Join(d, "\n  "))
	}
}

// countingBackend counts writes reaching /proc/sys and records their order.
type countingBackend struct {
	sysctl.Backend
	writes []string
}

func (c *countingBackend) Set(k, v string) error {
	c.writes = append(c.writes, k+"="+v)
	return c.Backend.Set(k, v)
}

// faultBackend makes the k-th write (1-based) fail as the kernel does with
// EINVAL. It stands in only for a refusal the fixture tree cannot produce.
type faultBackend struct {
	sysctl.Backend
	failAt, n int
	failed    string
}

func (f *faultBackend) Set(k, v string) error {
	f.n++
	if f.n == f.failAt {
		f.failed = k
		return &os.PathError{Op: "write", Path: k, Err: syscall.EINVAL}
	}
	return f.Backend.Set(k, v)
}

func (h *fakeHost) backend() *sysctl.Proc {
	b, err := sysctl.New(h.procSys)
	must(h.t, err)
	return b
}

func (h *fakeHost) apply(p *profiles.Profile) (*Result, error) {
	return Apply(context.Background(), p, Options{Env: h.env})
}

func (h *fakeHost) rollback() *RollbackResult {
	h.t.Helper()
	r, err := Rollback(context.Background(), h.env)
	if err != nil {
		h.t.Fatalf("rollback: %v", err)
	}
	return r
}

func wantCode(t testing.TB, err error, code int, mentions ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want exit %d, got no error", code)
	}
	if got := exitcode.Code(err); got != code {
		t.Fatalf("want exit %d, got %d: %v", code, got, err)
	}
	for _, m := range mentions {
		if !strings.Contains(strings.ToLower(err.Error()), strings.ToLower(m)) {
			t.Errorf("error does not mention %q: %v", m, err)
		}
	}
}

// sysTune mirrors the built-in sys-tune profile's tune-relevant settings,
// built in code so these tests do not depend on the YAML loader.
func sysTune() *profiles.Profile {
	al := profiles.AtLeast
	ex := profiles.Exact
	return &profiles.Profile{
		Name: "sys-tune",
		Sysctl: map[string]profiles.Sysctl{
			"fs.file-max":                  {Value: "2097152", Mode: al},
			"fs.nr_open":                   {Value: "2097152", Mode: al},
			"net.core.somaxconn":           {Value: "32768", Mode: al},
			"net.ipv4.tcp_max_syn_backlog": {Value: "16384", Mode: al},
			"net.core.netdev_max_backlog":  {Value: "16384", Mode: al},
			"net.ipv4.ip_local_port_range": {Value: "1024 65535", Mode: ex},
			"net.core.rmem_default":        {Value: "262144"},
			"net.core.wmem_default":        {Value: "262144"},
			"net.core.rmem_max":            {Value: "16777216", Mode: al},
			"net.core.wmem_max":            {Value: "16777216", Mode: al},
			"net.core.optmem_max":          {Value: "16777216", Mode: al},
			"net.ipv4.tcp_rmem":            {Value: "1024 4096 16777216", Mode: ex},
			"net.ipv4.tcp_wmem":            {Value: "1024 4096 16777216", Mode: ex},
			"net.ipv4.tcp_fin_timeout":     {Value: "15", Mode: ex},
			"net.ipv4.tcp_max_tw_buckets":  {Value: "1048576", Mode: al},
		},
		Limits:       profiles.Limits{Nofile: &profiles.Limit{Soft: 1048576, Hard: 1048576}, Users: []string{"*", "root"}},
		ReservePorts: []int{1883, 8883, 8083, 8084, 18083},
	}
}

// loadFile writes y to a profile file and loads it as --profile does, so
// that errors can name the file's positions.
func loadFile(t *testing.T, name, y string) (*profiles.Profile, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	must(t, os.WriteFile(f, []byte(y), 0o644))
	p, err := profiles.Load(f, nil)
	must(t, err)
	return p, f
}

// writeProcLimits writes PROC/pid/limits with the given nofile.
func writeProcLimits(t testing.TB, h *fakeHost, pid int, soft, hard uint64) {
	t.Helper()
	lim := fmt.Sprintf("Limit                     Soft Limit           Hard Limit           Units\nMax open files            %d                %d                files\n", soft, hard)
	must(t, os.MkdirAll(filepath.Join(h.proc, strconv.Itoa(pid)), 0o755))
	must(t, os.WriteFile(filepath.Join(h.proc, strconv.Itoa(pid), "limits"), []byte(lim), 0o644))
}
