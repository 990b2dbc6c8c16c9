package tune

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
	"github.com/hostprep/hostprep/tune/lock"
)

// TestImageModeLocksTheImageTree: with --root DIR and no --lock, apply and
// rollback flock DIR itself (not the host's /run/hostprep.lock), and
// leave no lock file in the image.
func TestImageModeLocksTheImageTree(t *testing.T) {
	h := newHost(t, nil)
	h.env.Image = true
	h.env.LockFile = ""
	l, err := lock.Acquire(h.root, 0)
	must(t, err)
	before := h.snapshot()
	_, err = h.apply(sysTune())
	wantCode(t, err, exitcode.Environment, "holds "+h.root)
	h.assertUnchanged(before)
	l.Release()

	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	h.rollback()
	h.assertUnchanged(before)
	for _, p := range []string{"run", "run/hostprep.lock", "var/lib/hostprep"} {
		if _, err := os.Stat(filepath.Join(h.root, p)); err == nil {
			t.Errorf("image tree has %s after apply+rollback", p)
		}
	}
}

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

// TestForeignFileIsAnnouncedAndRollbackRestoresOwnerAndMode: a
// 60-hostprep.conf hostprep never wrote (owned by nobody, mode 0600) is
// announced in the plan as replaced and saved, and rollback brings back
// its bytes, owner and mode.
func TestForeignFileIsAnnouncedAndRollbackRestoresOwnerAndMode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to nobody needs root")
	}
	h := newHost(t, nil)
	path := filepath.Join(h.root, "etc/sysctl.d/60-hostprep.conf")
	must(t, os.WriteFile(path, []byte("# someone's own file\nnet.core.somaxconn = 1024\n"), 0o600))
	must(t, os.Chmod(path, 0o600))
	must(t, os.Chown(path, 65534, 65534))
	before := h.snapshot()

	pl, err := NewPlan(sysTune(), h.env)
	must(t, err)
	var reason string
	for _, c := range pl.Changes {
		if c.File == path {
			reason = c.Reason
		}
	}
	if !strings.Contains(reason, "not written by hostprep") || !strings.Contains(reason, "saved in the journal") {
		t.Errorf("plan reason for the foreign file: %q", reason)
	}
	if !strings.Contains(strings.Join(pl.Warnings, "\n"), path+" exists and hostprep did not write it") {
		t.Errorf("no warning about replacing %s: %v", path, pl.Warnings)
	}
	if _, err := h.apply(sysTune()); err != nil {
		t.Fatal(err)
	}
	// A second apply: the file is hostprep's now, no warning.
	pl, err = NewPlan(sysTune(), h.env)
	must(t, err)
	if strings.Contains(strings.Join(pl.Warnings, "\n"), "did not write it") {
		t.Errorf("hostprep's own file called foreign: %v", pl.Warnings)
	}
	h.rollback()
	h.assertUnchanged(before)
	fi, err := os.Stat(path)
	must(t, err)
	sys := fi.Sys().(*syscall.Stat_t)
	if sys.Uid != 65534 || sys.Gid != 65534 || fi.Mode().Perm() != 0o600 {
		t.Errorf("restored %s is %d:%d %v, want 65534:65534 -rw-------", path, sys.Uid, sys.Gid, fi.Mode().Perm())
	}
}

