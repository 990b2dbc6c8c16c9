package tune_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/sysctl"
)

// netns is the shared end-to-end sandbox (testenv.Sandbox): a throwaway
// mount+network namespace with tmpfs over every directory hostprep writes
// on a host. net.* writes land in the namespace; fs.* keys are global,
// which is why the tests check that rollback restores them and keep a
// safety net (guardGlobal).
type netns struct {
	*testenv.Sandbox
	t   *testing.T
	bin string
}

func newNetns(t *testing.T) *netns {
	t.Helper()
	s := testenv.NewSandbox(t)
	return &netns{Sandbox: s, t: t, bin: s.Bin}
}

// guardGlobal records the keys a network namespace does not isolate that
// the built-in profiles set (fs.nr_open, fs.file-max; the iotdb profile's
// vm.max_map_count and vm.swappiness, writable from inside the sandbox
// and global) and, should a test fail before rollback restored them, puts
// them back and reports it. (The global net.core and net.ipv4 keys are
// read-only or absent inside the namespace.)
func guardGlobal(t *testing.T) map[string]string {
	t.Helper()
	return testenv.GuardSysctls(t, "fs.nr_open", "fs.file-max", "vm.max_map_count", "vm.swappiness", "vm.dirty_background_ratio")
}

// veth makes the veth pair name/peer in the sandbox (with the link
// options opts, before the type), failing the test when it cannot.
func (n *netns) veth(name, peer string, opts ...string) {
	n.t.Helper()
	args := append(append([]string{"ip", "link", "add", name}, opts...), "type", "veth", "peer", "name", peer)
	if _, e, c := n.Run(args...); c != 0 {
		n.t.Fatalf("ip link add %s: %s", name, e)
	}
}

// holdLock makes a process in the sandbox hold /run/hostprep.lock (as a
// concurrent apply would), waits until it does, and returns a func that
// ends that process and waits until the lock is free again.
func (n *netns) holdLock() (release func()) {
	n.t.Helper()
	if _, e, c := n.Run("sh", "-c", "flock -o /run/hostprep.lock sh -c 'echo $$ > /run/lock-holder.pid; exec sleep 60' >/dev/null 2>&1 &"); c != 0 {
		n.t.Fatal(e)
	}
	free := func() bool { _, _, c := n.Run("flock", "-n", "/run/hostprep.lock", "true"); return c == 0 }
	testenv.WaitFor(n.t, 5*time.Second, "the lock holder", func() bool {
		_, _, c := n.Run("test", "-s", "/run/lock-holder.pid")
		return c == 0 && !free()
	})
	kill := func() { n.Run("sh", "-c", "kill $(cat /run/lock-holder.pid) 2>/dev/null") }
	n.t.Cleanup(kill) // a test that stops early leaves no holder behind
	return func() {
		kill()
		testenv.WaitFor(n.t, 5*time.Second, "the lock to be free", free)
	}
}

// sysctlAll is `sysctl -a` in the sandbox as key -> value, without the
// read-only keys (counters and state such as fs.file-nr or
// fs.dentry-state, which no writer sets and which change on their own)
// and without the keys whose value changed between two reads a moment
// apart (writable ones that move on their own, as kernel.ns_last_pid).
func (n *netns) sysctlAll() map[string]string {
	n.t.Helper()
	read := func() map[string]string {
		out, e, c := n.Run("sysctl", "-a")
		if c != 0 && out == "" {
			n.t.Fatalf("sysctl -a: %s", e)
		}
		m := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(l, " = "); ok && !readOnlySysctl(k) {
				m[k] = v
			}
		}
		return m
	}
	a := read()
	time.Sleep(200 * time.Millisecond)
	b := read()
	for k, v := range a {
		if b[k] != v {
			delete(a, k)
		}
	}
	if len(a) < 100 {
		n.t.Fatalf("sysctl -a gave %d stable keys", len(a))
	}
	return a
}

