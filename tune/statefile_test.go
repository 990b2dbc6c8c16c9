package tune

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

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
