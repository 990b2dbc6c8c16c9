package tune_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

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