// readOnlySysctl reports whether key's /proc/sys file has no write bit.
func readOnlySysctl(key string) bool {
	p, err := sysctl.New("")
	return err == nil && p.Exists(key) && !p.Writable(key)
}

// writeProfile writes a profile file where the namespace can read it.
func writeProfile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type jsonResult struct {
	Changed bool `json:"changed"`
	Changes []struct {
		Key, File, Layer, From, To string
	} `json:"changes"`
	Skipped []struct {
		Key, Reason string
	} `json:"skipped"`
	Warnings []string `json:"warnings"`
	Left     []struct {
		Key, File string
	} `json:"left"`
}

func decode(t *testing.T, out string) jsonResult {
	t.Helper()
	var r jsonResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return r
}

// sysTuneKeys are the keys of the built-in sys-tune profile that exist in
// a network namespace (net.core.netdev_max_backlog is global and hidden).
var sysTuneKeys = []string{
	"fs.nr_open", "fs.file-max", "net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog",
	"net.ipv4.ip_local_port_range", "net.ipv4.ip_local_reserved_ports",
	"net.core.rmem_default", "net.core.wmem_default", "net.core.rmem_max", "net.core.wmem_max",
	"net.core.optmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_max_tw_buckets",
}

func TestE2EApplySysTuneTwiceThenRollback(t *testing.T) {
	orig := guardGlobal(t)
	n := newNetns(t)
	// Files the old script appended to, on the real filesystem: never touched.
	never := map[string]os.FileInfo{}
	for _, p := range []string{"/etc/sysctl.conf", "/etc/security/limits.conf"} {
		if st, err := os.Stat(p); err == nil {
			never[p] = st
		}
	}
	// A file already where hostprep writes: restored byte for byte.
	pre := "# written by the admin before hostprep\nvm.swappiness = 10\n"
	if _, e, c := n.Run("sh", "-c", "printf '%s' \"$1\" > /etc/sysctl.d/60-hostprep.conf", "sh", pre); c != 0 {
		t.Fatal(e)
	}
	before := map[string]string{}
	for _, k := range sysTuneKeys {
		before[k] = n.Sysctl(k)
	}
	all := n.sysctlAll()

	out, errOut, code := n.Hostprep("tune", "apply", "--profile", "sys-tune", "--output", "json")
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s\n%s", code, out, errOut)
	}
	r := decode(t, out)
	if !r.Changed {
		t.Fatalf("first apply: changed false\n%s", out)
	}
	// Global net.core keys are hidden (netdev_max_backlog) or read-only
	// (rmem_default, rmem_max, wmem_default, wmem_max) in a network
	// namespace: skipped with the reason, not an error.
	skipped := map[string]string{}
	for _, s := range r.Skipped {
		skipped[s.Key] = s.Reason
	}
	for _, k := range []string{"net.core.netdev_max_backlog", "net.core.rmem_default", "net.core.wmem_max"} {
		if !strings.Contains(skipped[k], "network namespace") {
			t.Errorf("%s not skipped as global in a network namespace: %q", k, skipped[k])
		}
	}
	// The script's port range and buffers are what this kernel takes of
	// them (field case tcp-rmem-below-this-kernels-floor: 6.18 refuses a
	// tcp_rmem field below 4096), asked in the test's own namespace.
	want := map[string]string{
		"fs.nr_open":                       "2097152",
		"net.core.somaxconn":               "32768",
		"net.ipv4.ip_local_port_range":     kernelTakes(t, "net.ipv4.ip_local_port_range", "1000 65535"),
		"net.ipv4.ip_local_reserved_ports": "1883,8083-8084,8883,18083",
		"net.ipv4.tcp_rmem":                kernelTakes(t, "net.ipv4.tcp_rmem", "1024 4096 16777216"),
		"net.ipv4.tcp_wmem":                kernelTakes(t, "net.ipv4.tcp_wmem", "1024 4096 16777216"),
		"net.ipv4.tcp_fin_timeout":         "15",
	}
	for k, v := range want {
		if got := n.Sysctl(k); got != v {
			t.Errorf("after apply %s = %q, want %q", k, got, v)
		}
	}
	conf, ok := n.ReadFile("/etc/sysctl.d/60-hostprep.conf")
	if !ok || !strings.Contains(conf, "net.core.somaxconn = 32768") || strings.Contains(conf, "admin") {
		t.Errorf("sysctl.d file:\n%s", conf)
	}
	limits, ok := n.ReadFile("/etc/security/limits.d/60-hostprep.conf")
	if !ok || !strings.Contains(limits, "root hard nofile 1048576") {
		t.Errorf("limits.d file:\n%s", limits)
	}
	_, mtime1, _ := n.Run("stat", "-c", "%Y.%y", "/etc/sysctl.d/60-hostprep.conf", "/etc/security/limits.d/60-hostprep.conf")

	// Second apply: nothing written.
	out, errOut, code = n.Hostprep("tune", "apply", "--profile", "sys-tune", "--output", "json")
	if code != 0 || decode(t, out).Changed {
		t.Fatalf("second apply: exit %d, want changed false\n%s\n%s", code, out, errOut)
	}
	if _, mtime2, _ := n.Run("stat", "-c", "%Y.%y", "/etc/sysctl.d/60-hostprep.conf", "/etc/security/limits.d/60-hostprep.conf"); mtime1 != mtime2 {
		t.Errorf("second apply changed mtimes: %s -> %s", mtime1, mtime2)
	}
	if out, _, code := n.Hostprep("tune", "verify", "--profile", "sys-tune"); code != 0 {
		t.Errorf("verify after apply: exit %d\n%s", code, out)
	}
	if out, _, code := n.Hostprep("tune", "status"); code != 0 || !strings.Contains(out, "sys-tune") || !strings.Contains(out, "AT BOOT") || !strings.Contains(out, "32768 (/etc/sysctl.d/60-hostprep.conf:") {
		t.Errorf("status (live and boot values): exit %d\n%s", code, out)
	}
	// At boot the host gets what hostprep applied ...
	if out, errOut, code := n.Hostprep("tune", "verify", "--boot"); code != 0 {
		t.Errorf("verify --boot after apply: exit %d\n%s%s", code, out, errOut)
	}
	// ... until a local file that sorts later lowers somaxconn.
	if _, e, c := n.Run("sh", "-c", "echo 'net.core.somaxconn = 1024' > /etc/sysctl.d/99-zz-local.conf"); c != 0 {
		t.Fatal(e)
	}
	out, errOut, code = n.Hostprep("tune", "verify", "--boot")
	if code != 1 || !strings.Contains(errOut, "/etc/sysctl.d/99-zz-local.conf:1 sets 1024") || !strings.Contains(out, "DIFFERS") {
		t.Errorf("verify --boot with a later file: exit %d, want 1 naming /etc/sysctl.d/99-zz-local.conf:1\n%s%s", code, out, errOut)
	}
	if _, e, c := n.Run("rm", "/etc/sysctl.d/99-zz-local.conf"); c != 0 {
		t.Fatal(e)
	}

	// Rollback: every value and file back exactly.
	out, errOut, code = n.Hostprep("tune", "rollback", "--output", "json")
	if code != 0 {
		t.Fatalf("rollback: exit %d\n%s\n%s", code, out, errOut)
	}
	if rr := decode(t, out); !rr.Changed || len(rr.Left) != 0 {
		t.Errorf("rollback result %+v", rr)
	}
	for _, k := range sysTuneKeys {
		if got := n.Sysctl(k); got != before[k] {
			t.Errorf("after rollback %s = %q, want the original %q", k, got, before[k])
		}
	}
	// And the whole of `sysctl -a`, as the sandbox sees it, is as before
	// (keys that change on their own, counters, are left out by sysctlAll).
	after := n.sysctlAll()
	for k, v := range all {
		if w, ok := after[k]; ok && w != v {
			t.Errorf("sysctl -a after rollback: %s = %q, want %q", k, w, v)
		}
	}
	for k, v := range orig { // the global keys, read from the host side
		b, _ := os.ReadFile(sysctlkey.File("/proc/sys", k))
		if strings.TrimSpace(string(b)) != v {
			t.Errorf("global %s = %s after rollback, want %s", k, strings.TrimSpace(string(b)), v)
		}
	}
	if got, _ := n.ReadFile("/etc/sysctl.d/60-hostprep.conf"); got != pre {
		t.Errorf("pre-existing file not restored byte for byte: %q", got)
	}
	for _, p := range []string{"/etc/security/limits.d/60-hostprep.conf", "/var/lib/hostprep/state.json", "/var/lib/hostprep"} {
		if _, ok := n.ReadFile(p); ok {
			t.Errorf("%s still exists after rollback", p)
		}
		if _, _, c := n.Run("test", "-e", p); c == 0 {
			t.Errorf("%s still exists after rollback", p)
		}
	}
	// Nothing applied now: rollback is a no-op.
	if out, _, code := n.Hostprep("tune", "rollback"); code != 0 || !strings.Contains(out, "nothing applied") {
		t.Errorf("second rollback: exit %d\n%s", code, out)
	}
	for p, st := range never {
		st2, err := os.Stat(p)
		if err != nil || !st2.ModTime().Equal(st.ModTime()) || st2.Size() != st.Size() {
			t.Errorf("%s was touched", p)
		}
	}
}