// TestRollbackKeepsNrOpenForALimitsFileLeftBehind: the limits file was
// hand-edited after apply, so rollback leaves it; its hard nofile 2097152
// is above the original fs.nr_open 1048576, so rollback keeps fs.nr_open
// (never a limits file above the nr_open in force), says why, and keeps
// both in the journal; once the file is removed a second rollback
// finishes and the host is as before.
func TestRollbackKeepsNrOpenForALimitsFileLeftBehind(t *testing.T) {
	h := newHost(t, map[string]string{"fs.file-max": "1048576"})
	before := h.snapshot()
	al := profiles.AtLeast
	p := &profiles.Profile{Name: "broker", Sysctl: map[string]profiles.Sysctl{
		"fs.nr_open":         {Value: "2097152", Mode: al},
		"fs.file-max":        {Value: "2097152", Mode: al},
		"net.core.somaxconn": {Value: "32768", Mode: al},
	}, Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 2097152, Hard: 2097152}}}
	if _, err := h.apply(p); err != nil {
		t.Fatal(err)
	}
	limits := filepath.Join(h.root, "etc/security/limits.d/60-hostprep.conf")
	f, err := os.OpenFile(limits, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString("# hand edit\n")
	must(t, err)
	must(t, f.Close())

	r := h.rollback()
	if got := h.get("fs.nr_open"); got != "2097152" {
		t.Fatalf("fs.nr_open = %s after rollback with %s left behind (hard nofile 2097152)", got, limits)
	}
	if got := h.get("fs.file-max"); got != "2097152" {
		t.Fatalf("fs.file-max = %s after rollback with %s left behind", got, limits)
	}
	if got := h.get("net.core.somaxconn"); got != "4096" {
		t.Errorf("somaxconn not restored: %s", got)
	}
	kept := map[string]Skip{}
	for _, k := range r.Kept {
		kept[k.Key] = k
	}
	for _, k := range []string{"fs.nr_open", "fs.file-max"} {
		if s, ok := kept[k]; !ok || !strings.Contains(s.Reason, "kept because "+limits) || !strings.Contains(s.Reason, "hard nofile 2097152") {
			t.Errorf("%s not reported as kept: %+v", k, r.Kept)
		}
	}
	if !r.JournalKept {
		t.Error("journal_kept false")
	}
	for _, l := range r.Left {
		if l.File != limits {
			t.Errorf("left %+v, want only %s", l, limits)
		}
	}
	var buf strings.Builder
	must(t, r.WriteText(&buf))
	if !strings.Contains(buf.String(), "kept (not lowered") || !strings.Contains(buf.String(), "run `hostprep tune rollback --proc-sys "+h.procSys) {
		t.Errorf("rollback text:\n%s", buf.String())
	}
	s, err := StatusOf(h.env)
	must(t, err)
	// fs.nr_open, fs.file-max, the limits file and hostprep's sysctl.d
	// file, which sets fs.nr_open at boot (without it the host would boot
	// with 1048576 under the limits file's 2097152).
	if !s.Applied || len(s.Items) != 4 || !slices.ContainsFunc(s.Items, func(it ItemStatus) bool { return strings.HasSuffix(it.File, files.SysctlConf) }) {
		t.Errorf("status after a partial rollback: %+v", s.Items)
	}

	must(t, os.Remove(limits))
	r = h.rollback()
	if r.JournalKept || len(r.Kept) != 0 {
		t.Errorf("second rollback kept %+v", r.Kept)
	}
	h.assertUnchanged(before)
}

