package tune

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/lock"
)

// loadFile writes y to a profile file and loads it as --profile does, so
// that errors can name the file's positions.
func loadFile(t *testing.T, name, y string) (*profiles.Profile, string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	must(t, os.WriteFile(f, []byte(y), 0o644))
	p, err := profiles.Load(f, nil)
	must(t, err)
	return p, f
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

// TestRollbackLeftDirectoryShowsWhatItHolds: a directory hostprep created
// that rollback leaves because someone put a file in it is listed with
// what it holds, not `now ""`.
func TestRollbackLeftDirectoryShowsWhatItHolds(t *testing.T) {
	img, env := newImage(t, nil)
	p, err := profiles.Parse("t.yaml", []byte("sysctl: {net.core.somaxconn: \"4096\"}\n"))
	must(t, err)
	_, err = Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	must(t, os.WriteFile(filepath.Join(img, "etc/sysctl.d/70-mine.conf"), []byte("vm.swappiness = 1\n"), 0o644))
	r, err := Rollback(t.Context(), env)
	must(t, err)
	var row *Skip
	for i, l := range r.Left {
		if l.File == filepath.Join(img, "etc/sysctl.d")+"/" {
			row = &r.Left[i]
		}
	}
	if row == nil {
		t.Fatalf("left: %+v; want the sysctl.d directory", r.Left)
	}
	if row.Current != "directory of 1 entry" || !strings.Contains(row.Reason, "not empty") {
		t.Errorf("left directory: current %q, reason %q; want \"directory of 1 entry\", not empty", row.Current, row.Reason)
	}
	var text strings.Builder
	must(t, r.WriteText(&text))
	if strings.Contains(text.String(), `now ""`) {
		t.Errorf("rollback text says now \"\":\n%s", text.String())
	}
}

// TestPlanErrorsNameTheProfilePosition: a key this kernel lacks and a
// nofile above fs.nr_open are found only against the host, and the error
// names the profile file, line and column of the value.
func TestPlanErrorsNameTheProfilePosition(t *testing.T) {
	h := newHost(t, nil)
	p, f := loadFile(t, "bad3.yaml", "description: x\nsysctl:\n  net.core.somaxconn: \"4096\"\n  net.core.nosuchkey: \"1\"\n")
	_, err := NewPlan(p, h.env)
	wantCode(t, err, exitcode.BadInput, f+":4:3:", "net.core.nosuchkey", "optional: true")
	p, f = loadFile(t, "bad9.yaml", "limits:\n  nofile: {soft: 1024, hard: 3000000}\n")
	_, err = NewPlan(p, h.env)
	wantCode(t, err, exitcode.BadInput, f+":2:", "limits.nofile", "fs.nr_open")
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
}

// TestLockHeldSaysTheFix: apply that finds the lock held says what to do:
// wait for the other run, or give it longer with --lock-wait.
func TestLockHeldSaysTheFix(t *testing.T) {
	img, env := newImage(t, nil)
	env.LockWait = NoWait
	lk, err := lock.Acquire(img, 0)
	must(t, err)
	defer lk.Release()
	p, err := profiles.Parse("t.yaml", []byte("sysctl: {net.core.somaxconn: \"4096\"}\n"))
	must(t, err)
	_, err = Apply(t.Context(), p, Options{Env: env})
	wantCode(t, err, exitcode.Environment, "lock held", "--lock-wait 30s", "wait for the other apply or rollback")
}
