package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

// A hard nofile limit hostprep writes must fit under fs.nr_open after the
// next boot, not only now: a live fs.nr_open raised by hand and persisted
// by no file returns to the kernel default at reboot, and an image's own
// sysctl.d file decides the image's fs.nr_open (not the kernel default).
// Above it, pam_limits fails ("Could not set limit") and logins break.
func TestNofileFitsUnderNrOpenAtBoot(t *testing.T) {
	nofile := func(hard uint64) *profiles.Profile {
		return &profiles.Profile{Name: "nofile-only", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: hard}}}
	}
	image := func(t *testing.T, tree map[string]string) Env {
		_, env := newImage(t, tree)
		return env
	}
	for _, c := range []struct {
		name     string
		env      func(t *testing.T) Env
		hard     uint64
		refused  bool
		mentions []string
	}{
		{"host: hand-raised nr_open, no file persists it", func(t *testing.T) Env {
			return newHost(t, map[string]string{"fs.nr_open": "4194304"}).env
		}, 2000000, true, []string{"kernel default at boot", "1048576", "live 4194304"}},
		{"host: raised nr_open persisted by an admin's file", func(t *testing.T) Env {
			h := newHost(t, map[string]string{"fs.nr_open": "4194304"})
			testenv.WriteTree(t, h.root, map[string]string{"/etc/sysctl.d/50-nr.conf": "fs.nr_open = 4194304\n"})
			return h.env
		}, 2000000, false, nil},
		{"host: a file lowers nr_open at boot", func(t *testing.T) Env {
			h := newHost(t, nil)
			testenv.WriteTree(t, h.root, map[string]string{"/etc/sysctl.d/50-nr.conf": "fs.nr_open = 524288\n"})
			return h.env
		}, 1000000, true, []string{"50-nr.conf:1", "524288"}},
		{"image: its sysctl.d lowers nr_open", func(t *testing.T) Env {
			return image(t, map[string]string{"/etc/sysctl.d/50-nr.conf": "fs.nr_open = 524288\n"})
		}, 1000000, true, []string{"50-nr.conf:1", "524288"}},
		{"image: its sysctl.d raises nr_open", func(t *testing.T) Env {
			return image(t, map[string]string{"/usr/lib/sysctl.d/50-nr.conf": "fs.nr_open = 4194304\n"})
		}, 2000000, false, nil},
		{"image: a value the kernel refuses leaves the default", func(t *testing.T) Env {
			return image(t, map[string]string{"/etc/sysctl.d/10-x.conf": "fs.nr_open = 2147483647\n"})
		}, 2000000, true, []string{"which the kernel refuses", "1048576"}},
		{"image: a hex value, read as the kernel reads it", func(t *testing.T) Env {
			return image(t, map[string]string{"/etc/sysctl.d/10-x.conf": "fs.nr_open = 0x300000\n"})
		}, 2000000, false, nil},
		{"image: Go's digit separators are not the kernel's", func(t *testing.T) Env {
			return image(t, map[string]string{"/etc/sysctl.d/10-x.conf": "fs.nr_open = 4_000_000\n"})
		}, 2000000, true, []string{"which the kernel refuses", "1048576"}},
		{"image, procps: a refused last line leaves the earlier accepted one", func(t *testing.T) Env {
			return image(t, map[string]string{"/etc/sysctl.d/10-a.conf": "fs.nr_open = 3000000\n", "/etc/sysctl.d/90-b.conf": "fs.nr_open = 4000000junk\n"})
		}, 2000000, false, nil},
		{"image, systemd-sysctl: a refused winner leaves the default", func(t *testing.T) Env {
			return image(t, map[string]string{"/etc/sysctl.d/10-a.conf": "fs.nr_open = 3000000\n", "/etc/sysctl.d/90-b.conf": "fs.nr_open = 4000000junk\n", "/usr/lib/systemd/systemd-sysctl": ""})
		}, 2000000, true, []string{"90-b.conf:1 sets 4000000junk, which the kernel refuses", "1048576"}},
		{"image: no file, kernel default", func(t *testing.T) Env {
			return image(t, map[string]string{"/etc/hostname": "img\n"})
		}, 2000000, true, []string{"kernel default at boot", "1048576"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewPlan(nofile(c.hard), c.env(t))
			if !c.refused {
				if err != nil {
					t.Fatalf("plan refused a limit that fits at boot: %v", err)
				}
				return
			}
			wantCode(t, err, exitcode.BadInput, append(c.mentions, "limits.nofile", "fs.nr_open")...)
		})
	}
}

