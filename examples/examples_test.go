package examples

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"gopkg.in/yaml.v3"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parseYAML(t *testing.T, path string, v any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(read(t, path)), v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// needTool skips when a tool is missing locally and fails in CI, where
// scripts/test.sh installs it.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		msg := name + " is not installed: apt-get install -y " + pkg
		if testenv.InCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// task is one Ansible task; yaml.v3 decodes nested mappings as task too.
type task map[string]any

func (tk task) str(k string) string {
	s, _ := tk[k].(string)
	return s
}

// commandOf returns the command line of a command/shell task.
func commandOf(tk task) string {
	for _, m := range []string{"ansible.builtin.command", "ansible.builtin.shell", "command", "shell"} {
		switch v := tk[m].(type) {
		case string:
			return v
		case task:
			if c, ok := v["cmd"].(string); ok {
				return c
			}
		}
	}
	return ""
}

func TestAnsiblePlaybookStructure(t *testing.T) {
	var plays []struct {
		Hosts string         `yaml:"hosts"`
		Vars  map[string]any `yaml:"vars"`
		Tasks []task         `yaml:"tasks"`
	}
	parseYAML(t, "ansible/hostprep-ready.yml", &plays)
	if len(plays) == 0 {
		t.Fatal("no plays")
	}
	var ready, merge task
	for _, p := range plays {
		for _, tk := range p.Tasks {
			c := commandOf(tk)
			switch {
			case strings.Contains(c, " ready ") && !strings.Contains(c, "--dry-run"):
				ready = tk
			case strings.Contains(c, " report merge "):
				merge = tk
			}
		}
	}
	if ready == nil {
		t.Fatal("no command task runs `hostprep ready`")
	}
	if c := commandOf(ready); !strings.Contains(c, "--output json") {
		t.Errorf("ready task %q: want --output json so changed_when can read the result", c)
	}
	reg := ready.str("register")
	if reg == "" {
		t.Fatal("ready task does not register its result")
	}
	cw := ready.str("changed_when")
	if !strings.Contains(cw, reg+".stdout") || !strings.Contains(cw, "from_json") || !strings.Contains(cw, ".changed") {
		t.Errorf("changed_when %q: want it read .changed from the JSON on %s.stdout", cw, reg)
	}
	if fw := ready.str("failed_when"); !strings.Contains(fw, reg+".rc") {
		t.Errorf("failed_when %q: want it decided by %s.rc", fw, reg)
	}
	if merge == nil {
		t.Fatal("no task runs `hostprep report merge` over the hosts' results")
	}
	// The merge runs on the control node with the binary the play copies
	// from there, not a `hostprep` that may not be on its PATH.
	if c := commandOf(merge); !strings.HasPrefix(c, "{{ hostprep_merge_binary") {
		t.Errorf("merge task %q: want it to run {{ hostprep_merge_binary }} (default hostprep_binary), not hostprep from PATH", c)
	}
	// Ansible resolves a relative copy src next to the playbook, so the
	// default binary and every documented hostprep_binary are absolute.
	if b, _ := plays[0].Vars["hostprep_binary"].(string); !strings.HasPrefix(b, "/") {
		t.Errorf("default hostprep_binary %q: want an absolute path (a relative one is looked up next to the playbook)", b)
	}
	for _, f := range []string{"ansible/hostprep-ready.yml", "README.md"} {
		for _, m := range regexp.MustCompile(`hostprep_binary=(\S+)`).FindAllStringSubmatch(read(t, f), -1) {
			if !strings.HasPrefix(m[1], "/") && !strings.HasPrefix(m[1], "$PWD/") {
				t.Errorf("%s documents hostprep_binary=%s: want an absolute path ($PWD/hostprep)", f, m[1])
			}
		}
	}
}

func TestAnsiblePlaybookSyntax(t *testing.T) {
	bin := needTool(t, "ansible-playbook", "ansible-core")
	cmd := exec.Command(bin, "--syntax-check", "-i", "ansible/inventory.ini", "ansible/hostprep-ready.yml")
	cmd.Env = append(os.Environ(), "ANSIBLE_LOCAL_TEMP="+t.TempDir(), "ANSIBLE_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("ansible-playbook --syntax-check: %v\n%s", err, out)
	}
}

// unitTree makes a root for systemd-analyze verify --root: the system's
// own units (so multi-user.target, network-online.target resolve), the
// example units, and, when withBinary, an executable at
// /usr/local/bin/hostprep, which is where ExecStart points.
func unitTree(t *testing.T, withBinary bool) string {
	t.Helper()
	root := t.TempDir()
	sys := filepath.Join(root, "usr/lib/systemd")
	if err := os.MkdirAll(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", "/usr/lib/systemd/system", sys).CombinedOutput(); err != nil {
		t.Skipf("no system units to verify against: %v %s", err, out)
	}
	etc := filepath.Join(root, "etc/systemd/system")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"hostprep-ready.service", "hostprep-ready.timer"} {
		if err := os.WriteFile(filepath.Join(etc, u), []byte(read(t, filepath.Join("systemd", u))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if withBinary {
		bin := filepath.Join(root, "usr/local/bin/hostprep")
		if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func verify(t *testing.T, root string) ([]byte, error) {
	bin := needTool(t, "systemd-analyze", "systemd")
	return exec.Command(bin, "verify", "--root="+root,
		filepath.Join(root, "etc/systemd/system/hostprep-ready.service"),
		filepath.Join(root, "etc/systemd/system/hostprep-ready.timer")).CombinedOutput()
}

func TestSystemdUnitVerifies(t *testing.T) {
	out, err := verify(t, unitTree(t, true))
	if err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Fatalf("systemd-analyze verify: err=%v\n%s", err, out)
	}
	// The same check must notice a unit whose ExecStart does not exist:
	// otherwise the pass above proves nothing.
	out, err = verify(t, unitTree(t, false))
	if err == nil || !strings.Contains(string(out), "/usr/local/bin/hostprep") {
		t.Fatalf("verify without the binary: want a failure naming /usr/local/bin/hostprep, got err=%v\n%s", err, out)
	}
}

func TestSystemdUnitContent(t *testing.T) {
	u := read(t, "systemd/hostprep-ready.service")
	for _, want := range []string{
		"Type=oneshot",
		"After=network-online.target",
		"Wants=network-online.target",
		"ExecStart=/usr/local/bin/hostprep ready ",
		// only checks: drift and its writer are hostprep-verify.service's to report
		" --no-tune ",
		"After=network-online.target systemd-sysctl.service hostprep-verify.service",
		"WantedBy=multi-user.target",
	} {
		if !strings.Contains(u, want) {
			t.Errorf("hostprep-ready.service lacks %q", want)
		}
	}
	// Only references that exist: no invented web address.
	for _, l := range strings.Split(u, "\n") {
		if strings.HasPrefix(l, "Documentation=") {
			t.Errorf("hostprep-ready.service: %q: hostprep installs no documentation to point at; drop it", l)
		}
	}
	if !strings.Contains(read(t, "systemd/hostprep-ready.timer"), "OnBootSec=") {
		t.Error("hostprep-ready.timer has no OnBootSec")
	}
}

func TestCloudInit(t *testing.T) {
	src := read(t, "cloud-init/user-data.yaml")
	if !strings.HasPrefix(src, "#cloud-config\n") {
		t.Fatal("user-data must start with #cloud-config, or cloud-init ignores it")
	}
	var doc struct {
		WriteFiles []struct {
			Path        string `yaml:"path"`
			Permissions string `yaml:"permissions"`
			Content     string `yaml:"content"`
		} `yaml:"write_files"`
		Runcmd []any `yaml:"runcmd"`
	}
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("user-data: %v", err)
	}
	files := map[string]string{}
	for _, f := range doc.WriteFiles {
		files[f.Path] = f.Content
	}
	// The units written at boot are the ones systemd-analyze verified.
	for _, u := range []string{"hostprep-ready.service", "hostprep-ready.timer"} {
		got, ok := files["/etc/systemd/system/"+u]
		if !ok {
			t.Errorf("write_files does not install %s", u)
		} else if got != read(t, filepath.Join("systemd", u)) {
			t.Errorf("write_files' %s differs from examples/systemd/%s", u, u)
		}
	}
	var cmds []string
	for _, c := range doc.Runcmd {
		switch v := c.(type) {
		case string:
			cmds = append(cmds, v)
		case []any:
			var parts []string
			for _, p := range v {
				parts = append(parts, p.(string))
			}
			cmds = append(cmds, strings.Join(parts, " "))
		}
	}
	all := strings.Join(cmds, "\n")
	for _, want := range []string{"hostprep-install", "hostprep tune apply --profile", "--verify-at-boot", "systemctl start hostprep-verify.timer", "hostprep ready --profile", "systemctl enable hostprep-ready.service"} {
		if !strings.Contains(all, want) {
			t.Errorf("runcmd does not run %q:\n%s", want, all)
		}
	}
	if strings.Index(all, "hostprep-install") > strings.Index(all, "hostprep tune apply") {
		t.Error("runcmd runs hostprep before installing it")
	}
	if sh, err := exec.LookPath("sh"); err == nil {
		if out, err := exec.Command(sh, "-n", "-c", files["/usr/local/sbin/hostprep-install"]).CombinedOutput(); err != nil {
			t.Errorf("hostprep-install is not valid sh: %v %s", err, out)
		}
	}
	if ci, err := exec.LookPath("cloud-init"); err == nil {
		if out, err := exec.Command(ci, "schema", "--config-file", "cloud-init/user-data.yaml").CombinedOutput(); err != nil {
			t.Errorf("cloud-init schema: %v\n%s", err, out)
		}
	}
}

var junitFlag = regexp.MustCompile(`--junit\s+(\S+)`)

func TestGitLabCI(t *testing.T) {
	var jobs map[string]yaml.Node
	parseYAML(t, "ci/gitlab-ci.yml", &jobs)
	type job struct {
		Stage     string   `yaml:"stage"`
		Needs     []string `yaml:"needs"`
		Script    []string `yaml:"script"`
		Artifacts struct {
			When    string   `yaml:"when"`
			Paths   []string `yaml:"paths"`
			Reports struct {
				JUnit string `yaml:"junit"`
			} `yaml:"reports"`
		} `yaml:"artifacts"`
	}
	var stages []string
	if n, ok := jobs["stages"]; ok {
		if err := n.Decode(&stages); err != nil {
			t.Fatal(err)
		}
	}
	var readyName, junit string
	var ready job
	all := map[string]job{}
	for name, n := range jobs {
		var j job
		if n.Kind != yaml.MappingNode || n.Decode(&j) != nil {
			continue
		}
		all[name] = j
		for _, s := range j.Script {
			if strings.Contains(s, "hostprep ready") {
				readyName, ready = name, j
				if m := junitFlag.FindStringSubmatch(s); m != nil {
					junit = m[1]
				}
			}
		}
	}
	if readyName == "" {
		t.Fatal("no job runs hostprep ready")
	}
	if junit == "" {
		t.Fatal("the hostprep ready job writes no --junit file")
	}
	if ready.Artifacts.Reports.JUnit != junit {
		t.Errorf("artifacts:reports:junit is %q, want the --junit file %q", ready.Artifacts.Reports.JUnit, junit)
	}
	if ready.Artifacts.When != "always" {
		t.Errorf("artifacts:when is %q: a NOT READY host's JUnit must be kept too (always)", ready.Artifacts.When)
	}
	gated := false
	for name, j := range all {
		if name == readyName {
			continue
		}
		for _, n := range j.Needs {
			gated = gated || n == readyName
		}
	}
	if !gated {
		t.Errorf("no job needs %s: the load test is not gated on it", readyName)
	}
}

func TestGitHubActions(t *testing.T) {
	var wf struct {
		Name string `yaml:"name"`
		On   any    `yaml:"on"`
		Jobs map[string]struct {
			Needs  any `yaml:"needs"`
			RunsOn any `yaml:"runs-on"`
			Steps  []struct {
				Name  string            `yaml:"name"`
				If    string            `yaml:"if"`
				Uses  string            `yaml:"uses"`
				Run   string            `yaml:"run"`
				Shell string            `yaml:"shell"`
				With  map[string]string `yaml:"with"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	parseYAML(t, "ci/github-actions.yml", &wf)
	if wf.On == nil || len(wf.Jobs) == 0 {
		t.Fatal("workflow has no trigger or no jobs")
	}
	var readyJob, junit string
	for name, j := range wf.Jobs {
		if j.RunsOn == nil {
			t.Errorf("job %s has no runs-on", name)
		}
		for _, s := range j.Steps {
			if strings.Contains(s.Run, "hostprep ready") {
				readyJob = name
				if m := junitFlag.FindStringSubmatch(s.Run); m != nil {
					junit = m[1]
				}
			}
		}
	}
	if readyJob == "" || junit == "" {
		t.Fatalf("no step runs hostprep ready --junit FILE (job %q, junit %q)", readyJob, junit)
	}
	uploaded := false
	for _, s := range wf.Jobs[readyJob].Steps {
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			uploaded = strings.Contains(s.With["path"], junit)
			if s.If != "always()" {
				t.Errorf("upload step runs if %q: want always(), so a NOT READY host's JUnit is kept", s.If)
			}
		}
	}
	if !uploaded {
		t.Errorf("job %s does not upload %s as an artifact", readyJob, junit)
	}
	gated := false
	for name, j := range wf.Jobs {
		switch n := j.Needs.(type) {
		case string:
			gated = gated || (n == readyJob && name != readyJob)
		case []any:
			for _, x := range n {
				gated = gated || x == readyJob
			}
		}
	}
	if !gated {
		t.Errorf("no job needs %s: the load test is not gated on it", readyJob)
	}
}

// TestCloudInitUnitsByteIdentical: the units cloud-init writes are
// byte-for-byte examples/systemd/ (examples/README.md says so), read the
// way cloud-init reads user-data (PyYAML, when python3 has it) as well as
// with yaml.v3: same length, same last bytes, exactly one final newline.
func TestCloudInitUnitsByteIdentical(t *testing.T) {
	var doc struct {
		WriteFiles []struct {
			Path    string `yaml:"path"`
			Content string `yaml:"content"`
		} `yaml:"write_files"`
	}
	parseYAML(t, "cloud-init/user-data.yaml", &doc)
	contents := map[string]string{}
	for _, f := range doc.WriteFiles {
		contents[f.Path] = f.Content
	}
	var py map[string]string
	if out, err := exec.Command("python3", "-c", `import json, sys, yaml
d = yaml.safe_load(open("cloud-init/user-data.yaml"))
json.dump({f["path"]: f["content"] for f in d["write_files"]}, sys.stdout)`).Output(); err == nil {
		if err := json.Unmarshal(out, &py); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("python3 with PyYAML not available (%v): yaml.v3 only", err)
	}
	for _, u := range []string{"hostprep-ready.service", "hostprep-ready.timer"} {
		want := read(t, filepath.Join("systemd", u))
		if !strings.HasSuffix(want, "\n") || strings.HasSuffix(want, "\n\n") {
			t.Errorf("examples/systemd/%s: want exactly one final newline", u)
		}
		for parser, got := range map[string]string{"yaml.v3": contents["/etc/systemd/system/"+u], "PyYAML": py["/etc/systemd/system/"+u]} {
			if parser == "PyYAML" && py == nil {
				continue
			}
			if got != want {
				t.Errorf("%s: cloud-init's %s (%d bytes, ends %q) != examples/systemd/%s (%d bytes, ends %q)",
					parser, u, len(got), tail(got), u, len(want), tail(want))
			}
		}
	}
}

func tail(s string) string {
	if len(s) > 12 {
		return s[len(s)-12:]
	}
	return s
}
