package tune

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
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
		{name: "an alias in /etc whose unit is masked on /run", tree: map[string]string{"/run/systemd/system/mqtt.service": "symlink to /dev/null",
			"/lib/systemd/system/mqtt.service": unit, "/etc/systemd/system/mosquitto.service": "symlink to /lib/systemd/system/mqtt.service"}},
		{name: "a mask in /etc stays", masked: true, tree: map[string]string{"/etc/systemd/system/mosquitto.service": "symlink to /dev/null"}},
		{name: "a mask in /etc beside a runtime one", masked: true, tree: map[string]string{"/etc/systemd/system/mosquitto.service": "symlink to /dev/null",
			"/run/systemd/system/mosquitto.service": "symlink to /dev/null"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			h.env.SystemdRunDir = h.root // systemd runs
			if _, ok := c.tree["/etc/systemd/system/mosquitto.service"]; !ok || c.masked {
				c.tree["/lib/systemd/system/mosquitto.service"] = unit
			}
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
			if !strings.Contains(notes, "mosquitto.service is masked now (") || !strings.Contains(text.String(), "note: mosquitto.service is masked now") || strings.Count(notes, "masked now") != 1 {
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

// TestUnitOnRunOutsideVolatileDirsIsNotInstalledAfterReboot: a unit
// whose only unit file is on /run outside the directories verify --boot
// dropped for the next boot (a portable service attached with
// `portablectl attach --runtime`, in /run/systemd/system.attached; a
// unit linked into /etc from /run, `systemctl link /run/x.service`, or
// an alias link to a unit file in /run/systemd/system) was judged a
// plain ok, as if the service would get hostprep's limit after a
// reboot; a drop-in linked from /etc to a file on /run counted after
// the reboot too. Now each such unit is not installed after a reboot and
// the note names its file on /run; a unit a generator wrote
// (/run/systemd/generator.late, written again at every boot) stays
// installed.
func TestUnitOnRunOutsideVolatileDirsIsNotInstalledAfterReboot(t *testing.T) {
	const unit = "[Service]\nExecStart=/bin/true\n"
	for _, c := range []struct {
		name, file string
		tree       map[string]string
		installed  bool
	}{
		{name: "portablectl attach --runtime", file: "/run/systemd/system.attached/mosquitto.service",
			tree: map[string]string{"/run/systemd/system.attached/mosquitto.service": unit}},
		{name: "systemctl link /run/x.service", file: "/run/x.service (as /etc/systemd/system/mosquitto.service)",
			tree: map[string]string{"/run/x.service": unit, "/etc/systemd/system/mosquitto.service": "symlink to /run/x.service"}},
		{name: "an alias of a unit in /run/systemd/system", file: "/run/systemd/system/mqtt.service (as /etc/systemd/system/mosquitto.service)",
			tree: map[string]string{"/run/systemd/system/mqtt.service": unit, "/etc/systemd/system/mosquitto.service": "symlink to /run/systemd/system/mqtt.service"}},
		{name: "a generator's unit stays", installed: true,
			tree: map[string]string{"/run/systemd/generator.late/mosquitto.service": unit}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			h.env.SystemdRunDir = h.root // systemd runs
			c.tree["/lib/systemd/system/emqx.service"] = unit
			h.layFiles(c.tree)
			p, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [emqx, mosquitto]\n  limit_nofile: {soft: 65536, hard: 65536}\n"))
			must(t, err)
			_, err = h.apply(p)
			must(t, err)
			bs, err := VerifyBoot(h.env)
			must(t, err)
			var text bytes.Buffer
			must(t, bs.WriteText(&text))
			missing, ok := []string{"mosquitto.service"}, []string{"emqx.service"}
			if c.installed {
				missing, ok = nil, []string{"emqx.service", "mosquitto.service"}
			}
			wantUnitItems(t, "verify --boot", bs, text.String(), false, missing, ok)
			if !c.installed && !strings.Contains(text.String(), "its only unit file, "+c.file+", is on /run") {
				t.Errorf("the note does not name the unit file %s:\n%s", c.file, text.String())
			}
		})
	}
}

// TestDropInLinkedToRunIsGoneAfterReboot: the boot without /run's files
// (nextBoot) drops a file on /run that a drop-in in /etc links to (after
// a reboot the link leads nowhere, so its LimitNOFILE= no longer
// counts); it kept it. A generator's unit stays: systemd writes it again
// at every boot.
func TestDropInLinkedToRunIsGoneAfterReboot(t *testing.T) {
	root := t.TempDir()
	testenv.WriteTree(t, root, map[string]string{"/etc/systemd/system/mosquitto.service.d/99-low.conf": "symlink to /run/low.conf", "/run/low.conf": "x"})
	gone := nextBoot(root, nil)
	if b, ok := gone["/run/low.conf"]; !ok || b != nil {
		t.Errorf("nextBoot keeps /run/low.conf, which /etc/systemd/system/mosquitto.service.d/99-low.conf links to: %v", gone)
	}
	testenv.WriteTree(t, root, map[string]string{"/run/systemd/generator/x.service": "x", "/etc/systemd/system/y.service": "symlink to /run/systemd/generator/x.service"})
	if _, ok := nextBoot(root, nil)["/run/systemd/generator/x.service"]; ok {
		t.Errorf("nextBoot drops a generator's unit, which systemd writes again at boot")
	}
}
