package examples

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/internal/testenv"
)

// taskStatus is the status ansible-playbook printed for the first task
// whose name starts with name: ok, changed, skipping, fatal or failed
// ("" when the task is not in out).
func taskStatus(out, name string) string {
	i := strings.Index(out, "TASK ["+name)
	if i < 0 {
		return ""
	}
	for _, l := range strings.Split(out[i:], "\n")[1:] {
		for _, st := range []string{"ok", "changed", "skipping", "fatal", "failed"} {
			if strings.HasPrefix(l, st+":") {
				return st
			}
		}
		if strings.HasPrefix(l, "TASK [") {
			break
		}
	}
	return ""
}

// planChange is one item of `hostprep tune plan --output json`.
type planChange struct {
	Key, File, Layer string
}

// hostState is what the plan would touch, as it is now: each runtime
// key's value and each file's content ("absent" when there is none).
func hostState(changes []planChange) map[string]string {
	st := map[string]string{}
	for _, c := range changes {
		path := c.File
		if c.Key != "" {
			path = sysctlkey.File("/proc/sys", c.Key)
		}
		if path == "" {
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			st[path] = "absent"
		} else {
			st[path] = string(b)
		}
	}
	return st
}

// TestAnsibleCheckMode: `ansible-playbook --check --diff` on this host
// (the local inventory) runs `hostprep ready --dry-run`, reports the
// host changed exactly when `hostprep tune plan` has changes, prints
// every change of the plan, skips the real run and the report, and
// touches nothing the plan names. Without hostprep on the host it says
// so and reports a change (a run would install it).
func TestAnsibleCheckMode(t *testing.T) {
	play := needTool(t, "ansible-playbook", "ansible-core")
	bin := testenv.Binary(t)
	out, err := exec.Command(bin, "tune", "plan", "--profile", "ready-small", "--output", "json").Output()
	var plan struct{ Changes []planChange }
	if err != nil || json.Unmarshal(out, &plan) != nil {
		t.Fatalf("tune plan: %v\n%s", err, out)
	}
	before := hostState(plan.Changes)

	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(testenv.RepoRoot(), "examples"), filepath.Join(dir, "examples")); err != nil {
		t.Fatal(err)
	}
	runPlay := func(extra ...string) (string, int) {
		args := append([]string{"-i", "examples/ansible/local.ini", "examples/ansible/hostprep-ready.yml", "--check", "--diff",
			"-e", "hostprep_profile=ready-small", "-e", "hostprep_install=false", "-e", "ansible_become=false"}, extra...)
		cmd := exec.Command(play, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+filepath.Join(dir, "atmp"), "ANSIBLE_HOME="+filepath.Join(dir, "ahome"), "ANSIBLE_NOCOLOR=1")
		b, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(b), code
	}

	stdout, code := runPlay("-e", "hostprep_path="+bin)
	if code != 0 {
		t.Fatalf("ansible-playbook --check: exit %d\n%s", code, stdout)
	}
	want := "ok"
	if len(plan.Changes) > 0 {
		want = "changed"
	}
	if st := taskStatus(stdout, "hostprep ready --dry-run"); st != want {
		t.Errorf("dry-run task %q, want %q (tune plan has %d changes)\n%s", st, want, len(plan.Changes), stdout)
	}
	for _, name := range []string{"hostprep ready (tune", "Keep this host's result", "hostprep report merge", "Fail the hosts"} {
		if st := taskStatus(stdout, name); st != "skipping" {
			t.Errorf("check mode: task %q is %q, want skipping", name, st)
		}
	}
	if st := taskStatus(stdout, "hostprep tuning (--diff)"); st != "ok" {
		t.Errorf("--diff: plan task %q", st)
	}
	for _, c := range plan.Changes {
		if item := c.Key + c.File; !strings.Contains(stdout, `"`+item+" ("+c.Layer+"): ") {
			t.Errorf("--diff does not show %s (%s)", item, c.Layer)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "hostprep-reports")); err == nil {
		t.Error("check mode made the report directory")
	}
	after := hostState(plan.Changes)
	for path, v := range before {
		if after[path] != v {
			t.Errorf("check mode changed %s: %q -> %q", path, v, after[path])
		}
	}

	// hostprep not on the host: said, counted as a change, nothing run.
	stdout, code = runPlay("-e", "hostprep_path="+filepath.Join(dir, "no", "hostprep"))
	if code != 0 || taskStatus(stdout, "hostprep is not on this host yet") != "changed" || taskStatus(stdout, "hostprep ready --dry-run") != "skipping" {
		t.Errorf("without hostprep on the host: exit %d\n%s", code, stdout)
	}
}
