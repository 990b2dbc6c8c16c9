package tune

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// TestUnitNotInstalledIsNoPlainOk: a profile's systemd.services lists
// units of which the host has one or none (mqtt-broker-1m: emqx and
// mosquitto, whichever broker is installed). A unit with no unit file at
// all is not installed: its LimitNOFILE and TasksMax reach no service.
// verify --boot, status and plan judged hostprep's drop-in alone and
// printed a plain ok, as if the service would get the limit after a
// reboot. Now each such item fails nothing (the drop-in applies once the
// unit is installed; exit 0) but is marked not_installed in JSON, "not
// installed" in the OK column, and a note names the unit (a profile's
// alternative: the host runs the other one), or, when no unit hostprep
// tuned is installed, a warning says the limits reach no service (plan
// and apply: a warning, which ready reports). An installed unit (its own
// file, its template's for an instance, an alias link, named with or
// without ".service") stays a plain ok.
func TestUnitNotInstalledIsNoPlainOk(t *testing.T) {
	const unit = "[Service]\nExecStart=/bin/true\n"
	for _, c := range []struct {
		name     string
		host     bool // host mode (systemd running), not an image
		services string
		tasks    bool // systemd.tasks_max too
		tree     map[string]string
		missing  []string
		ok       []string
	}{
		{name: "image: emqx missing, mosquitto installed", services: "[emqx, mosquitto]",
			tree: map[string]string{"/lib/systemd/system/mosquitto.service": unit}, missing: []string{"emqx.service"}, ok: []string{"mosquitto.service"}},
		{name: "host: emqx missing, mosquitto installed", host: true, services: "[emqx, mosquitto]",
			tree: map[string]string{"/lib/systemd/system/mosquitto.service": unit}, missing: []string{"emqx.service"}, ok: []string{"mosquitto.service"}},
		{name: "image: neither installed", services: "[emqx, mosquitto]", missing: []string{"emqx.service", "mosquitto.service"}},
		{name: "host: neither installed", host: true, services: "[emqx, mosquitto]", missing: []string{"emqx.service", "mosquitto.service"}},
		{name: "names with and without .service", services: "[emqx.service, mosquitto]",
			tree: map[string]string{"/usr/lib/systemd/system/emqx.service": unit}, missing: []string{"mosquitto.service"}, ok: []string{"emqx.service"}},
		{name: "TasksMax of an instance whose template is installed, and one whose is not", services: "[iotdb-datanode@a, iotdb-confignode@a]", tasks: true,
			tree: map[string]string{"/lib/systemd/system/iotdb-datanode@.service": unit}, missing: []string{"iotdb-confignode@a.service"}, ok: []string{"iotdb-datanode@a.service"}},
		{name: "host: TasksMax, neither installed", host: true, services: "[iotdb-datanode]", tasks: true, missing: []string{"iotdb-datanode.service"}},
		{name: "an alias link is installed", services: "[sshd, nosuch]",
			tree:    map[string]string{"/lib/systemd/system/ssh.service": unit, "/etc/systemd/system/sshd.service": "symlink to /lib/systemd/system/ssh.service"},
			missing: []string{"nosuch.service"}, ok: []string{"sshd.service"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := "systemd:\n  services: " + c.services + "\n  limit_nofile: {soft: 65536, hard: 65536}\n"
			if c.tasks {
				y += "  tasks_max: 16384\n"
			}
			p, err := profiles.Parse("t.yaml", []byte(y))
			must(t, err)
			var env Env
			if c.host {
				h := newHost(t, nil)
				h.env.SystemdRunDir = h.root // systemd runs
				tree := maps.Clone(c.tree)
				if tree == nil {
					tree = map[string]string{}
				}
				h.layFiles(tree)
				env = h.env
			} else {
				_, env = newImage(t, c.tree)
			}
			pl, err := NewPlan(p, env)
			must(t, err)
			wantInstallWarnings(t, "plan", pl.Notes, pl.Warnings, c.missing, c.ok)
			// Only an installed unit is to be restarted: `systemctl
			// restart` fails on one that is not ("Unit not found").
			if wantRestart := c.ok; c.host && !slices.Equal(pl.Restart, wantRestart) {
				t.Errorf("restart %q, want %q", pl.Restart, wantRestart)
			}
			_, err = Apply(t.Context(), p, Options{Env: env})
			must(t, err)
			bs, err := VerifyBoot(env)
			must(t, err) // not installed fails nothing: exit 0 as before
			var text bytes.Buffer
			must(t, bs.WriteText(&text))
			wantUnitItems(t, "verify --boot", bs, text.String(), c.tasks, c.missing, c.ok)
			st, err := StatusOf(env)
			must(t, err)
			text.Reset()
			must(t, st.WriteText(&text))
			wantUnitItems(t, "status", st, text.String(), c.tasks, c.missing, c.ok)
		})
	}
}