// After an apply, verify --boot checks every hard nofile in force at boot
// against fs.nr_open at boot: a removed file that raised fs.nr_open leaves
// limits that logins cannot get, and verify --boot fails naming them.
func TestVerifyBootChecksNofileAgainstNrOpen(t *testing.T) {
	img, env := newImage(t, map[string]string{"/etc/sysctl.d/10-x.conf": "fs.nr_open = 3000000\n", "/etc/security/limits.conf": ""})
	_, err := Apply(t.Context(), &profiles.Profile{Name: "big", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 2000000}}}, Options{Env: env})
	must(t, err)
	if _, err := VerifyBoot(env); err != nil {
		t.Fatalf("verify --boot with fs.nr_open raised at boot: %v", err)
	}
	must(t, os.Remove(filepath.Join(img, "etc/sysctl.d/10-x.conf")))
	bs, err := VerifyBoot(env)
	wantCode(t, err, exitcode.Failed)
	for _, it := range bs.Items {
		if it.Limit != "" && (it.OK || !strings.Contains(it.Problem, "above fs.nr_open 1048576")) {
			t.Errorf("%s: ok %v, problem %q; want it failing on fs.nr_open", it.Limit, it.OK, it.Problem)
		}
	}
}

// "Never lower" does not copy a limit the host cannot set: a limits.conf
// hard nofile above fs.nr_open is kept only up to fs.nr_open, with a
// warning naming the line.
func TestNeverLowerStopsAtNrOpen(t *testing.T) {
	h := newHost(t, nil)
	h.layFiles(map[string]string{"/etc/security/limits.conf": "* hard nofile 2500000\nroot hard nofile 2500000\n"})
	pl, err := NewPlan(&profiles.Profile{Name: "n", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 65536}}}, h.env)
	must(t, err)
	if n := pl.persisted.Nofile; n == nil || n.Hard != 1048576 {
		t.Errorf("planned nofile %+v, want hard kept at fs.nr_open 1048576, not the host's 2500000", n)
	}
	if w := strings.Join(pl.Warnings, "\n"); !strings.Contains(w, "limits.conf:1 sets hard nofile 2500000") || !strings.Contains(w, "above fs.nr_open 1048576") {
		t.Errorf("warnings:\n%s", w)
	}
	// A hard-only line leaves the inherited soft, which an image without
	// systemd does not tell: "?", not 0.
	_, env := newImage(t, map[string]string{"/etc/security/limits.conf": "* hard nofile 900000\nroot hard nofile 900000\n"})
	pl, err = NewPlan(&profiles.Profile{Name: "n", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 65536}}}, env)
	must(t, err)
	kept := 0
	for _, sk := range pl.Skipped {
		if strings.Contains(sk.Reason, "nofile kept at") {
			kept++
			if sk.Current != "?:900000" || strings.Contains(sk.Reason, "0:900000") {
				t.Errorf("kept limit shown as %q: %s", sk.Current, sk.Reason)
			}
		}
	}
	if kept == 0 {
		t.Errorf("limits.conf's hard 900000 not kept: %+v", pl.Skipped)
	}
}

// In image mode an at-least key keeps a higher value the image's own
// sysctl.d sets, as a live value is kept on a host: hostprep's file is
// read later and would otherwise lower it (fs.nr_open 3000000 to 1048576,
// under which the image's own limits may no longer fit). Exact keys are
// written as the profile says.
func TestImageAtLeastKeepsTheImagesValue(t *testing.T) {
	img, env := newImage(t, map[string]string{"/etc/sysctl.d/10-x.conf": "fs.nr_open = 3000000\nnet.core.somaxconn = 65535\nvm.swappiness = 60\n"})
	p := &profiles.Profile{Name: "img", Sysctl: map[string]profiles.Sysctl{
		"fs.nr_open":         {Value: "1048576", Mode: profiles.AtLeast},
		"net.core.somaxconn": {Value: "4096", Mode: profiles.AtLeast},
		"vm.swappiness":      {Value: "10"},
	}}
	_, err := Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	conf, err := os.ReadFile(filepath.Join(img, "etc/sysctl.d/60-hostprep.conf"))
	must(t, err)
	for _, want := range []string{"fs.nr_open = 3000000\n", "net.core.somaxconn = 65535\n", "vm.swappiness = 10\n"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("hostprep's file lacks %q:\n%s", want, conf)
		}
	}
	if bs, err := VerifyBoot(env); err != nil {
		t.Errorf("verify --boot: %v %+v", err, bs)
	}
}

// Rollback of an image keeps hostprep's sysctl.d file while a limits file
// left behind (edited after hostprep wrote it) needs the fs.nr_open it
// sets at boot: in an image nothing is live, so the file is the only
// thing that raises fs.nr_open, and removing it boots the image with
// limits logins cannot get. Once the limits file is gone, rollback
// finishes.
func TestImageRollbackKeepsNrOpenFileForALeftLimitsFile(t *testing.T) {
	img, env := newImage(t, map[string]string{"/etc/hostname": "img\n"})
	_, err := Apply(t.Context(), &profiles.Profile{Name: "big",
		Sysctl: map[string]profiles.Sysctl{"fs.nr_open": {Value: "2097152", Mode: profiles.AtLeast}},
		Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 524288}}}, Options{Env: env})
	must(t, err)
	limits := filepath.Join(img, files.LimitsConf)
	b, err := os.ReadFile(limits)
	must(t, err)
	must(t, os.WriteFile(limits, []byte(strings.ReplaceAll(string(b), "524288", "2000000")), 0o644))
	r, err := Rollback(t.Context(), env)
	must(t, err)
	if _, err := os.Stat(filepath.Join(img, files.SysctlConf)); err != nil || !r.JournalKept || len(r.Kept) != 1 || r.Kept[0].File == "" {
		t.Fatalf("rollback removed the file raising fs.nr_open under a left limits file (hard 2000000): kept %+v, journal kept %v, stat %v", r.Kept, r.JournalKept, err)
	}
	must(t, os.Remove(limits))
	r, err = Rollback(t.Context(), env)
	must(t, err)
	if _, err := os.Stat(filepath.Join(img, files.SysctlConf)); err == nil || r.JournalKept {
		t.Errorf("second rollback, limits file gone: sysctl.d file still there (journal kept %v)", r.JournalKept)
	}
}

