package preflight

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// Every hostprep tune command a remedy names runs as printed: in
// backquotes, shell-quoted, naming the profile as --profile took it (a
// file's path with a space in it, or PROFILE without one), and with --set
// overrides that the profile loader accepts. A field case: remedies said
// "hostprep tune apply --profile P --set kernel.threads-max=N" and
// "hostprep tune apply with fs.nr_open 1048576", which no shell runs.
func TestTuneRemediesRunAsPrinted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my profiles")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "it's iotdb.yaml")
	if err := os.WriteFile(file, []byte("name: mine\ninclude: [iotdb]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := profiles.Load(file, nil); err != nil {
		t.Fatalf("the test's own profile does not load: %v", err)
	}
	hosts := []struct {
		yaml string
		tg   Target
	}{
		{`sysctl: {fs.nr_open: "1048576", fs.file-max: "200000", fs.file-nr: "150000 0 200000", net.ipv4.tcp_max_orphans: "100"}
sockstat: {orphan: 150}
target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 524288}`, Target{Sockets: 2000000, Role: Loadgen}},
		{`target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 2048}`, Target{Sockets: 50000, Role: Loadgen}},
		{`sysctl: {kernel.pid_max: "4000", kernel.threads-max: "192730"}
host_tasks: 250
target_process: {pid: 3022, managed_by: shell, nofile_soft: 1048576, nofile_hard: 1048576, threads: 70}`, Target{Sockets: 5000, Role: IoTDB}},
		{`sysctl: {kernel.pid_max: "4194304", kernel.threads-max: "3000"}
host_tasks: 250
target_process: {pid: 3022, managed_by: shell, nofile_soft: 1048576, nofile_hard: 1048576, threads: 70}`, Target{Sockets: 5000, Role: IoTDB}},
	}
	cmdRE := regexp.MustCompile("`(hostprep tune [^`]*)`")
	seen := map[string]bool{} // the --set keys the remedies used
	for _, profile := range []string{file, ""} {
		for _, h := range hosts {
			f := host(t, h.yaml)
			tg := h.tg
			tg.Profile = profile
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, c := range Evaluate(f, tg) {
				bare := cmdRE.ReplaceAllString(c.Remedy, "")
				if strings.Contains(bare, "hostprep tune") {
					t.Errorf("%s names a tune command outside backquotes: %s", c.ID, c.Remedy)
				}
				for _, m := range cmdRE.FindAllStringSubmatch(c.Remedy, -1) {
					args := shellWords(t, m[1])
					i := slices.Index(args, "--profile")
					if len(args) < 3 || args[0] != "hostprep" || args[1] != "tune" || i < 0 || i+1 >= len(args) {
						t.Errorf("%s: %q is not `hostprep tune VERB --profile REF ...`", c.ID, m[1])
						continue
					}
					want := file
					if profile == "" {
						want = "PROFILE"
					}
					if args[i+1] != want {
						t.Errorf("%s: %q names profile %q, want %q", c.ID, m[1], args[i+1], want)
					}
					var sets []string
					for j := range args {
						if args[j] == "--set" && j+1 < len(args) {
							sets = append(sets, args[j+1])
							key, _, _ := strings.Cut(args[j+1], "=")
							seen[key] = true
						}
					}
					if _, err := profiles.Load(file, sets); err != nil {
						t.Errorf("%s: the sets of %q are refused: %v", c.ID, m[1], err)
					}
				}
			}
		}
	}
	for _, key := range []string{"fs.nr_open", "fs.file-max", "net.ipv4.tcp_max_orphans", "limits.nofile.soft", "limits.nofile.hard", "kernel.pid_max", "kernel.threads-max"} {
		if !seen[key] {
			t.Errorf("no remedy set %s: the hosts above no longer reach that remedy (saw %v)", key, seen)
		}
	}
}

// shellWords splits line as sh does.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	out, err := exec.Command("sh", "-c", "set -- "+line+`; for a in "$@"; do printf '%s\0' "$a"; done`).Output()
	if err != nil {
		t.Fatalf("sh does not read %q: %v", line, err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}
