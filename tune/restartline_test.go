package tune

import (
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// TestRestartLineReachesEveryUnit: apply's restart line named a template
// (worker@.service, whose drop-in every instance reads) as it is, which
// systemd refuses ("Unit name worker@.service is missing the instance
// name."), so no running instance got the new limits; and it printed an
// escaped unit name (a\x2db.service) unquoted, so the shell turned it
// into ax2db.service. Now a template is restarted as the pattern of its
// instances (worker@*.service: systemctl matches it against the units
// loaded now), and the line is shell-quoted: sh reads back exactly the
// units of Restart.
func TestRestartLineReachesEveryUnit(t *testing.T) {
	const unit = "[Service]\nExecStart=/bin/true\n"
	h := newHost(t, nil)
	h.env.SystemdRunDir = h.root // systemd runs
	h.layFiles(map[string]string{"/lib/systemd/system/worker@.service": unit, `/lib/systemd/system/a\x2db.service`: unit, "/lib/systemd/system/mosquitto.service": unit,
		"/lib/systemd/system/masked.service": unit, "/etc/systemd/system/masked.service": "symlink to /dev/null",
		"/lib/systemd/system/rtmask.service": unit, "/run/systemd/system/rtmask.service": "symlink to /dev/null"})
	p, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [\"worker@.service\", \"worker@a\", \"a\\\\x2db\", mosquitto, \"gone@.service\", masked, rtmask]\n  limit_nofile: {soft: 65536, hard: 65536}\n"))
	must(t, err)
	res, err := h.apply(p)
	must(t, err)
	want := []string{`a\x2db.service`, "mosquitto.service", "worker@*.service", "worker@a.service"}
	if !slices.Equal(res.Restart, want) {
		t.Errorf("restart %q, want %q (gone@.service is not installed; systemd refuses to restart masked.service and rtmask.service: \"Unit is masked\")", res.Restart, want)
	}
	var text bytes.Buffer
	must(t, res.WriteText(&text, "apply"))
	_, line, ok := strings.Cut(text.String(), "systemctl try-restart ")
	if !ok {
		t.Fatalf("no restart line:\n%s", text.String())
	}
	line, _, _ = strings.Cut(line, "\n")
	out, err := exec.Command("sh", "-c", `for a in `+line+`; do printf '%s\n' "$a"; done`).Output()
	must(t, err)
	if got := strings.Fields(string(out)); !slices.Equal(got, want) {
		t.Errorf("sh reads the restart line %q as %q, want %q", line, got, want)
	}
}

// TestSystemdNotRunningNoRestartLine: on a host where systemd is not
// running (no /run/systemd/system) no systemctl command can work: the
// plan lists no unit to restart and no daemon-reexec, and one note says
// the drop-ins take effect when systemd starts the units. With systemd
// running, the installed unit is to be restarted as before.
func TestSystemdNotRunningNoRestartLine(t *testing.T) {
	unit := "[Service]\nExecStart=/bin/true\n"
	y := "systemd:\n  services: [mosquitto]\n  limit_nofile: {soft: 65536, hard: 65536}\n  default_limit_nofile: {soft: 1024, hard: 65536}\n"
	p, err := profiles.Parse("t.yaml", []byte(y))
	must(t, err)
	for _, running := range []bool{false, true} {
		h := newHost(t, nil)
		h.layFiles(map[string]string{"/lib/systemd/system/mosquitto.service": unit})
		if running {
			h.env.SystemdRunDir = h.root
		}
		pl, err := NewPlan(p, h.env)
		must(t, err)
		notes := strings.Join(pl.Notes, "\n")
		if running {
			if !slices.Equal(pl.Restart, []string{"mosquitto.service"}) || !strings.Contains(notes, "daemon-reexec") {
				t.Errorf("systemd running: restart %q, notes %q; want mosquitto.service and the daemon-reexec note", pl.Restart, notes)
			}
			continue
		}
		if len(pl.Restart) != 0 || strings.Contains(notes, "systemctl") {
			t.Errorf("systemd not running: restart %q, notes %q; want no unit to restart and no systemctl", pl.Restart, notes)
		}
		if !strings.Contains(notes, "systemd is not running") || !strings.Contains(notes, "next boot") {
			t.Errorf("systemd not running: notes %q do not say the drop-ins take effect when systemd starts the units", notes)
		}
	}
}
