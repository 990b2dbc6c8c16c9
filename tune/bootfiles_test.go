package tune

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// A directory named *.conf in sysctl.d or limits.d is read as empty (as
// sysctl --system and pam_limits do), not a reason to stop.
func TestDirectoryNamedConfReadsAsEmpty(t *testing.T) {
	img, env := newImage(t, nil)
	for _, d := range []string{"etc/sysctl.d/foo.conf", "etc/security/limits.d/foo.conf"} {
		must(t, os.MkdirAll(filepath.Join(img, d), 0o755))
	}
	p, err := profiles.Load("ready-small", nil)
	must(t, err)
	if _, err := NewPlan(p, env); err != nil {
		t.Errorf("plan with a directory named foo.conf: %v", err)
	}
}

// Files in /run/modules-load.d are gone after a reboot: a key whose
// module only they load is not ok at boot.
func TestRunModulesLoadIsNotBootTruth(t *testing.T) {
	img, env := newImage(t, map[string]string{"/run/modules-load.d/x.conf": "nf_conntrack\n"})
	p := &profiles.Profile{Name: "ct", Sysctl: map[string]profiles.Sysctl{"net.netfilter.nf_conntrack_max": {Value: "262144", Mode: profiles.AtLeast}}}
	_, err := Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	must(t, os.Remove(filepath.Join(img, "etc/modules-load.d/60-hostprep.conf")))
	_, err = VerifyBoot(env)
	wantCode(t, err, 1, "nf_conntrack")
}