func TestE2EKernelRefusalUndoesTheRun(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	// The port range below this namespace's ip_unprivileged_port_start:
	// the kernel refuses it in the trial (which copies the namespace's own
	// start), and hostprep stops before writing anything (exit 2), naming
	// the low end the kernel accepts.
	if _, e, c := n.Run("sh", "-c", "echo 2000 > /proc/sys/net/ipv4/ip_unprivileged_port_start"); c != 0 {
		t.Fatal(e)
	}
	bad := writeProfile(t, "script.yaml", "sysctl:\n  net.core.somaxconn: \"8192\"\n  net.ipv4.ip_local_port_range: \"1500 65535\"\n")
	_, errOut, code := n.Hostprep("tune", "apply", "--profile", bad)
	if code != 2 || !strings.Contains(errOut, "scratch network namespace") || !strings.Contains(errOut, `"2000 65535"`) {
		t.Fatalf("exit %d, want 2 naming the trial and suggesting 2000 65535:\n%s", code, errOut)
	}
	if got := n.Sysctl("net.core.somaxconn"); got != "4096" {
		t.Fatalf("somaxconn %s after a refused profile", got)
	}
	if _, e, c := n.Run("sh", "-c", "echo 1024 > /proc/sys/net/ipv4/ip_unprivileged_port_start"); c != 0 {
		t.Fatal(e)
	}

	// A malformed profile (misspelled field): exit 2 with file:line:col,
	// nothing touched.
	typo := writeProfile(t, "typo.yaml", "sysctl:\n  net.core.somaxconn: {valeu: \"8192\"}\n")
	_, errOut, code = n.Hostprep("tune", "apply", "--profile", typo)
	if code != 2 || !strings.Contains(errOut, "typo.yaml:2:") {
		t.Fatalf("malformed profile: exit %d, want 2 with file:line:col\n%s", code, errOut)
	}
	if got := n.Sysctl("net.core.somaxconn"); got != "4096" {
		t.Fatalf("somaxconn %s after a malformed profile", got)
	}
	if _, _, c := n.Run("test", "-e", "/var/lib/hostprep"); c == 0 {
		t.Fatal("journal directory created for a malformed profile")
	}

	// A value refused mid-run: a global key, which no trial can try, that
	// hostprep's table does not know and every kernel refuses
	// (vm.dirty_background_ratio is a percentage, 0..100, EINVAL above).
	// The keys written before it (fs.nr_open, net.core.somaxconn) must be
	// undone.
	nrOpen := n.Sysctl("fs.nr_open")
	syn := writeProfile(t, "syn.yaml", `sysctl:
  fs.nr_open: {value: "2097152", mode: at-least}
  net.core.somaxconn: "8192"
  vm.dirty_background_ratio: "101"
`)
	out, errOut, code := n.Hostprep("tune", "apply", "--profile", syn)
	if code != 3 || !strings.Contains(errOut, "vm.dirty_background_ratio") || !strings.Contains(errOut, "EINVAL") || !strings.Contains(errOut, "undone") {
		t.Fatalf("exit %d, want 3 naming the key and EINVAL:\n%s\n%s", code, out, errOut)
	}
	if got := n.Sysctl("net.core.somaxconn"); got != "4096" {
		t.Errorf("somaxconn %s, want 4096 (undone)", got)
	}
	if got := n.Sysctl("fs.nr_open"); got != nrOpen {
		t.Errorf("fs.nr_open %s, want %s (undone)", got, nrOpen)
	}
	if _, _, c := n.Run("test", "-e", "/var/lib/hostprep/state.json"); c == 0 {
		t.Error("journal left after an undone first apply")
	}
	if _, _, c := n.Run("test", "-e", "/etc/sysctl.d/60-hostprep.conf"); c == 0 {
		t.Error("sysctl.d file written although the run failed")
	}
}