// A file on /run (a tmpfs emptied at every boot) may or may not be
// written again at boot: a limit that fits under fs.nr_open only thanks to
// /run/sysctl.d is refused by plan, and after an apply verify --boot
// fails for it, saying why.
func TestRunFilesDoNotCountAsBootTruth(t *testing.T) {
	img, env := newImage(t, map[string]string{"/run/sysctl.d/10-x.conf": "fs.nr_open = 3000000\n", "/etc/security/limits.conf": ""})
	big := &profiles.Profile{Name: "big", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 2000000}}}
	_, err := NewPlan(big, env)
	wantCode(t, err, exitcode.BadInput, "1048576", "/run")

	// Applied while an /etc file raised it, then that file is gone: the
	// /run file alone does not make verify --boot pass.
	testenv.WriteTree(t, img, map[string]string{"/etc/sysctl.d/10-y.conf": "fs.nr_open = 3000000\n"})
	_, err = Apply(t.Context(), big, Options{Env: env})
	must(t, err)
	must(t, os.Remove(filepath.Join(img, "etc/sysctl.d/10-y.conf")))
	_, err = VerifyBoot(env)
	wantCode(t, err, exitcode.Failed, "above fs.nr_open 1048576", "tmpfs")
}

// The same when the limits file was written by an earlier apply than the
// sysctl.d file: rollback undoes files newest first, so it must know what
// the left limits file needs before it reaches the sysctl.d file.
func TestImageRollbackKeepsNrOpenFileWrittenAfterTheLimits(t *testing.T) {
	img, env := newImage(t, map[string]string{"/etc/hostname": "img\n"})
	_, err := Apply(t.Context(), &profiles.Profile{Name: "lim", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 524288}}}, Options{Env: env})
	must(t, err)
	_, err = Apply(t.Context(), &profiles.Profile{Name: "nr", Sysctl: map[string]profiles.Sysctl{"fs.nr_open": {Value: "2097152", Mode: profiles.AtLeast}}}, Options{Env: env})
	must(t, err)
	limits := filepath.Join(img, files.LimitsConf)
	b, err := os.ReadFile(limits)
	must(t, err)
	must(t, os.WriteFile(limits, []byte(strings.ReplaceAll(string(b), "524288", "2000000")), 0o644))
	r, err := Rollback(t.Context(), env)
	must(t, err)
	if _, err := os.Stat(filepath.Join(img, files.SysctlConf)); err != nil || !r.JournalKept {
		t.Fatalf("rollback removed the file raising fs.nr_open under the left limits file: kept %+v, stat %v", r.Kept, err)
	}
}

// A value the kernel refuses is neither kept in hostprep's file (image
// at-least used to copy fs.nr_open 3000000000 into it) nor ok at boot.
func TestKernelRefusedValueIsNotKeptOrOK(t *testing.T) {
	img, env := newImage(t, map[string]string{"/etc/sysctl.d/10-x.conf": "fs.nr_open = 3000000000\n"})
	p := &profiles.Profile{Name: "nr", Sysctl: map[string]profiles.Sysctl{"fs.nr_open": {Value: "2097152", Mode: profiles.AtLeast}}}
	res, err := Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	conf, err := os.ReadFile(filepath.Join(img, "etc/sysctl.d/60-hostprep.conf"))
	must(t, err)
	if !strings.Contains(string(conf), "fs.nr_open = 2097152\n") || !strings.Contains(strings.Join(res.Warnings, "\n"), "which the kernel refuses") {
		t.Errorf("hostprep's file:\n%s\nwarnings: %q", conf, res.Warnings)
	}
	// A later file with the refused value: under procps (no
	// systemd-sysctl in the image) hostprep's earlier line stays in
	// force; under systemd-sysctl, which writes only the winner, the key
	// keeps its default: not ok at boot.
	testenv.WriteTree(t, img, map[string]string{"/etc/sysctl.d/90-x.conf": "fs.nr_open = 3000000000\n"})
	if _, err := VerifyBoot(env); err != nil {
		t.Errorf("procps, hostprep's line before the refused one: %v", err)
	}
	testenv.WriteTree(t, img, map[string]string{"/usr/lib/systemd/systemd-sysctl": ""})
	_, err = VerifyBoot(env)
	wantCode(t, err, exitcode.Failed, "90-x.conf:1 sets 3000000000, which the kernel refuses")
}
