package ready

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
// real, twice, against this host (connection local) inside the tune
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
	reports := filepath.Join(out, "reports")
	argv := []string{play, "-i", inv, filepath.Join(testenv.RepoRoot(), "examples/ansible/hostprep-ready.yml"),
		"-e", "hostprep_binary=" + bin, "-e", "hostprep_profile=" + profile, "-e", "hostprep_report_dir=" + reports,
		"-e", "ansible_become=false"} // root already; there is no sudo here
	env := []string{"ANSIBLE_LOCAL_TEMP=" + filepath.Join(out, "atmp"),
		"ANSIBLE_HOME=" + filepath.Join(out, "ahome"), "ANSIBLE_NOCOLOR=1", "ANSIBLE_HOST_KEY_CHECKING=False"}
	notReady := append(append([]string(nil), argv...), "-e", `{"hostprep_extra_args": "--sockets 1000000"}`)
	res := runSandboxSteps(t, nil, []string{"/usr/local/bin"}, []sandboxStep{
		{Argv: argv, Env: env},
		{Argv: argv, Env: env},
		{Argv: notReady, Env: env},
		{Argv: []string{bin, "tune", "rollback"}},
	})
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
