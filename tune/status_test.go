package tune

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/journal"
)

// TestStatusAfterAKilledApplySaysInterrupted: an apply killed after its
// journal write but before every change (simulated by putting the journal
// and host where a kill -9 leaves them) is reported as interrupted, with
// what to run, not as drift of files never written; verify exits 1 with
// the same advice; rollback and a new apply both work from there.
func TestStatusAfterAKilledApplySaysInterrupted(t *testing.T) {
	h := newHost(t, nil)
	before := h.snapshot()
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	st, err := journal.Load(h.env.stateFile())
	must(t, err)
	if st.Interrupted() != nil {
		t.Fatal("a completed apply is marked in progress")
	}
	// Killed after the runtime keys but before the files: the last key and
	// every file are not written yet.
	st.Applies[len(st.Applies)-1].InProgress = true
	must(t, journal.Save(h.env.stateFile(), st))
	h.writeKey("net.ipv4.tcp_max_tw_buckets", stockSysctl["net.ipv4.tcp_max_tw_buckets"])
	for _, f := range []string{"etc/sysctl.d/60-hostprep.conf", "etc/security/limits.d/60-hostprep.conf"} {
		must(t, os.Remove(filepath.Join(h.root, f)))
	}

	s, err := StatusOf(h.env)
	must(t, err)
	if !strings.Contains(s.Interrupted, "apply of profile sys-tune interrupted") || !strings.Contains(s.Interrupted, "hostprep tune apply --profile sys-tune") || !strings.Contains(s.Interrupted, "hostprep tune rollback") {
		t.Errorf("interrupted = %q", s.Interrupted)
	}
	if s.Drift != 0 {
		t.Errorf("drift %d, want 0 (nothing drifted, the apply stopped)", s.Drift)
	}
	var buf strings.Builder
	must(t, s.WriteText(&buf))
	if strings.Contains(buf.String(), "removed since hostprep wrote it") || !strings.Contains(buf.String(), "INTERRUPTED:") || strings.Count(buf.String(), "PENDING") != 3 {
		t.Errorf("status text:\n%s", buf.String())
	}
	_, _, err = Verify(nil, h.env)
	wantCode(t, err, exitcode.Failed, "interrupted", "tune rollback")

	// Applying again finishes it.
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	if s, err := StatusOf(h.env); err != nil || s.Interrupted != "" || s.Drift != 0 {
		t.Fatalf("after a new apply: %+v %v", s, err)
	}
	h.rollback()
	h.assertUnchanged(before)
}

// TestStatusSaysWhyBootIsNotKnown: `tune status` run by a user who cannot
// read a unit file of the profile's (a 0600 unit file, status as nobody)
// left out the whole "after the next boot" table and said nothing, exit
// 0, as if there were nothing to judge; verify --boot failed with the
// read error. Now status says the boot values are not known and why, in
// text and as boot_error in JSON, and verify --boot and plan (every tune
// command) add to such an error that it needs root.
func TestStatusSaysWhyBootIsNotKnown(t *testing.T) {
	if _, err := exec.LookPath("setpriv"); err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and setpriv to run hostprep as nobody")
	}
	bin := testenv.Binary(t)
	img, env := newImage(t, map[string]string{"/lib/systemd/system/mosquitto.service": "[Service]\nExecStart=/bin/true\n"})
	p, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [mosquitto]\n  limit_nofile: {soft: 65536, hard: 65536}\n"))
	must(t, err)
	_, err = Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	// nobody may read the image and its journal, not the unit file;
	// the test's own temporary directories only (img is TMP/TestX/001/img),
	// never the system's TMP itself
	for d, i := img, 0; i < 3 && strings.HasPrefix(d, os.TempDir()+"/"); d, i = filepath.Dir(d), i+1 {
		must(t, os.Chmod(d, 0o755))
	}
	must(t, filepath.Walk(img, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			return os.Chmod(p, 0o755)
		}
		if err == nil && fi.Mode().IsRegular() {
			return os.Chmod(p, 0o644)
		}
		return err
	}))
	must(t, os.Chmod(filepath.Join(img, "lib/systemd/system/mosquitto.service"), 0o600))
	nobody := func(args ...string) (string, int) {
		out, _, code := testenv.Exec(t, exec.Command("setpriv", append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups", bin}, args...)...))
		return out, code
	}
	text, code := nobody("tune", "status", "--root", img)
	if code != 0 || !strings.Contains(text, "after the next boot: not known: ") || !strings.Contains(text, "mosquitto.service: permission denied") {
		t.Errorf("status as nobody (exit %d) does not say the boot values are not known and why:\n%s", code, text)
	}
	js, _ := nobody("tune", "status", "--root", img, "-o", "json")
	var doc struct {
		BootError string `json:"boot_error"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || !strings.Contains(doc.BootError, "permission denied") {
		t.Errorf("status -o json as nobody: boot_error %q (%v):\n%s", doc.BootError, err, js)
	}
	// verify --boot and plan fail on the same file; their errors said
	// "permission denied" and not the fix (status's says it).
	for _, args := range [][]string{{"tune", "verify", "--boot", "--root", img}, {"tune", "plan", "--profile", "mqtt-broker-1m", "--root", img}} {
		cmd := exec.Command("setpriv", append([]string{"--reuid", "65534", "--regid", "65534", "--clear-groups", bin}, args...)...)
		_, stderr, code := testenv.Exec(t, cmd)
		if code == 0 || !strings.Contains(stderr, "permission denied; run as root") {
			t.Errorf("%v as nobody: exit %d, want a failure that says to run as root:\n%s", args, code, stderr)
		}
	}
}
