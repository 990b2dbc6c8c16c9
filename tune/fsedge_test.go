package tune

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// Directories hostprep creates are 0755 whatever the umask: under umask
// 077 a 0700 /etc/security or /etc/sysctl.d in an image hides every file
// in it from the users and services that need them.
func TestCreatedDirectoriesIgnoreTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	img, env := newImage(t, nil)
	p, err := profiles.Load("mqtt-broker-1m", nil)
	must(t, err)
	_, err = Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	must(t, filepath.WalkDir(img, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == img {
			return err
		}
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm() != 0o755 {
			t.Errorf("%s: mode %v, want 0755", path, fi.Mode().Perm())
		}
		return nil
	}))
}

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

// --state naming a configuration file (hostprep's own sysctl.d file, any
// *.conf) is refused before anything is written: the journal would
// replace it with JSON.
func TestStateFileMayNotBeAConfigFile(t *testing.T) {
	img, env := newImage(t, nil)
	p, err := profiles.Load("ready-small", nil)
	must(t, err)
	for _, state := range []string{filepath.Join(img, "etc/sysctl.d/60-hostprep.conf"), filepath.Join(img, "etc/security/limits.conf")} {
		env.StateFile = state
		_, err := Apply(t.Context(), p, Options{Env: env})
		wantCode(t, err, 2, "--state", "configuration file")
		if _, err := os.Stat(state); err == nil {
			t.Errorf("%s was written", state)
		}
	}
}