func TestE2EContainerAndPrivileges(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	// Without root: exit 3, one line, nothing changed.
	nobody := n.unprivileged()
	out, errOut, code := n.Run(append(nobody, "tune", "apply", "--profile", "sys-tune")...)
	if code != 3 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "needs root") {
		t.Fatalf("unprivileged apply: exit %d, want 3 and one line:\n%s%s", code, out, errOut)
	}
	// tune plan works without root.
	if out, errOut, code := n.Run(append(nobody, "tune", "plan", "--profile", "sys-tune")...); code != 0 || !strings.Contains(out, "fs.nr_open") {
		t.Fatalf("unprivileged plan: exit %d\n%s%s", code, out, errOut)
	}
	if got := n.Sysctl("net.core.somaxconn"); got != "4096" {
		t.Fatalf("somaxconn changed to %s", got)
	}

	// Lock held by someone else: exit 3 naming the lock.
	release := n.holdLock()
	start := time.Now()
	_, errOut, code = n.Hostprep("tune", "apply", "--profile", "sys-tune", "--lock-wait", "500ms")
	if code != 3 || !strings.Contains(errOut, "another hostprep apply/rollback holds /run/hostprep.lock") {
		t.Fatalf("lock held: exit %d\n%s", code, errOut)
	}
	if time.Since(start) < 400*time.Millisecond {
		t.Errorf("did not wait for the lock")
	}
	release()

	// Read-only /proc/sys, as in a container.
	if _, e, c := n.Run("sh", "-c", "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys"); c != 0 {
		t.Fatal(e)
	}
	_, errOut, code = n.Hostprep("tune", "apply", "--profile", "sys-tune")
	if code != 3 || !strings.Contains(errOut, "looks like a container") || !strings.Contains(errOut, "--sysctl net.core.somaxconn=32768") || !strings.Contains(errOut, "fs.nr_open") {
		t.Fatalf("read-only /proc/sys: exit %d\n%s", code, errOut)
	}
	if _, _, c := n.Run("test", "-e", "/var/lib/hostprep/state.json"); c == 0 {
		t.Error("journal written in a container")
	}
}

