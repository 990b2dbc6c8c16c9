package tune

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// TestRuntimeMaskIsGoneAfterReboot: a unit masked only on /run
// (`systemctl mask --runtime mosquitto`: a link to /dev/null in
// /run/systemd/system, or in /run/systemd/system.control) is not masked
// after a reboot, /run being a tmpfs emptied at every boot; it then gets
// hostprep's drop-in. verify --boot failed (exit 1, "the unit is masked
// ... systemd will not start it after a reboot"), status showed DIFFERS
// and plan and apply warned. Now its items are ok and a note says the
// unit is masked now and why that ends at the reboot. A mask in /etc,
// which a reboot keeps, still fails, also beside a runtime one.
func TestRuntimeMaskIsGoneAfterReboot(t *testing.T) {
	const unit = "[Service]\nExecStart=/bin/true\n"
	for _, c := range []struct {
		name   string
		tree   map[string]string
		masked bool // masked after the reboot too
	}{
		{name: "systemctl mask --runtime", tree: map[string]string{"/run/systemd/system/mosquitto.service": "symlink to /dev/null"}},
		{name: "an empty file in /run/systemd/system", tree: map[string]string{"/run/systemd/system/mosquitto.service": ""}},
		{name: "a mask in /run/systemd/system.control", tree: map[string]string{"/run/systemd/system.control/mosquitto.service": "symlink to /dev/null"}},
		{name: "a mask in /etc stays", masked: true, tree: map[string]string{"/etc/systemd/system/mosquitto.service": "symlink to /dev/null"}},
		{name: "a mask in /etc beside a runtime one", masked: true, tree: map[string]string{"/etc/systemd/system/mosquitto.service": "symlink to /dev/null",
			"/run/systemd/system/mosquitto.service": "symlink to /dev/null"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			h.env.SystemdRunDir = h.root // systemd runs
			c.tree["/lib/systemd/system/mosquitto.service"] = unit
			c.tree["/lib/systemd/system/emqx.service"] = unit
			h.layFiles(c.tree)
			p, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [emqx, mosquitto]\n  limit_nofile: {soft: 65536, hard: 65536}\n  tasks_max: 16384\n"))
			must(t, err)
			pl, err := NewPlan(p, h.env)
			must(t, err)
			if warned := strings.Contains(strings.Join(pl.Warnings, "\n"), "mosquitto.service LimitNOFILE: the unit is masked"); warned != c.masked {
				t.Errorf("plan warns that mosquitto is masked at boot: %v, want %v:\n%s", warned, c.masked, strings.Join(pl.Warnings, "\n"))
			}
			_, err = h.apply(p)
			must(t, err)
			bs, err := VerifyBoot(h.env)
			if c.masked {
				wantCode(t, err, 1, "mosquitto.service LimitNOFILE: the unit is masked (/etc/systemd/system/mosquitto.service")
				return
			}
			must(t, err)
			var text bytes.Buffer
			must(t, bs.WriteText(&text))
			for _, it := range bs.Items {
				if it.unit == "mosquitto.service" && (!it.OK || it.NotInstalled) {
					t.Errorf("verify --boot: %s: ok %v, not installed %v, want a plain ok: %s", it.Limit, it.OK, it.NotInstalled, it.Problem)
				}
			}
			notes := strings.Join(bs.Notes, "\n")
			if !strings.Contains(notes, "mosquitto.service is masked now by /run/systemd/") || !strings.Contains(text.String(), "note: mosquitto.service is masked now") || strings.Count(notes, "masked now") != 1 {
				t.Errorf("verify --boot: want one note that mosquitto is masked now, until the reboot:\n%s", text.String())
			}
			st, err := StatusOf(h.env)
			must(t, err)
			text.Reset()
			must(t, st.WriteText(&text))
			if strings.Contains(text.String(), "DIFFERS") || !strings.Contains(text.String(), "note: mosquitto.service is masked now") {
				t.Errorf("status:\n%s", text.String())
			}
		})
	}
}
