package tune

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/tune/journal"
)

// TestVerifyAtBootUnitsInImage guards what tune apply --verify-at-boot
// writes into an image: hostprep-verify.service (a oneshot after
// multi-user.target and the known writers, running `tune verify
// --textfile DIR`), its timer and the timers.target drop-in that starts
// it; systemd-analyze verify accepts them; a later apply without the flag
// keeps them; rollback removes all three.
func TestVerifyAtBootUnitsInImage(t *testing.T) {
	img, env := newImage(t, map[string]string{"/etc/systemd/system.conf": "[Manager]\n"})
	v := &journal.VerifyUnit{Bin: DefaultBin, TextfileDir: DefaultTextfileDir, Every: "1h"}
	if _, err := Apply(t.Context(), sysTune(), Options{Env: env, VerifyAtBoot: v}); err != nil {
		t.Fatal(err)
	}
	service := readFile(t, filepath.Join(img, VerifyService))
	for _, want := range []string{"Type=oneshot", "After=multi-user.target ", "ufw.service", "tuned.service",
		"ExecStart=/usr/local/bin/hostprep tune verify --textfile /var/lib/prometheus/node-exporter\n", "ConditionPathExists=/var/lib/hostprep/state.json"} {
		if !strings.Contains(service, want) {
			t.Errorf("hostprep-verify.service lacks %q:\n%s", want, service)
		}
	}
	timer := readFile(t, filepath.Join(img, VerifyTimer))
	if !strings.Contains(timer, "OnBootSec=") || !strings.Contains(timer, "OnUnitActiveSec=1h\n") {
		t.Errorf("timer:\n%s", timer)
	}
	if !strings.Contains(readFile(t, filepath.Join(img, verifyWants)), "Wants=hostprep-verify.timer") {
		t.Error("timers.target drop-in does not start the timer")
	}

	if bin, err := exec.LookPath("systemd-analyze"); err == nil {
		// systemd-analyze verify --root resolves the units the unit names
		// and the ExecStart binary within the image.
		must(t, os.MkdirAll(filepath.Join(img, "usr/lib/systemd"), 0o755))
		if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", filepath.Join(img, "usr/lib/systemd")).CombinedOutput(); err != nil {
			t.Skipf("no system units to verify against: %v %s", err, out)
		}
		must(t, os.MkdirAll(filepath.Join(img, "usr/local/bin"), 0o755))
		must(t, os.WriteFile(filepath.Join(img, DefaultBin), []byte("#!/bin/sh\n"), 0o755))
		out, err := exec.Command(bin, "verify", "--root="+img, filepath.Join(img, VerifyService), filepath.Join(img, VerifyTimer)).CombinedOutput()
		if err != nil || len(strings.TrimSpace(string(out))) > 0 {
			t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
		}
		// the same check fails without the binary: the pass above is real
		must(t, os.Remove(filepath.Join(img, DefaultBin)))
		if out, err := exec.Command(bin, "verify", "--root="+img, filepath.Join(img, VerifyService)).CombinedOutput(); err == nil {
			t.Fatalf("systemd-analyze verify passed without the ExecStart binary:\n%s", out)
		}
	} else {
		t.Log("systemd-analyze not installed: unit files not verified by systemd")
	}

	res, err := Apply(t.Context(), sysTune(), Options{Env: env})
	must(t, err)
	if res.Changed {
		t.Fatalf("a second apply without --verify-at-boot changed %+v", res.Changes)
	}
	if _, err := Rollback(t.Context(), env); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{VerifyService, VerifyTimer, verifyWants} {
		if _, err := os.Stat(filepath.Join(img, p)); err == nil {
			t.Errorf("rollback left %s", p)
		}
	}
}

// TestVerifyUnitOrderedAfterEveryWriter guards that hostprep-verify.service
// runs after the unit of every writer entry in hostconf.Writers, and that
// a new entry with a unit orders it after that unit with no other change.
func TestVerifyUnitOrderedAfterEveryWriter(t *testing.T) {
	after := func(t *testing.T) []string {
		t.Helper()
		img, env := newImage(t, map[string]string{"/etc/systemd/system.conf": "[Manager]\n"})
		v := &journal.VerifyUnit{Bin: DefaultBin, TextfileDir: DefaultTextfileDir, Every: "1h"}
		if _, err := Apply(t.Context(), sysTune(), Options{Env: env, VerifyAtBoot: v}); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(readFile(t, filepath.Join(img, VerifyService)), "\n") {
			if v, ok := strings.CutPrefix(l, "After="); ok {
				return strings.Fields(v)
			}
		}
		t.Fatal("hostprep-verify.service has no After= line")
		return nil
	}
	got, n := after(t), 0
	for _, w := range hostconf.Writers {
		if w.Unit == "" {
			continue
		}
		n++
		if !slices.Contains(got, w.Unit) {
			t.Errorf("After= %q lacks %s, the unit of writer %q", got, w.Unit, w.Name)
		}
	}
	if n < 5 || !slices.Contains(got, "multi-user.target") {
		t.Fatalf("After= %q: want multi-user.target and the units of the %d unit-backed writers (at least 5)", got, n)
	}

	late := &hostconf.Writer{Name: "late", Unit: "late-writer.service", Order: hostconf.AfterLoader,
		Writes: func(*hostconf.Host) ([]hostconf.Write, error) { return nil, nil }}
	saved := hostconf.Writers
	hostconf.Writers = append(slices.Clone(saved), late)
	t.Cleanup(func() { hostconf.Writers = saved })
	if got := after(t); !slices.Contains(got, "late-writer.service") {
		t.Errorf("with a new writer entry, After= %q lacks its unit late-writer.service", got)
	}
}