func TestE2EApplyTwoProfilesThenRollback(t *testing.T) {
	orig := guardGlobal(t)
	n := newNetns(t)
	before := map[string]string{}
	keys := append([]string{"net.ipv4.tcp_tw_reuse"}, sysTuneKeys...)
	for _, k := range keys {
		before[k] = n.Sysctl(k)
	}
	if _, e, c := n.Hostprep("tune", "apply", "--profile", "sys-tune"); c != 0 {
		t.Fatalf("apply A: %s", e)
	}
	b := writeProfile(t, "broker.yaml", `description: test profile B
sysctl:
  net.core.somaxconn: "65535"
  net.ipv4.tcp_tw_reuse: "1"
limits:
  nofile: {soft: 65536, hard: 1048576}
systemd:
  default_limit_nofile: {soft: 65536, hard: 1048576}
  services: [emqx]
`)
	// The sandbox has no emqx unit: nothing to restart (systemctl would
	// say "Unit not found"), and a warning that the limits reach no
	// service until it is installed.
	out, e, c := n.Hostprep("tune", "apply", "--profile", b)
	if c != 0 || strings.Contains(out, "restart to pick up") || !strings.Contains(out+e, "no unit hostprep tuned is installed on this host (emqx.service") {
		t.Fatalf("apply B: exit %d\n%s\n%s", c, out, e)
	}
	if got := n.Sysctl("net.core.somaxconn"); got != "65535" {
		t.Errorf("somaxconn %s after B", got)
	}
	if s, ok := n.ReadFile("/etc/systemd/system/emqx.service.d/60-hostprep.conf"); !ok || !strings.Contains(s, "LimitNOFILE=65536:1048576") {
		t.Errorf("drop-in: %q", s)
	}
	if s, ok := n.ReadFile("/etc/systemd/system.conf.d/60-hostprep.conf"); !ok || !strings.Contains(s, "DefaultLimitNOFILE=65536:1048576") {
		t.Errorf("system.conf.d: %q", s)
	}
	if out, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s\n%s", c, out, e)
	}
	for _, k := range keys {
		if got := n.Sysctl(k); got != before[k] {
			t.Errorf("after rollback %s = %q, want %q", k, got, before[k])
		}
	}
	for _, p := range []string{"/etc/systemd/system", "/etc/systemd/system.conf.d", "/etc/security/limits.d/60-hostprep.conf", "/etc/sysctl.d/60-hostprep.conf", "/var/lib/hostprep"} {
		if _, _, c := n.Run("test", "-e", p); c == 0 {
			t.Errorf("%s left after rollback", p)
		}
	}
	for k, v := range orig {
		b, _ := os.ReadFile(sysctlkey.File("/proc/sys", k))
		if strings.TrimSpace(string(b)) != v {
			t.Errorf("global %s = %s after rollback, want %s", k, strings.TrimSpace(string(b)), v)
		}
	}
}

