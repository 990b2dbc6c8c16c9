package ready

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/internal/verdict"
	"github.com/hostprep/hostprep/loadprobe"
	"github.com/hostprep/hostprep/ready/outcome"
	"github.com/hostprep/hostprep/tune"
)

// fixtureEnv is a host laid out in a temporary tree: /proc/sys with the
// keys the test profile tunes, /proc/net/tcp with no listener, and / for
// the persistent files, journal and lock.
func fixtureEnv(t *testing.T, keys map[string]string) tune.Env {
	t.Helper()
	base := t.TempDir()
	procSys := filepath.Join(base, "proc", "sys")
	for k, v := range keys {
		p := sysctlkey.File(procSys, k)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	net := filepath.Join(base, "proc", "net")
	if err := os.MkdirAll(net, 0o755); err != nil {
		t.Fatal(err)
	}
	hdr := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	for _, f := range []string{"tcp", "tcp6"} {
		if err := os.WriteFile(filepath.Join(net, f), []byte(hdr), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(base, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	return tune.Env{ProcSys: procSys, Proc: filepath.Join(base, "proc"), Root: root,
		LockFile: filepath.Join(base, "hostprep.lock"), SystemdRunDir: filepath.Join(base, "no-systemd"),
		SkipPrivilegeCheck: true}
}

const recheckProfile = `description: two per-netns keys, for the end-of-run re-check test
sysctl:
  net.core.somaxconn:
    value: "8192"
    mode: at-least
  net.ipv4.tcp_fin_timeout:
    value: "30"
    mode: at-most
`

// TestRecheckSeesRollbackDuringRun runs the real tune step on a fixture
// host, then a `tune rollback` (the real tune.Rollback) while the MQTT
// probe "runs": the end-of-run re-check must report both keys drifted and
// the run NOT READY. Without the rollback the same run is READY with a
// passed tune.still-applied check.
func TestRecheckSeesRollbackDuringRun(t *testing.T) {
	prof := filepath.Join(t.TempDir(), "recheck.yaml")
	if err := os.WriteFile(prof, []byte(recheckProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, rollback := range []bool{false, true} {
		env := fixtureEnv(t, map[string]string{"net.core.somaxconn": "4096", "net.ipv4.tcp_fin_timeout": "60"})
		rn := real
		rn.preflight = newFakes().runners().preflight
		rn.probe = func(ctx context.Context, _ loadprobe.Run, _ Options) outcome.Step {
			if rollback {
				if _, err := tune.Rollback(ctx, env); err != nil {
					t.Fatalf("rollback during the run: %v", err)
				}
			}
			return pass("probe")
		}
		res, err := run(context.Background(), Options{Profile: prof, Probes: at("mqtt", "tcp://127.0.0.1:1"), Tune: env}, rn)
		if res == nil {
			t.Fatalf("rollback=%v: %v", rollback, err)
		}
		ts := res.Step(outcome.StepTune)
		var ids []string
		for _, c := range ts.Checks {
			if strings.HasPrefix(c.ID, "tune.drift.") || c.ID == "tune.still-applied" {
				ids = append(ids, c.ID+"="+string(c.Status))
			}
		}
		got := strings.Join(ids, " ")
		if !rollback {
			if err != nil || res.Verdict != outcome.Ready || got != "tune.still-applied=pass" || !ts.Changed {
				t.Errorf("no rollback: verdict %s err %v checks %s changed %v; want READY, still-applied", res.Verdict, err, got, ts.Changed)
			}
			continue
		}
		if res.Verdict != outcome.NotReady || ts.Verdict != verdict.Fail {
			t.Errorf("rollback during the run: verdict %s, tune %s; want NOT READY, tune fail (%s)", res.Verdict, ts.Verdict, ts.Summary)
		}
		for _, k := range []string{"net.core.somaxconn", "net.ipv4.tcp_fin_timeout"} {
			if !strings.Contains(got, "tune.drift.runtime."+k+"=fail") {
				t.Errorf("no drift check for %s: %s", k, got)
			}
		}
	}
}
