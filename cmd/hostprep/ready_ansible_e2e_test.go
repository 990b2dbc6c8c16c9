package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// taskStatus is what ansible's default output says for a task on
// localhost: ok, changed, failed, fatal or skipping ("" if not run).
func taskStatus(out, task string) string {
	i := strings.Index(out, "TASK ["+task)
	if i < 0 {
		return ""
	}
	for _, l := range strings.Split(out[i:], "\n")[1:] {
		for _, st := range []string{"ok", "changed", "failed", "fatal", "skipping"} {
			if strings.HasPrefix(l, st+": [localhost") {
				return st
			}
		}
		if strings.HasPrefix(l, "TASK [") {
			return ""
		}
	}
	return ""
}

// TestAnsiblePlaybookRuns runs examples/ansible/hostprep-ready.yml for
// real, as examples/README.md says (from the checkout's root, the binary
// where ./install.sh puts it), twice, against this host (connection local) inside the tune
// sandbox, with /usr/local/bin on a tmpfs so the play's install task
// writes nothing to the host: the first run reports the ready task
// changed, the second not (changed_when reads the JSON), and the fleet
// report is written on the "control node".
func TestAnsiblePlaybookRuns(t *testing.T) {
	testenv.RequireUnshare(t)
	play, err := exec.LookPath("ansible-playbook")
	if err != nil {
		if testenv.InCI() {
			t.Fatal("ansible-playbook is not installed: apt-get install -y ansible-core")
		}
		t.Skip("ansible-playbook is not installed: apt-get install -y ansible-core")
	}
	bin := testenv.Binary(t)
	out := t.TempDir()
	profile := filepath.Join(out, "ready-small-ci.yaml")
	if err := os.WriteFile(profile, []byte(ciProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	inv := filepath.Join(out, "inventory.ini")
	if err := os.WriteFile(inv, []byte("[loadgens]\nlocalhost ansible_connection=local ansible_python_interpreter=/usr/bin/python3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The documented invocation, from a checkout's root (a directory
	// holding examples/, so ./hostprep-reports lands in the test's
	// directory, not the repository) after ./install.sh put the binary in
	// /usr/local/bin (the playbook's default hostprep_binary): only the
	// inventory, the profile and become differ. The second run passes the
	// binary by absolute path, the documented form for a binary elsewhere.
	if err := os.Symlink(filepath.Join(testenv.RepoRoot(), "examples"), filepath.Join(out, "examples")); err != nil {
		t.Fatal(err)
	}
	reports := filepath.Join(out, "hostprep-reports")
	inDir := func(argv ...string) []string {
		return append([]string{"sh", "-c", `cd "$0" && exec "$@"`, out}, argv...)
	}
	argv := []string{play, "-i", inv, "examples/ansible/hostprep-ready.yml",
		"-e", "hostprep_profile=" + profile,
		"-e", "ansible_become=false"} // root already; there is no sudo here
	env := []string{"ANSIBLE_LOCAL_TEMP=" + filepath.Join(out, "atmp"),
		"ANSIBLE_HOME=" + filepath.Join(out, "ahome"), "ANSIBLE_NOCOLOR=1", "ANSIBLE_HOST_KEY_CHECKING=False"}
	withPath := append(append([]string(nil), argv...), "-e", "hostprep_binary="+bin)
	notReady := append(append([]string(nil), argv...), "-e", `{"hostprep_extra_args": "--sockets 1000000"}`)
	res := runSandboxSteps(t, nil, []string{"/usr/local/bin"}, []sandboxStep{
		{Argv: []string{"install", "-m", "0755", bin, "/usr/local/bin/hostprep"}}, // where ./install.sh puts it
		{Argv: inDir(argv...), Env: env},
		{Argv: inDir(withPath...), Env: env},
		{Argv: inDir(notReady...), Env: env},
		{Argv: []string{bin, "tune", "rollback"}},
	})
	// A relative report dir would land next to the playbook, in the
	// repository.
	if stray := filepath.Join(testenv.RepoRoot(), "examples/ansible/hostprep-reports"); func() bool { _, err := os.Stat(stray); return err == nil }() {
		os.RemoveAll(stray)
		t.Errorf("the play wrote its reports into %s, not the directory it was started from", stray)
	}
	if res[0].Exit != 0 {
		t.Fatalf("install: exit %d %s", res[0].Exit, res[0].Stderr)
	}
	res = res[1:]
	for i := 0; i < 2; i++ {
		t.Logf("ansible run %d: exit %d\n%s", i+1, res[i].Exit, res[i].Stdout)
		if res[i].Exit != 0 {
			t.Errorf("ansible run %d: exit %d\n%s", i+1, res[i].Exit, res[i].Stderr)
		}
		if st := taskStatus(res[i].Stdout, "hostprep report merge"); st != "ok" {
			t.Errorf("ansible run %d: report merge task %q, want ok", i+1, st)
		}
	}
	// changed_when reads "changed" from hostprep's JSON.
	if st := taskStatus(res[0].Stdout, "hostprep ready (tune"); st != "changed" {
		t.Errorf("first play: ready task %q, want changed", st)
	}
	if st := taskStatus(res[1].Stdout, "hostprep ready (tune"); st != "ok" {
		t.Errorf("second play: ready task %q, want ok (nothing changed)", st)
	}
	if _, err := os.Stat(filepath.Join(reports, "fleet.html")); err != nil {
		t.Errorf("fleet report: %v", err)
	}
	if _, err := os.Stat(filepath.Join(reports, "localhost.json")); err != nil {
		t.Errorf("per-host result: %v", err)
	}
	// A host that is NOT READY: the ready task fails (ignored so the host
	// still reaches the report), the report is made, the last task fails
	// the host, and ansible-playbook exits 2 (a host failed).
	t.Logf("ansible run 3 (--sockets 1000000): exit %d\n%s", res[2].Exit, res[2].Stdout)
	if st := taskStatus(res[2].Stdout, "hostprep ready (tune"); st != "fatal" && st != "failed" {
		t.Errorf("NOT READY play: ready task %q, want failed", st)
	}
	if st := taskStatus(res[2].Stdout, "hostprep report merge"); st != "ok" {
		t.Errorf("NOT READY play: report merge %q, want ok", st)
	}
	if st := taskStatus(res[2].Stdout, "Fail the hosts that are not ready"); st != "fatal" && st != "failed" {
		t.Errorf("NOT READY play: final task %q, want the host failed", st)
	}
	if res[2].Exit != 2 || !strings.Contains(res[2].Stdout, "is NOT READY (hostprep ready exit 1") {
		t.Errorf("NOT READY play: exit %d, want 2 and the verdict in the message", res[2].Exit)
	}
	if b, err := os.ReadFile(filepath.Join(reports, "localhost.json")); err != nil || !strings.Contains(string(b), `"NOT READY"`) {
		t.Errorf("the NOT READY result did not reach the report dir: %v", err)
	}
	if res[3].Exit != 0 {
		t.Errorf("tune rollback: exit %d %s", res[3].Exit, res[3].Stderr)
	}
}