// TestE2EFileWriteFailureUndoesTheRun makes each owned directory in turn a
// read-only mount, so the kernel refuses that file's write (EROFS) after
// the runtime keys and earlier files were written: everything is undone.
func TestE2EFileWriteFailureUndoesTheRun(t *testing.T) {
	orig := guardGlobal(t)
	n := newNetns(t)
	prof := writeProfile(t, "files.yaml", `sysctl:
  fs.nr_open: {value: "2097152", mode: at-least}
  net.core.somaxconn: "8192"
limits:
  nofile: {soft: 65536, hard: 2097152}
systemd:
  services: [emqx]
`)
	keys := []string{"fs.nr_open", "net.core.somaxconn"}
	before := map[string]string{}
	for _, k := range keys {
		before[k] = n.Sysctl(k)
	}
	for _, dir := range []string{"/etc/sysctl.d", "/etc/security/limits.d", "/etc/systemd"} {
		if _, e, c := n.Run("mount", "-o", "remount,ro", dir); c != 0 {
			t.Fatal(e)
		}
		_, errOut, code := n.Hostprep("tune", "apply", "--profile", prof)
		if code != 3 || !strings.Contains(errOut, dir) || !strings.Contains(errOut, "undone") {
			t.Errorf("%s read-only: exit %d, want 3 naming it\n%s", dir, code, errOut)
		}
		for _, k := range keys {
			if got := n.Sysctl(k); got != before[k] {
				t.Errorf("%s read-only: %s = %s after the failed run, want %s", dir, k, got, before[k])
			}
		}
		for _, p := range []string{"/etc/sysctl.d/60-hostprep.conf", "/etc/security/limits.d/60-hostprep.conf", "/etc/systemd/system", "/var/lib/hostprep"} {
			if _, _, c := n.Run("test", "-e", p); c == 0 {
				t.Errorf("%s read-only: %s left behind", dir, p)
			}
		}
		if _, e, c := n.Run("mount", "-o", "remount,rw", dir); c != 0 {
			t.Fatal(e)
		}
	}
	b, _ := os.ReadFile("/proc/sys/fs/nr_open")
	if strings.TrimSpace(string(b)) != orig["fs.nr_open"] {
		t.Errorf("global fs.nr_open = %s, want %s", strings.TrimSpace(string(b)), orig["fs.nr_open"])
	}
}

