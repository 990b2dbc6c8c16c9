package tune_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/tune"
)

// TestE2EVerifyUnitReportsLateWriterDrift runs hostprep-verify.service's
// ExecStart, as written by apply --verify-at-boot, in the sandbox: after
// a late writer (a sysctl.d file sorting after hostprep's, loaded by
// `sysctl -p` as ufw loads its IPT_SYSCTL file) changes a key, the
// textfile shows hostprep_tune_drift 1 for it with the wanted and live
// values and names that file as the writer, the journal line says the
// same and the unit fails; after `tune apply` restores the key the drift
// is 0; tune status shows the last result; rollback removes the units.
func TestE2EVerifyUnitReportsLateWriterDrift(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	prof := writeProfile(t, "drift.yaml", "sysctl:\n  net.core.somaxconn: {value: \"8192\", mode: at-least}\n")
	const dir = "/var/lib/prometheus/node-exporter"
	if _, e, c := n.Run("mkdir", "-p", dir); c != 0 {
		t.Fatal(e)
	}
	out, errOut, code := n.Hostprep("tune", "apply", "--profile", prof, "--verify-at-boot")
	if code != 0 {
		t.Fatalf("apply --verify-at-boot: exit %d\n%s%s", code, out, errOut)
	}
	t.Cleanup(func() { n.Hostprep("tune", "rollback") })
	unit, ok := n.ReadFile(tune.VerifyService)
	if !ok {
		t.Fatalf("%s not written:\n%s", tune.VerifyService, out)
	}
	m := regexp.MustCompile(`(?m)^ExecStart=(.*)$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatalf("no ExecStart in:\n%s", unit)
	}
	execStart := m[1]
	run := func() (string, string, int) { return n.Run("sh", "-c", execStart) }

	out, errOut, code = run()
	prom, _ := n.ReadFile(dir + "/" + tune.TextfileName)
	if code != 0 || !strings.Contains(prom, `hostprep_tune_drift{key="net.core.somaxconn",live="8192",wanted="8192 (at-least)",writer=""} 0`) {
		t.Fatalf("before the writer: exit %d\n%s%s\n%s", code, out, errOut, prom)
	}

	// The late writer.
	if _, e, c := n.Run("sh", "-c", "echo 'net.core.somaxconn = 1024' > /etc/sysctl.d/99-late.conf && sysctl -q -p /etc/sysctl.d/99-late.conf"); c != 0 {
		t.Fatal(e)
	}
	out, errOut, code = run()
	prom, _ = n.ReadFile(dir + "/" + tune.TextfileName)
	want := `hostprep_tune_drift{key="net.core.somaxconn",live="1024",wanted="8192 (at-least)",writer="/etc/sysctl.d/99-late.conf:1"} 1`
	if code != 1 || !strings.Contains(prom, want) || !strings.Contains(prom, "hostprep_tune_drift_items 1") {
		t.Fatalf("after the writer: exit %d (want 1)\n%s%s\ntextfile:\n%s\nwant %s", code, out, errOut, prom, want)
	}
	if !strings.Contains(out, "DRIFT net.core.somaxconn: wanted 8192 (at-least), live 1024; written by /etc/sysctl.d/99-late.conf:1") {
		t.Errorf("journal line:\n%s", out)
	}
	status, _, _ := n.Hostprep("tune", "status")
	if !strings.Contains(status, "last verify (hostprep-verify.service)") || !strings.Contains(status, "written by /etc/sysctl.d/99-late.conf:1") {
		t.Errorf("tune status does not show the last result:\n%s", status)
	}

	if out, e, c := n.Hostprep("tune", "apply", "--profile", prof); c != 0 {
		t.Fatalf("apply again: exit %d\n%s%s", c, out, e)
	}
	out, errOut, code = run()
	prom, _ = n.ReadFile(dir + "/" + tune.TextfileName)
	if code != 0 || !strings.Contains(prom, `key="net.core.somaxconn",live="8192"`) || !strings.Contains(prom, "hostprep_tune_drift_items 0") {
		t.Fatalf("after apply restored it: exit %d\n%s%s\n%s", code, out, errOut, prom)
	}

	if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatal(e)
	}
	for _, p := range []string{tune.VerifyService, tune.VerifyTimer, "/etc/systemd/system/timers.target.d/60-hostprep-verify.conf"} {
		if _, ok := n.ReadFile(p); ok {
			t.Errorf("rollback left %s", p)
		}
	}
}
