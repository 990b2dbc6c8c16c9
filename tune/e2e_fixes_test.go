package tune_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestE2ELockWaitFlag: a negative --lock-wait is bad input (exit 2,
// nothing touched); --lock-wait 0 fails at once when the lock is held.
func TestE2ELockWaitFlag(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	for _, verb := range [][]string{{"apply", "--profile", "sys-tune"}, {"rollback"}} {
		args := append([]string{"tune"}, verb...)
		_, errOut, code := n.Hostprep(append(args, "--lock-wait", "-1s")...)
		if code != 2 || !strings.Contains(errOut, "--lock-wait -1s") {
			t.Fatalf("%v --lock-wait -1s: exit %d, want 2\n%s", verb, code, errOut)
		}
	}
	if _, _, c := n.Run("test", "-e", "/var/lib/hostprep/state.json"); c == 0 {
		t.Fatal("journal written although --lock-wait was refused")
	}
	release := n.holdLock()
	start := time.Now()
	_, errOut, code := n.Hostprep("tune", "apply", "--profile", "sys-tune", "--lock-wait", "0")
	took := time.Since(start)
	if code != 3 || !strings.Contains(errOut, "holds /run/hostprep.lock") {
		t.Fatalf("--lock-wait 0 with the lock held: exit %d\n%s", code, errOut)
	}
	if took > time.Second {
		t.Errorf("--lock-wait 0 waited %s, want an immediate failure", took)
	}
	release()
}

// TestE2EImageModeNeedsNoRoot: `tune apply --root DIR` as an unprivileged
// user with a writable DIR succeeds and touches no host lock; rollback
// empties the tree again.
func TestE2EImageModeNeedsNoRoot(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	img := filepath.Join(dir, "image")
	if err := os.Mkdir(img, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(img, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	nobody := n.unprivileged()
	out, errOut, code := n.Run(append(nobody, "tune", "apply", "--profile", "sys-tune", "--root", img)...)
	if code != 0 {
		t.Fatalf("unprivileged image apply: exit %d\n%s%s", code, out, errOut)
	}
	if _, ok := n.ReadFile(filepath.Join(img, "etc/sysctl.d/60-hostprep.conf")); !ok {
		t.Fatal("image apply wrote no sysctl.d file")
	}
	if _, _, c := n.Run("test", "-e", "/run/hostprep.lock"); c == 0 {
		t.Error("image apply created the host's /run/hostprep.lock")
	}
	out, errOut, code = n.Run(append(nobody, "tune", "rollback", "--root", img)...)
	if code != 0 {
		t.Fatalf("unprivileged image rollback: exit %d\n%s%s", code, out, errOut)
	}
	if ents, _ := os.ReadDir(img); len(ents) != 0 {
		t.Errorf("image tree not empty after rollback: %v", ents)
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

type jsonError struct {
	Changed  *bool  `json:"changed"`
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

// TestE2EStatusVerifyChangedFieldAndRootHint: status and verify JSON
// carry "changed": false; as non-root they say to run as root.
func TestE2EStatusVerifyChangedFieldAndRootHint(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	nobody := n.unprivileged()
	if _, e, c := n.Hostprep("tune", "apply", "--profile", "sys-tune"); c != 0 {
		t.Fatalf("apply: exit %d\n%s", c, e)
	}
	t.Cleanup(func() { n.Hostprep("tune", "rollback") })
	for _, verb := range []string{"status", "verify"} {
		out, errOut, code := n.Hostprep("tune", verb, "-o", "json")
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil || code != 0 {
			t.Fatalf("%s -o json: exit %d %v\n%s%s", verb, code, err, out, errOut)
		}
		if c, ok := m["changed"]; !ok || c != false {
			t.Errorf("%s -o json: changed = %v (present %v), want false", verb, c, ok)
		}
		out, errOut, code = n.Run(append(nobody, "tune", verb)...)
		if code != 3 || !strings.Contains(errOut, "run as root (the journal is 0600") {
			t.Errorf("unprivileged %s: exit %d, want 3 and a hint to run as root:\n%s%s", verb, code, out, errOut)
		}
	}
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s", c, e)
	}
}

// TestE2EJSONOnErrors: with -o json a failing tune command still prints
// one JSON object on stdout, with "changed", "error" and "exit_code", and
// the one-line error on stderr.
func TestE2EJSONOnErrors(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	nobody := n.unprivileged()

	out, errOut, code := n.Run(append(nobody, "tune", "apply", "--profile", "sys-tune", "-o", "json")...)
	var je jsonError
	if err := json.Unmarshal([]byte(out), &je); err != nil || code != 3 || je.ExitCode != 3 || je.Changed == nil || *je.Changed || !strings.Contains(je.Error, "needs root") {
		t.Fatalf("unprivileged apply -o json: exit %d, stdout %q (%v)", code, out, err)
	}
	if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "needs root") {
		t.Errorf("stderr is not the one-line error: %q", errOut)
	}
	out, _, code = n.Hostprep("tune", "plan", "--profile", "no-such-profile", "-o", "json")
	je = jsonError{}
	if err := json.Unmarshal([]byte(out), &je); err != nil || code != 2 || je.ExitCode != 2 || je.Error == "" {
		t.Errorf("plan with a bad profile -o json: exit %d, stdout %q", code, out)
	}

	if _, e, c := n.Hostprep("tune", "apply", "--profile", "sys-tune"); c != 0 {
		t.Fatalf("apply: exit %d\n%s", c, e)
	}
	t.Cleanup(func() { n.Hostprep("tune", "rollback") })
	for _, verb := range []string{"status", "verify"} {
		out, _, code = n.Run(append(nobody, "tune", verb, "-o", "json")...)
		je = jsonError{}
		if err := json.Unmarshal([]byte(out), &je); err != nil || code != 3 || je.ExitCode != 3 || je.Error == "" {
			t.Errorf("unprivileged %s -o json: exit %d, stdout %q", verb, code, out)
		}
	}
	// A drifted verify: exit 1, and the JSON says so too.
	if _, e, c := n.Run("sysctl", "-qw", "net.core.somaxconn=100"); c != 0 {
		t.Fatal(e)
	}
	out, _, code = n.Hostprep("tune", "verify", "-o", "json")
	je = jsonError{}
	if err := json.Unmarshal([]byte(out), &je); err != nil || code != 1 || je.ExitCode != 1 || !strings.Contains(je.Error, "drifted") {
		t.Errorf("drifted verify -o json: exit %d, stdout %q", code, out)
	}
	n.Run("sysctl", "-qw", "net.core.somaxconn=32768")
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s", c, e)
	}
}

// TestE2ERollbackKeepsNrOpenForAHandEditedLimitsFile is the tester's
// case: apply mqtt-broker-1m, hand-edit the limits file, rollback: fs.nr_open
// stays at 2097152 (the file's hard nofile) and the JSON says why; after
// removing the file a second rollback restores it.
func TestE2ERollbackKeepsNrOpenForAHandEditedLimitsFile(t *testing.T) {
	orig := guardGlobal(t)
	n := newNetns(t)
	if _, e, c := n.Hostprep("tune", "apply", "--profile", "mqtt-broker-1m"); c != 0 {
		t.Fatalf("apply: exit %d\n%s", c, e)
	}
	t.Cleanup(func() {
		n.Run("rm", "-f", "/etc/security/limits.d/60-hostprep.conf")
		n.Hostprep("tune", "rollback")
	})
	if n.Sysctl("fs.nr_open") != "2097152" {
		t.Skipf("mqtt-broker-1m did not raise fs.nr_open to 2097152 here (now %s)", n.Sysctl("fs.nr_open"))
	}
	if _, e, c := n.Run("sh", "-c", "echo '# hand edit' >> /etc/security/limits.d/60-hostprep.conf"); c != 0 {
		t.Fatal(e)
	}
	out, errOut, code := n.Hostprep("tune", "rollback", "-o", "json")
	var r struct {
		Kept []struct {
			Key, File, Current, Reason string
		} `json:"kept"`
		JournalKept bool `json:"journal_kept"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("rollback: exit %d %v\n%s%s", code, err, out, errOut)
	}
	if got := n.Sysctl("fs.nr_open"); got != "2097152" {
		t.Fatalf("fs.nr_open lowered to %s under a limits file with hard nofile 2097152", got)
	}
	// Both the live fs.nr_open and hostprep's sysctl.d file, which sets
	// it at boot, are kept.
	kept := map[string]string{}
	for _, k := range r.Kept {
		kept[k.Key+k.File] = k.Reason
	}
	for _, what := range []string{"fs.nr_open", "/etc/sysctl.d/60-hostprep.conf"} {
		if !strings.Contains(kept[what], "kept because /etc/security/limits.d/60-hostprep.conf") || !r.JournalKept {
			t.Errorf("rollback JSON does not report %s kept: %s", what, out)
		}
	}
	n.Run("rm", "/etc/security/limits.d/60-hostprep.conf")
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("second rollback: exit %d\n%s", c, e)
	}
	if got := n.Sysctl("fs.nr_open"); got != orig["fs.nr_open"] {
		t.Errorf("fs.nr_open = %s after the second rollback, want %s", got, orig["fs.nr_open"])
	}
	if _, _, c := n.Run("test", "-e", "/var/lib/hostprep/state.json"); c == 0 {
		t.Error("journal left after the second rollback")
	}
}

// TestE2EPidAboveTheHardLimitIsRefusedUpFront is the tester's case: a
// sleep at nofile 1024:4096 and `apply --profile ready-small --pid PID`
// (nofile 16384) without CAP_SYS_RESOURCE: exit 3 before any change,
// naming the ceiling 4096; nothing written, the process untouched.
func TestE2EPidAboveTheHardLimitIsRefusedUpFront(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	out, e, c := n.Run("sh", "-c", "prlimit --nofile=1024:4096 sleep 60 >/dev/null 2>&1 & echo $!")
	if c != 0 {
		t.Fatal(e)
	}
	pid := strings.TrimSpace(out)
	t.Cleanup(func() { n.Run("kill", pid) })
	testenv.WaitFor(t, 5*time.Second, "sleep to run under nofile 1024:4096", func() bool {
		out, _, _ := n.Run("cat", "/proc/"+pid+"/limits")
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) >= 5 && f[1] == "open" && f[3] == "1024" && f[4] == "4096" {
				return true
			}
		}
		return false
	})
	if hasCapSysResource(t) {
		t.Skip("this process has CAP_SYS_RESOURCE; the refusal needs a host without it")
	}
	somax := n.Sysctl("net.core.somaxconn")
	_, errOut, code := n.Hostprep("tune", "apply", "--profile", "ready-small", "--pid", pid)
	if code != 3 || !strings.Contains(errOut, "ceiling for this process is 4096") || !strings.Contains(errOut, "nothing was changed") {
		t.Fatalf("apply --pid above the hard limit: exit %d, want 3 naming the ceiling 4096\n%s", code, errOut)
	}
	if got := n.Sysctl("net.core.somaxconn"); got != somax {
		t.Errorf("somaxconn changed %s -> %s by a refused apply", somax, got)
	}
	for _, p := range []string{"/var/lib/hostprep/state.json", "/etc/security/limits.d/60-hostprep.conf", "/etc/sysctl.d/60-hostprep.conf"} {
		if _, _, c := n.Run("test", "-e", p); c == 0 {
			t.Errorf("%s written by a refused apply", p)
		}
	}
	lim, _, _ := n.Run("prlimit", "--nofile", "--pid", pid, "--noheadings", "--raw", "--output", "SOFT,HARD")
	if f := strings.Fields(lim); len(f) != 2 || f[0] != "1024" || f[1] != "4096" {
		t.Errorf("process limit now %q, want 1024 4096", lim)
	}
}

func hasCapSysResource(t *testing.T) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<24) != 0
		}
	}
	return false
}

// TestE2EKilledApplyIsReportedInterrupted kills an apply with SIGKILL
// (strace signal injection) at the rename of its first owned file,
// /etc/sysctl.d/60-hostprep.conf, after the journal and the runtime keys
// were written: status and verify
// say the apply was interrupted and what to run, not "removed since
// hostprep wrote it"; rollback then restores everything.
func TestE2EKilledApplyIsReportedInterrupted(t *testing.T) {
	orig := guardGlobal(t)
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace not installed")
	}
	n := newNetns(t)
	somax := n.Sysctl("net.core.somaxconn")
	_, errOut, code := n.Run("strace", "-f", "-qq", "-o", "/dev/null", "-P", "/etc/sysctl.d/60-hostprep.conf", "-e", "trace=rename,renameat,renameat2",
		"-e", "inject=rename,renameat,renameat2:error=EIO:signal=SIGKILL:when=1", n.bin, "tune", "apply", "--profile", "sys-tune")
	if code == 0 {
		t.Fatalf("apply was not killed:\n%s", errOut)
	}
	t.Cleanup(func() { n.Hostprep("tune", "rollback") })
	if _, ok := n.ReadFile("/etc/sysctl.d/60-hostprep.conf"); ok {
		t.Fatal("the first owned file was written although the kill came at its rename")
	}
	out, errOut, code := n.Hostprep("tune", "status")
	if code != 0 || !strings.Contains(out, "INTERRUPTED: apply of profile sys-tune interrupted") || strings.Contains(out, "removed since hostprep wrote it") || !strings.Contains(out, "hostprep tune rollback") {
		t.Errorf("status after a killed apply: exit %d\n%s%s", code, out, errOut)
	}
	_, errOut, code = n.Hostprep("tune", "verify")
	if code != 1 || !strings.Contains(errOut, "interrupted") {
		t.Errorf("verify after a killed apply: exit %d\n%s", code, errOut)
	}
	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s", c, e)
	}
	if got := n.Sysctl("fs.nr_open"); got != orig["fs.nr_open"] {
		t.Errorf("fs.nr_open = %s after rollback, want %s", got, orig["fs.nr_open"])
	}
	if got := n.Sysctl("net.core.somaxconn"); got != somax {
		t.Errorf("somaxconn = %s after rollback, want %s", got, somax)
	}
}

// TestE2EImageConntrackWritesModulesLoad: `tune apply --root DIR` of a
// profile with nf_conntrack_max writes the modules-load.d file next to the
// sysctl.d line, `tune verify --boot --root DIR` passes, and rollback
// removes both.
func TestE2EImageConntrackWritesModulesLoad(t *testing.T) {
	dir := t.TempDir()
	prof := writeProfile(t, "conntrack.yaml", "description: conntrack\nsysctl:\n  net.netfilter.nf_conntrack_max: {value: \"2097152\", mode: at-least, optional: true}\n")
	if out, errOut, code := testenv.Run(t, nil, "tune", "apply", "--profile", prof, "--root", dir); code != 0 {
		t.Fatalf("apply --root: exit %d\n%s%s", code, out, errOut)
	}
	mods, err := os.ReadFile(filepath.Join(dir, "etc/modules-load.d/60-hostprep.conf"))
	if err != nil || !strings.Contains(string(mods), "\nnf_conntrack\n") {
		t.Fatalf("modules-load.d: %q %v", mods, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "etc/sysctl.d/60-hostprep.conf")); !strings.Contains(string(b), "net.netfilter.nf_conntrack_max = 2097152") {
		t.Errorf("sysctl.d:\n%s", b)
	}
	if out, errOut, code := testenv.Run(t, nil, "tune", "verify", "--boot", "--root", dir); code != 0 {
		t.Errorf("verify --boot --root: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := testenv.Run(t, nil, "tune", "rollback", "--root", dir); code != 0 {
		t.Fatalf("rollback: %s", errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "etc/modules-load.d/60-hostprep.conf")); err == nil {
		t.Error("rollback left the modules-load.d file")
	}
}

// TestE2EImageRootRelativeAndLinksOut: a relative --root is the same image
// for every later command, run from anywhere (field case: the journal kept
// cwd-relative paths, and status, verify, rollback and apply then all
// refused it as damaged, leaving the image half-changed); and an image
// whose limits.d is an absolute link out of it is refused before anything
// is written (field case: apply wrote into the build host's /tmp/X, which
// could as well have been its /etc).
func TestE2EImageRootRelativeAndLinksOut(t *testing.T) {
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "img")
	must(os.MkdirAll(filepath.Join(img, "etc/security/limits.d"), 0o755))
	run := func(wd string, args ...string) (string, string, int) {
		cmd := exec.Command(testenv.Binary(t), args...)
		cmd.Dir = wd
		return testenv.Exec(t, cmd)
	}
	if out, errOut, code := run(dir, "tune", "apply", "--profile", "sys-tune", "--root", "img"); code != 0 {
		t.Fatalf("apply --root img (relative): exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := run("/", "tune", "status", "--root", img); code != 0 {
		t.Fatalf("status --root %s after a relative apply: exit %d\n%s%s", img, code, out, errOut)
	}
	if _, errOut, code := run(filepath.Join(img, "etc"), "tune", "rollback", "--root", ".."); code != 0 {
		t.Fatalf("rollback --root .. from the image's etc: %s", errOut)
	}
	if b, err := os.ReadDir(filepath.Join(img, "etc/security/limits.d")); err != nil || len(b) != 0 {
		t.Errorf("limits.d after rollback: %v %v", b, err)
	}

	out := filepath.Join(dir, "outside")
	must(os.Mkdir(out, 0o755))
	must(os.RemoveAll(filepath.Join(img, "etc/security/limits.d")))
	must(os.Symlink(out, filepath.Join(img, "etc/security/limits.d")))
	_, errOut, code := run(dir, "tune", "apply", "--profile", "sys-tune", "--root", img)
	if code != 2 || !strings.Contains(errOut, "leads out of the image") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("apply through a link out of the image: exit %d, %q; want 2 and one line", code, errOut)
	}
	if b, _ := os.ReadDir(out); len(b) != 0 {
		t.Errorf("apply wrote outside the image: %v", b)
	}
	if _, err := os.Stat(filepath.Join(img, "etc/sysctl.d/60-hostprep.conf")); err == nil {
		t.Error("apply wrote part of the image before refusing")
	}
}
