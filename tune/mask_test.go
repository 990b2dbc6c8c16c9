package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

// An owned file masked with a link to /dev/null (0666, world-writable) is
// replaced by a 0644 file owned by the writer, never by one with the
// device's mode: any user could otherwise add sysctl or limits lines that
// the next boot applies as root.
func TestMaskedFileIsReplacedNotWorldWritable(t *testing.T) {
	h := newHost(t, nil)
	for _, f := range []string{files.SysctlConf, files.LimitsConf} {
		must(t, os.Symlink("/dev/null", filepath.Join(h.root, f)))
	}
	_, err := h.apply(&profiles.Profile{Name: "m",
		Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: "8192", Mode: profiles.AtLeast}},
		Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 524288}}})
	must(t, err)
	for _, f := range []string{files.SysctlConf, files.LimitsConf} {
		fi, err := os.Lstat(filepath.Join(h.root, f))
		must(t, err)
		if !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o644 {
			t.Errorf("%s after apply over a /dev/null mask: %v, want a regular 0644 file", f, fi.Mode())
		}
	}
}

// A symbolic link at an owned path (Debian's 99-sysctl.conf ->
// ../sysctl.conf taken as --persist-name, a mask -> /dev/null, a link
// that leads nowhere, an image's absolute link) is put back as that link
// by rollback, not as a frozen copy of its bytes, an empty file or
// nothing; an image's absolute link is read inside the image, never on
// the build host.
func TestRollbackRestoresSymlinks(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "host-only.conf")
	must(t, os.WriteFile(outside, []byte("net.core.somaxconn = 7\n"), 0o644))
	for _, c := range []struct {
		name, file, target string
		image              bool
	}{
		{"debian 99-sysctl.conf", "/etc/sysctl.d/99-sysctl.conf", "../sysctl.conf", false},
		{"mask", "/etc/sysctl.d/99-sysctl.conf", "/dev/null", false},
		{"dangling", "/etc/sysctl.d/99-sysctl.conf", "../nowhere.conf", false},
		{"image absolute", "/etc/sysctl.d/99-sysctl.conf", outside, true},
		{"limits.d mask", files.LimitsConf, "/dev/null", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			h.env.Image = c.image
			link := filepath.Join(h.root, c.file)
			must(t, os.Symlink(c.target, link))
			before := h.snapshot()
			h.env.PersistName = filepath.Base(c.file)
			p := &profiles.Profile{Name: "l", Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: "8192", Mode: profiles.AtLeast}},
				Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 524288}}}
			pl, err := NewPlan(p, h.env)
			must(t, err)
			for _, ch := range pl.Changes {
				if ch.File == link && ch.From == describe([]byte("net.core.somaxconn = 7\n"), true) {
					t.Errorf("the plan read the build host's %s through the image's link", outside)
				}
			}
			_, err = h.apply(p)
			must(t, err)
			if fi, err := os.Lstat(link); err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("apply did not write a file at %s: %v", link, err)
			}
			h.rollback()
			if got, err := os.Readlink(link); err != nil || got != c.target {
				t.Errorf("after rollback %s is not the link to %s: %q %v", c.file, c.target, got, err)
			}
			h.assertUnchanged(before)
			if b, _ := os.ReadFile(outside); string(b) != "net.core.somaxconn = 7\n" {
				t.Errorf("the build host's %s changed: %q", outside, b)
			}
		})
	}
}

// An owned file someone edited after hostprep wrote it stays as they left
// it at rollback, and the file hostprep had replaced there (bytes with
// mode, or a symbolic link) is saved as PATH.hostprep-original, a name no
// loader reads, and named in the result. Field case: rollback dropped the
// journal and an admin's original link was gone for good.
func TestRollbackOfEditedFileSavesTheOriginal(t *testing.T) {
	for _, c := range []struct {
		name, link string
		body       []byte
	}{
		{"a symbolic link", "../tuning/60.conf", nil},
		{"a 0600 file", "", []byte("net.core.somaxconn = 1024\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			conf := filepath.Join(h.root, files.SysctlConf)
			if c.link != "" {
				must(t, os.Symlink(c.link, conf))
			} else {
				must(t, os.WriteFile(conf, c.body, 0o600))
			}
			_, err := h.apply(&profiles.Profile{Name: "e", Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: "8192", Mode: profiles.AtLeast}}})
			must(t, err)
			edited, err := os.ReadFile(conf)
			must(t, err)
			edited = append(edited, "vm.swappiness = 10\n"...)
			must(t, os.WriteFile(conf, edited, 0o644))
			r := h.rollback()
			if b, _ := os.ReadFile(conf); string(b) != string(edited) {
				t.Errorf("the edited file was changed by rollback: %q", b)
			}
			saved := conf + ".hostprep-original"
			if c.link != "" {
				if got, err := os.Readlink(saved); err != nil || got != c.link {
					t.Errorf("original link not saved: %q %v", got, err)
				}
			} else {
				b, err := os.ReadFile(saved)
				fi, _ := os.Stat(saved)
				if err != nil || string(b) != string(c.body) || fi.Mode().Perm() != 0o600 {
					t.Errorf("original file not saved with its mode: %q %v", b, err)
				}
			}
			var named bool
			for _, k := range r.Left {
				named = named || (k.File == conf && strings.Contains(k.Reason, saved))
			}
			if !named {
				t.Errorf("rollback result does not name %s: %+v", saved, r.Left)
			}
		})
	}
}

// A modules-load.d file masked with a /dev/null link after apply: verify
// --boot shows the key it loads the module for as absent at boot (not a
// file's value), and rollback says the file was replaced by a link.
func TestMaskedModulesLoadFile(t *testing.T) {
	_, p, err := loadCase(t, "conntrack-limit-lost-at-boot")
	must(t, err)
	h := newHost(t, map[string]string{"net.netfilter.nf_conntrack_max": "262144"})
	h.layFiles(map[string]string{})
	_, err = h.apply(p)
	must(t, err)
	host := filepath.Join(h.root, files.ModulesLoad)
	must(t, os.Remove(host))
	must(t, os.Symlink("/dev/null", host))
	bs, _ := VerifyBoot(h.env)
	found := false
	for _, it := range bs.Items {
		if it.Key == "net.netfilter.nf_conntrack_max" {
			found = true
			if it.OK || it.Boot.Value != "absent" || it.Boot.File != "" {
				t.Errorf("at boot: %+v, want absent", it)
			}
		}
	}
	if !found {
		t.Fatalf("no boot item for nf_conntrack_max: %+v", bs.Items)
	}
	res := h.rollback()
	var reason string
	for _, l := range res.Left {
		if l.File == host {
			reason = l.Reason
		}
	}
	if !strings.Contains(reason, "replaced by a symlink to /dev/null (masked)") || strings.Contains(reason, "header still names") {
		t.Errorf("rollback says %q for the masked %s", reason, files.ModulesLoad)
	}
}
