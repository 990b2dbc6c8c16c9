package tune

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// TestSysvScriptIsInstalled: a service provided only by a SysV init
// script (/etc/init.d/mosquitto, executable) is a unit at boot:
// systemd-sysv-generator makes mosquitto.service of it, and hostprep's
// drop-in applies (TestSysvUnitOracle holds boot to the real generator).
// Plan, apply, verify --boot and status judged it "not installed" (in an
// image, or on a host before the generator ran), warned that no unit
// hostprep tuned is installed, and left it out of the restart line. Now
// it is a plain ok and is restarted; emqx, without unit or script, is
// still not installed.
func TestSysvScriptIsInstalled(t *testing.T) {
	for _, host := range []bool{false, true} {
		t.Run(map[bool]string{false: "image", true: "host"}[host], func(t *testing.T) {
			tree := map[string]string{"/etc/init.d/mosquitto": "#!/bin/sh\n", "/lib/systemd/system-generators/systemd-sysv-generator": "generator"}
			var env Env
			var root string
			if host {
				h := newHost(t, nil)
				h.env.SystemdRunDir = h.root // systemd runs
				h.layFiles(tree)
				env, root = h.env, h.root
			} else {
				root, env = newImage(t, tree)
			}
			must(t, os.Chmod(filepath.Join(root, "etc/init.d/mosquitto"), 0o755))
			p, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [emqx, mosquitto]\n  limit_nofile: {soft: 65536, hard: 65536}\n  tasks_max: 16384\n"))
			must(t, err)
			pl, err := NewPlan(p, env)
			must(t, err)
			missing, ok := []string{"emqx.service"}, []string{"mosquitto.service"}
			wantInstallWarnings(t, "plan", pl.Notes, pl.Warnings, missing, ok)
			if n := strings.Join(pl.Notes, "\n"); !strings.Contains(n, "emqx.service is not installed") || !strings.Contains(n, "no SysV init script in /etc/init.d") {
				t.Errorf("the note on emqx does not say no SysV script makes it either:\n%s", n)
			}
			if host && !slices.Equal(pl.Restart, ok) {
				t.Errorf("restart %q, want %q", pl.Restart, ok)
			}
			_, err = Apply(t.Context(), p, Options{Env: env})
			must(t, err)
			bs, err := VerifyBoot(env)
			must(t, err)
			var text bytes.Buffer
			must(t, bs.WriteText(&text))
			wantUnitItems(t, "verify --boot", bs, text.String(), true, missing, ok)
			st, err := StatusOf(env)
			must(t, err)
			text.Reset()
			must(t, st.WriteText(&text))
			wantUnitItems(t, "status", st, text.String(), true, missing, ok)
			if strings.Contains(text.String(), "DIFFERS") {
				t.Errorf("status:\n%s", text.String())
			}
		})
	}
}