// TestImageModeRootMustExist: --root naming a directory that does not
// exist (or a file) is bad input for every command taking it (exit 2,
// naming --root), and nothing is created: not the tree, not a lock.
func TestImageModeRootMustExist(t *testing.T) {
	h := newHost(t, nil)
	h.env.Image = true
	h.env.LockFile = ""
	parent := t.TempDir()
	file := filepath.Join(parent, "a-file")
	must(t, os.WriteFile(file, nil, 0o644))
	for _, root := range []string{filepath.Join(parent, "image", "rootfs"), file} {
		h.env.Root = root
		_, err := h.apply(sysTune())
		wantCode(t, err, exitcode.BadInput, "--root", root)
		_, err = NewPlan(sysTune(), h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
		_, err = Rollback(context.Background(), h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
		_, err = StatusOf(h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
		_, _, err = Verify(sysTune(), h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
		_, err = VerifyBoot(h.env)
		wantCode(t, err, exitcode.BadInput, "--root")
	}
	ents, _ := os.ReadDir(parent)
	if len(ents) != 1 {
		t.Errorf("a refused --root left %d entries in %s, want only a-file", len(ents), parent)
	}
}

// A limits file left behind whose hard nofile is above even the
// fs.nr_open hostprep set (an edit to 3000000 over 2097152) is not
// protected by keeping hostprep's fs.nr_open or its sysctl.d file: both
// are rolled back, and the journal is not kept waiting for a fix that
// keeping them could not make work.
func TestRollbackKeepsNothingThatCannotHelp(t *testing.T) {
	h := newHost(t, nil)
	al := profiles.AtLeast
	p := &profiles.Profile{Name: "broker", Sysctl: map[string]profiles.Sysctl{"fs.nr_open": {Value: "2097152", Mode: al}},
		Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 2097152, Hard: 2097152}}}
	if _, err := h.apply(p); err != nil {
		t.Fatal(err)
	}
	limits := filepath.Join(h.root, "etc/security/limits.d/60-hostprep.conf")
	b, err := os.ReadFile(limits)
	must(t, err)
	must(t, os.WriteFile(limits, []byte(strings.ReplaceAll(string(b), "2097152", "3000000")), 0o644))
	r := h.rollback()
	if len(r.Kept) != 0 || r.JournalKept {
		t.Errorf("kept %+v (journal kept %v): keeping fs.nr_open 2097152 cannot serve a hard nofile of 3000000", r.Kept, r.JournalKept)
	}
	if got := h.get("fs.nr_open"); got != "1048576" {
		t.Errorf("fs.nr_open = %s, want the original 1048576", got)
	}
	if _, err := os.Stat(filepath.Join(h.root, files.SysctlConf)); err == nil {
		t.Errorf("hostprep's sysctl.d file was kept")
	}
}

// TestRollbackKeepsNrOpenForAForeignLimitsFile: after apply, someone adds
// their own limits.d file whose hard nofile (1500000) only hostprep's
// fs.nr_open (2097152) allows. Rollback keeps fs.nr_open, now and at
// boot, and names that file; lowering it would make every login fail to
// set the limit (pam_limits: setrlimit EPERM, "cannot open session"). Once
// the file is gone a second rollback finishes and the host is as before.
// The file is read as pam_limits reads it (measured with runuser): type
// and item in any case, the value in base 10 ("01500000" is 1500000), and
// a hidden file not at all.
func TestRollbackKeepsNrOpenForAForeignLimitsFile(t *testing.T) {
	for _, c := range []struct {
		name, file, line string
		keep             bool
	}{
		{"plain", "90-app.conf", "*    hard    nofile    1500000\n", true},
		{"case and a leading zero", "90-app.conf", "*    Hard    NOFILE    01500000\n", true},
		{"hidden: pam does not read it", ".90-app.conf", "*    hard    nofile    1500000\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, map[string]string{"fs.file-max": "4194304"})
			before := h.snapshot()
			al := profiles.AtLeast
			p := &profiles.Profile{Name: "broker", Sysctl: map[string]profiles.Sysctl{
				"fs.nr_open":         {Value: "2097152", Mode: al},
				"net.core.somaxconn": {Value: "32768", Mode: al},
			}, Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 2097152, Hard: 2097152}}}
			if _, err := h.apply(p); err != nil {
				t.Fatal(err)
			}
			app := filepath.Join(h.root, "etc/security/limits.d", c.file)
			must(t, os.WriteFile(app, []byte(c.line), 0o644))

			r := h.rollback()
			if got, want := h.get("fs.nr_open"), map[bool]string{true: "2097152", false: "1048576"}[c.keep]; got != want {
				t.Fatalf("fs.nr_open = %s after rollback with %s (%q), want %s", got, app, c.line, want)
			}
			if !c.keep {
				if len(r.Kept) != 0 || r.JournalKept {
					t.Errorf("kept %+v for a file pam does not read", r.Kept)
				}
				must(t, os.Remove(app))
				h.assertUnchanged(before)
				return
			}
			var names []string
			for _, k := range r.Kept {
				names = append(names, k.Key+k.File)
				if !strings.Contains(k.Reason, "kept because "+app+" (not hostprep's) sets hard nofile 1500000") {
					t.Errorf("kept %s: %s", k.Key+k.File, k.Reason)
				}
			}
			if len(r.Kept) != 2 || !r.JournalKept {
				t.Errorf("kept %v (journal kept %v), want fs.nr_open and hostprep's sysctl.d file", names, r.JournalKept)
			}
			if got := h.get("net.core.somaxconn"); got != "4096" {
				t.Errorf("somaxconn not restored: %s", got)
			}
			must(t, os.Remove(app))
			if r = h.rollback(); r.JournalKept || len(r.Kept) != 0 {
				t.Errorf("second rollback kept %+v", r.Kept)
			}
			h.assertUnchanged(before)
		})
	}
}

// A directory where hostprep keeps a file of its own, or a file where it
// needs a directory, stops apply before anything changes, with the fix:
// move it away (hostprep never removes what it did not write). Field
// case: "tune: reading …/60-hostprep.conf: read …: is a directory".
func TestOwnedPathBlockedNamesTheFix(t *testing.T) {
	for _, c := range []struct {
		name, profile, dir, file string
	}{
		{"a directory at hostprep's sysctl.d file", "sys-tune", "etc/sysctl.d/60-hostprep.conf", ""},
		{"a file at a drop-in directory", "mqtt-broker-1m", "", "etc/systemd/system/emqx.service.d"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			if c.dir != "" {
				must(t, os.MkdirAll(filepath.Join(h.root, c.dir), 0o755))
			}
			if c.file != "" {
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(h.root, c.file)), 0o755))
				must(t, os.WriteFile(filepath.Join(h.root, c.file), []byte("x"), 0o644))
			}
			p, err := profiles.Load(c.profile, nil)
			must(t, err)
			before := h.snapshot()
			_, err = h.apply(p)
			wantCode(t, err, exitcode.Environment, "move it away", "hostprep never removes what it did not write")
			if after := h.snapshot(); !reflect.DeepEqual(before, after) {
				t.Errorf("apply changed the host before it stopped")
			}
		})
	}
}
