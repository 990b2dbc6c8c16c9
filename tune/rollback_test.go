package tune

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

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

// TestRollbackLeftDirectoryShowsWhatItHolds: a directory hostprep created
// that rollback leaves because someone put a file in it is listed with
// what it holds, not `now ""`.
func TestRollbackLeftDirectoryShowsWhatItHolds(t *testing.T) {
	img, env := newImage(t, nil)
	p, err := profiles.Parse("t.yaml", []byte("sysctl: {net.core.somaxconn: \"4096\"}\n"))
	must(t, err)
	_, err = Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(img, "etc/sysctl.d/70-mine.conf"), []byte("vm.swappiness = 1\n"), 0o644))
	r, err := Rollback(t.Context(), env)
	must(t, err)
	var row *Skip
	for i, l := range r.Left {
		if l.File == filepath.Join(img, "etc/sysctl.d")+"/" {
			row = &r.Left[i]
		}
	}
	if row == nil {
		t.Fatalf("left: %+v; want the sysctl.d directory", r.Left)
	}
	if row.Current != "directory of 1 entry" || !strings.Contains(row.Reason, "not empty") {
		t.Errorf("left directory: current %q, reason %q; want \"directory of 1 entry\", not empty", row.Current, row.Reason)
	}
	var text strings.Builder
	must(t, r.WriteText(&text))
	if strings.Contains(text.String(), `now ""`) {
		t.Errorf("rollback text says now \"\":\n%s", text.String())
	}
}
