package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// An image without /etc/security/limits.conf: pam_limits fails every
// session when it cannot open that file (measured with runuser and
// Debian 12's pam_limits in boot's TestLimitsOracle), so verify --boot
// fails when the image's PAM loads pam_limits, naming the PAM file and
// the fix; an image whose PAM does not load it (configuration only) has
// nothing that fails, and its limits.d line counts.
func TestVerifyBootImageWithoutLimitsConf(t *testing.T) {
	p := &profiles.Profile{Name: "l", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 16000}}}
	for _, c := range []struct {
		name string
		tree map[string]string
		ok   bool
	}{
		{"pam loads pam_limits", map[string]string{"/etc/pam.d/login": "session    required   pam_limits.so\n"}, false},
		{"no pam_limits in the image", map[string]string{"/etc/hostname": "img\n"}, true},
		{"pam_limits commented out", map[string]string{"/etc/pam.d/su": "# session    required   pam_limits.so\n"}, true},
		{"limits.conf present", map[string]string{"/etc/pam.d/login": "session required pam_limits.so\n", "/etc/security/limits.conf": ""}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, env := newImage(t, c.tree)
			_, err := Apply(t.Context(), p, Options{Env: env})
			must(t, err)
			bs, _ := VerifyBoot(env)
			for _, it := range bs.Items {
				if it.Limit == "" {
					continue
				}
				if it.OK != c.ok {
					t.Errorf("%s: ok %v, want %v: %s", it.Limit, it.OK, c.ok, it.Problem)
				}
				if !c.ok && (!strings.Contains(it.Problem, "/etc/security/limits.conf does not exist in the image, whose /etc/pam.d/login loads pam_limits") || !strings.Contains(it.Problem, "libpam-modules")) {
					t.Errorf("%s: problem %q", it.Limit, it.Problem)
				}
			}
		})
	}
}

// TestVerifyBootMaskedUnit: a unit masked after apply — an empty unit
// file in /etc shadowing the vendor's, or a link to /dev/null — is not
// started by systemd at all (systemd --test: "Unit Load State: masked"),
// so hostprep's LimitNOFILE drop-in applies to nothing: verify --boot
// says so instead of ok.
func TestVerifyBootMaskedUnit(t *testing.T) {
	p := &profiles.Profile{Name: "u", Systemd: profiles.Systemd{Services: []string{"hpx"}, LimitNOFILE: &profiles.Limit{Soft: 65536, Hard: 65536}}}
	for _, mask := range []string{"empty", "/dev/null"} {
		root, env := newImage(t, map[string]string{"/usr/lib/systemd/system/hpx.service": "[Service]\nExecStart=/bin/true\n"})
		_, err := Apply(t.Context(), p, Options{Env: env})
		must(t, err)
		unit := filepath.Join(root, "etc/systemd/system/hpx.service")
		if mask == "empty" {
			must(t, os.WriteFile(unit, nil, 0o644))
		} else {
			must(t, os.Symlink("/dev/null", unit))
		}
		bs, _ := VerifyBoot(env)
		found := false
		for _, it := range bs.Items {
			if strings.HasPrefix(it.Limit, "hpx.service") {
				found = true
				if it.OK || !strings.Contains(it.Problem, "masked") {
					t.Errorf("%s mask: %+v", mask, it)
				}
			}
		}
		if !found {
			t.Errorf("%s mask: no item for hpx.service in %+v", mask, bs.Items)
		}
	}
}