// wantInstallWarnings wants notes to name each unit of missing as not
// installed and none of ok when some unit is installed (a profile's
// alternatives: a note, no warning); when none is (ok empty), one warning
// naming every unit of missing and saying the limits reach no service.
func wantInstallWarnings(t *testing.T, what string, notes, warnings, missing, ok []string) {
	t.Helper()
	n, w := strings.Join(notes, "\n"), strings.Join(warnings, "\n")
	for _, u := range missing {
		if len(ok) > 0 && !strings.Contains(n, u+" is not installed") || len(ok) == 0 && !strings.Contains(w, u) {
			t.Errorf("%s: nothing says %s is not installed:\nnotes:\n%s\nwarnings:\n%s", what, u, n, w)
		}
	}
	if len(ok) == 0 && !strings.Contains(w, "no unit hostprep tuned is installed") {
		t.Errorf("%s: no warning that no unit is installed, so the limits reach no service:\n%s", what, w)
	}
	if len(ok) > 0 && strings.Contains(w, "not installed") {
		t.Errorf("%s: warns of a profile's alternative that is not installed while another is:\n%s", what, w)
	}
	for _, u := range ok {
		if strings.Contains(n+w, u+" is not installed") {
			t.Errorf("%s: says the installed %s is not:\n%s\n%s", what, u, n, w)
		}
	}
}

// wantUnitItems reads report (a BootStatus or Status) as a user does, its
// JSON and its text: each LimitNOFILE (and, with tasks, TasksMax) item of
// a unit in missing is ok (not failing) and not_installed, its text row
// says "not installed", and notes or a warning name the unit
// (wantInstallWarnings); one of ok is a plain ok.
func wantUnitItems(t *testing.T, what string, report any, text string, tasks bool, missing, ok []string) {
	t.Helper()
	b, err := json.Marshal(report)
	must(t, err)
	var doc struct {
		Items    []map[string]any `json:"items"`
		Boot     []map[string]any `json:"boot_check"`
		Notes    []string         `json:"notes"`
		Warnings []string         `json:"warnings"`
		BootN    []string         `json:"boot_notes"`
		BootW    []string         `json:"boot_warnings"`
	}
	must(t, json.Unmarshal(b, &doc))
	items := doc.Items
	if what == "status" {
		items = doc.Boot
	}
	keys := []string{"LimitNOFILE"}
	if tasks {
		keys = append(keys, "TasksMax")
	}
	for _, u := range append(append([]string{}, missing...), ok...) {
		gone := !strings.Contains(strings.Join(ok, " "), u)
		for _, k := range keys {
			name := u + " " + k
			var it map[string]any
			for _, x := range items {
				if x["limit"] == name {
					it = x
				}
			}
			if it == nil {
				t.Fatalf("%s: no item %q in %s", what, name, b)
			}
			if it["ok"] != true || (it["not_installed"] == true) != gone {
				t.Errorf("%s: %s: ok %v, not_installed %v, want ok true, not_installed %v: %v", what, name, it["ok"], it["not_installed"], gone, it)
			}
			row := ""
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, name+" ") {
					row = l
				}
			}
			if want := map[bool]string{true: "  not installed", false: "  ok"}[gone]; !strings.HasSuffix(row, want) {
				t.Errorf("%s text: row of %s %q, want it to end in %q:\n%s", what, name, row, want, text)
			}
		}
	}
	wantInstallWarnings(t, what+" JSON", append(doc.Notes, doc.BootN...), append(doc.Warnings, doc.BootW...), missing, ok)
	var notes, warnings []string
	for _, l := range strings.Split(text, "\n") {
		if s, found := strings.CutPrefix(l, "note: "); found {
			notes = append(notes, s)
		}
		if s, found := strings.CutPrefix(l, "warning: "); found {
			warnings = append(warnings, s)
		}
	}
	wantInstallWarnings(t, what+" text", notes, warnings, missing, ok)
}

// TestUnitOnlyOnRunIsNotInstalledAfterReboot: a unit whose only unit
// file is on /run (a transient unit, systemd-run --unit mosquitto) is
// gone after a reboot, as the sysctl files there are: verify --boot
// judged it installed from the file it found now. Its items are
// not_installed, and the note names the file on /run.
func TestUnitOnlyOnRunIsNotInstalledAfterReboot(t *testing.T) {
	h := newHost(t, nil)
	h.env.SystemdRunDir = h.root // systemd runs
	h.layFiles(map[string]string{"/lib/systemd/system/emqx.service": "[Service]\nExecStart=/bin/true\n",
		"/run/systemd/transient/mosquitto.service": "[Service]\nExecStart=/usr/sbin/mosquitto\n"})
	p, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [emqx, mosquitto]\n  limit_nofile: {soft: 65536, hard: 65536}\n"))
	must(t, err)
	_, err = h.apply(p)
	must(t, err)
	bs, err := VerifyBoot(h.env)
	must(t, err)
	var text bytes.Buffer
	must(t, bs.WriteText(&text))
	wantUnitItems(t, "verify --boot", bs, text.String(), false, []string{"mosquitto.service"}, []string{"emqx.service"})
	if !strings.Contains(text.String(), "its only unit file, /run/systemd/transient/mosquitto.service, is on /run") {
		t.Errorf("the warning does not name the unit file on /run:\n%s", text.String())
	}
}
