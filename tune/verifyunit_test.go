package tune

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