// TestVerifyAtBootWithoutSystemdGivesCron guards that where systemd
// drop-ins are not written (no systemd on the host) --verify-at-boot
// writes no unit and says so with the equivalent cron lines.
func TestVerifyAtBootWithoutSystemdGivesCron(t *testing.T) {
	h := newHost(t, nil)
	must(t, os.RemoveAll(filepath.Join(h.root, "etc/systemd")))
	v := &journal.VerifyUnit{Bin: "/usr/bin/hostprep", TextfileDir: "/srv/prom", Every: "1h"}
	pl, err := PlanFor(sysTune(), Options{Env: h.env, VerifyAtBoot: v})
	must(t, err)
	notes := strings.Join(pl.Notes, "\n")
	if !strings.Contains(notes, "PID 1 is not systemd") || !strings.Contains(notes, "@reboot sleep 60 && /usr/bin/hostprep tune verify --textfile /srv/prom") || !strings.Contains(notes, "@hourly /usr/bin/hostprep tune verify") {
		t.Fatalf("notes:\n%s", notes)
	}
	for _, c := range pl.Changes {
		if strings.Contains(c.File, "hostprep-verify") {
			t.Fatalf("a unit is written without systemd: %+v", c)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	must(t, err)
	return string(b)
}

// TestVerifyUnitCarriesStatePath guards that the unit's ExecStart (and
// the cron lines) read the journal apply wrote: `--state FILE` when apply
// was given a --state other than the default, none otherwise; in image
// mode, the path the booted image has.
func TestVerifyUnitCarriesStatePath(t *testing.T) {
	v := &journal.VerifyUnit{Bin: DefaultBin, TextfileDir: DefaultTextfileDir, Every: "1h"}
	for _, c := range []struct{ state, want string }{
		{"/srv/hostprep state.json", "ExecStart=/usr/local/bin/hostprep tune verify --textfile /var/lib/prometheus/node-exporter --state '/srv/hostprep state.json'\n"},
		{"", "ExecStart=/usr/local/bin/hostprep tune verify --textfile /var/lib/prometheus/node-exporter\n"},
		{journal.DefaultPath, "ExecStart=/usr/local/bin/hostprep tune verify --textfile /var/lib/prometheus/node-exporter\n"},
	} {
		pl := &Plan{env: Env{StateFile: c.state}}
		wants := pl.verifyUnitWants(journal.Persisted{VerifyAtBoot: v}, true, "")
		if len(wants) == 0 || wants[0].path != VerifyService {
			t.Fatalf("--state %q: no %s planned: %+v", c.state, VerifyService, wants)
		}
		if unit := string(wants[0].data); !strings.Contains(unit, c.want) {
			t.Errorf("--state %q: unit lacks %q:\n%s", c.state, c.want, unit)
		}
		pl = &Plan{env: Env{StateFile: c.state}}
		pl.verifyUnitWants(journal.Persisted{VerifyAtBoot: v}, false, "no systemd")
		if cron := strings.Join(pl.Notes, "\n"); strings.Contains(c.want, "--state") != strings.Contains(cron, "--state") {
			t.Errorf("--state %q: cron lines do not match the unit:\n%s", c.state, cron)
		}
	}
	// image mode: a --state inside the image is named as the booted image
	// names it; one outside it is no journal there, which a warning says
	pl := &Plan{env: Env{Root: "/img", Image: true, StateFile: "/img/var/lib/custom/state.json"}}
	unit := string(pl.verifyUnitWants(journal.Persisted{VerifyAtBoot: v}, true, "")[0].data)
	if !strings.Contains(unit, "ConditionPathExists=/var/lib/custom/state.json\n") || !strings.Contains(unit, " --state /var/lib/custom/state.json\n") || strings.Contains(strings.Join(pl.Warnings, "\n"), "--state") {
		t.Errorf("--state inside the image: warnings %q, unit:\n%s", pl.Warnings, unit)
	}
	pl = &Plan{env: Env{Root: "/img", Image: true, StateFile: "/srv/state.json"}}
	pl.verifyUnitWants(journal.Persisted{VerifyAtBoot: v}, true, "")
	if w := strings.Join(pl.Warnings, "\n"); !strings.Contains(w, "--state /srv/state.json is outside the image /img") {
		t.Errorf("--state outside the image: warnings %q, want one naming it", w)
	}
}

// A textfile directory that does not exist (on the host, or in the
// image) gets a warning: every run of the unit, and of the cron lines,
// would fail until it does.
func TestVerifyUnitWarnsOfMissingTextfileDir(t *testing.T) {
	img := t.TempDir()
	v := &journal.VerifyUnit{Bin: DefaultBin, TextfileDir: "/srv/prom", Every: "1h"}
	for _, systemd := range []bool{true, false} {
		pl := &Plan{env: Env{Root: img, Image: true}}
		pl.verifyUnitWants(journal.Persisted{VerifyAtBoot: v}, systemd, "no systemd")
		if w := strings.Join(pl.Warnings, "\n"); !strings.Contains(w, "/srv/prom does not exist") || !strings.Contains(w, "--verify-textfile-dir") {
			t.Errorf("systemd %v, missing directory: warnings %q", systemd, w)
		}
	}
	must(t, os.MkdirAll(filepath.Join(img, "srv/prom"), 0o755))
	pl := &Plan{env: Env{Root: img, Image: true}}
	pl.verifyUnitWants(journal.Persisted{VerifyAtBoot: v}, true, "")
	if len(pl.Warnings) != 0 {
		t.Errorf("existing directory: warnings %q", pl.Warnings)
	}
}