// capacity runs `hostprep preflight --profile P -o json` in the sandbox and
// returns each capacity limit (sockets) by check name.
func (n *netns) capacity(profile string) map[string]int64 {
	n.t.Helper()
	args := []string{"preflight", "--profile", profile, "-o", "json"}
	if p, err := profiles.Load(profile, nil); err != nil {
		n.t.Fatal(err)
	} else if p.Preflight == nil { // no preflight section: a broker target
		args = []string{"preflight", "--sockets", "10000", "--role", "broker", "-o", "json"}
	}
	out, errOut, _ := n.Hostprep(args...)
	var r struct {
		Capacity struct {
			Sockets int64 `json:"sockets"`
			Limits  []struct {
				Check   string `json:"check"`
				Sockets int64  `json:"sockets"`
			} `json:"limits"`
		} `json:"capacity"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Capacity.Limits) == 0 {
		n.t.Fatalf("preflight --profile %s: %v\n%s%s", profile, err, out, errOut)
	}
	m := map[string]int64{}
	for _, l := range r.Capacity.Limits {
		m[l.Check] = l.Sockets
	}
	return m
}

// TestE2ECapacityNeverLowered: for every built-in profile, the socket
// capacity preflight reports after `tune apply` is not lower than before,
// limit by limit (the field case apply-never-lowers-capacity). Free file
// handles, memory and free tasks (iotdb.threads counts the threads already
// running) move with the rest of the machine, so those three get 2% of
// slack; the fd, port and conntrack limits none.
func TestE2ECapacityNeverLowered(t *testing.T) {
	guardGlobal(t)
	names := profiles.BuiltinNames()
	if len(names) < 5 {
		t.Fatalf("built-ins: %v", names)
	}
	for _, profile := range names {
		t.Run(profile, func(t *testing.T) {
			n := newNetns(t)
			before := n.capacity(profile)
			out, errOut, code := n.Hostprep("tune", "apply", "--profile", profile)
			if code != 0 {
				t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
			}
			after := n.capacity(profile)
			if _, errOut, code := n.Hostprep("tune", "rollback"); code != 0 {
				t.Fatalf("rollback: %s", errOut)
			}
			t.Logf("%s: capacity by limit before %v, after %v", profile, before, after)
			for check, b := range before {
				a, ok := after[check]
				slack := int64(0)
				if check == "fd.file_max" || check == "mem.available" || check == "iotdb.threads" {
					slack = b / 50
				}
				if !ok || a < b-slack {
					t.Errorf("%s: capacity limit %s went from %d to %d sockets after apply", profile, check, b, a)
				}
			}
		})
	}
}

// unprivileged copies the binary where nobody can run it and returns the
// argv prefix that runs it as nobody without capabilities.
func (n *netns) unprivileged() []string {
	n.t.Helper()
	dir := n.t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		n.t.Fatal(err)
	}
	bin := filepath.Join(dir, "hostprep")
	b, err := os.ReadFile(n.bin)
	if err != nil {
		n.t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		n.t.Fatal(err)
	}
	return []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", bin}
}
