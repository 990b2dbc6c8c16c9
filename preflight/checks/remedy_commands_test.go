package checks

import (
	"cmp"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/preflight/facts"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
)

// Every hostprep tune command a remedy names runs as printed and does
// what it says: in backquotes, shell-quoted, naming the profile as
// --profile took it (a file's path with a space and a quote in it, a
// built-in's name, or PROFILE without one); its --set overrides load with
// that profile into one the profile rules accept (a nofile hard limit
// comes with the fs.nr_open it needs), and none of them lowers a value
// the profile has. Field cases: remedies said "hostprep tune apply
// --profile P --set kernel.threads-max=N" and "hostprep tune apply with
// fs.nr_open 1048576", which no shell runs; then 22 of 56 printed
// commands were refused by tune plan (limits.nofile.hard=2020140 above
// the iotdb profile's fs.nr_open), fs.nr_open=2020000 lowered
// mqtt-broker-1m's 2097152, limits.nofile.hard=4096 (a process's own hard
// limit) lowered its 2097152, and fd.nr_open asked for less than fd.hard
// (it left out the files the DataNode holds).
func TestTuneRemediesRunAsPrinted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my profiles")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "it's iotdb.yaml")
	if err := os.WriteFile(file, []byte("name: mine\ninclude: [iotdb]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// PROFILE stands for the user's own: its sets are checked with a
	// profile that has no value of its own
	bare := filepath.Join(dir, "bare.yaml")
	if err := os.WriteFile(bare, []byte("name: bare\npreflight: {sockets: 1, role: broker}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hosts := []struct {
		yaml string
		tg   facts.Target
	}{
		{`sysctl: {fs.nr_open: "1048576", fs.file-max: "200000", fs.file-nr: "150000 0 200000", net.ipv4.tcp_max_orphans: "100"}
sockstat: {orphan: 150}
target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 524288}`, facts.Target{Sockets: 2000000, Role: facts.Loadgen}},
		{`target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 2048}`, facts.Target{Sockets: 50000, Role: facts.Loadgen}},
		{`target_process: {pid: 4242, managed_by: shell, nofile_soft: 1024, nofile_hard: 4096}`, facts.Target{Sockets: 3000, Role: facts.Broker}},
		{`sysctl: {fs.nr_open: "1048576"}
target_process: {pid: 3022, managed_by: shell, nofile_soft: 1048576, nofile_hard: 1048576, held_fds: 140}`, facts.Target{Sockets: 2000000, Role: facts.IoTDB}},
		{`sysctl: {kernel.pid_max: "4000", kernel.threads-max: "192730"}
host_tasks: 250
target_process: {pid: 3022, managed_by: shell, nofile_soft: 1048576, nofile_hard: 1048576, threads: 70}`, facts.Target{Sockets: 5000, Role: facts.IoTDB}},
		{`sysctl: {kernel.pid_max: "4194304", kernel.threads-max: "3000"}
host_tasks: 250
target_process: {pid: 3022, managed_by: shell, nofile_soft: 1048576, nofile_hard: 1048576, threads: 70}`, facts.Target{Sockets: 5000000, Role: facts.IoTDB}},
		// tune refuses a hard limit above the host's fs.file-max too, and
		// judges fs.nr_open at boot: a live 5000000 may be gone then
		{`sysctl: {fs.file-max: "2466170", fs.nr_open: "5000000"}
target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 4096}`, facts.Target{Sockets: 5000000, Role: facts.Loadgen}},
		{`sysctl: {fs.nr_open: "5000000"}
target_process: {managed_by: shell, nofile_soft: 1024, nofile_hard: 4096}`, facts.Target{Sockets: 2000000, Role: facts.Loadgen}},
	}
	cmdRE := regexp.MustCompile("`(hostprep tune [^`]*)`")
	seen := map[string]bool{} // the --set keys the remedies used
	for _, pr := range []struct {
		ref  string
		sets []string // preflight's own --set, which the remedies repeat
	}{{file, nil}, {"mqtt-broker-1m", nil}, {"ready-small", nil}, {"", nil},
		{"loadgen", []string{"fs.nr_open=3000000", "limits.nofile.hard=3000000", "fs.file-max=3000000"}},
		{"ready-small", []string{"limits.nofile.soft=1000"}}} {
		ref, base := pr.ref, pr.ref
		if ref == "" {
			base = bare
		}
		p0, err := profiles.Load(base, pr.sets)
		if err != nil {
			t.Fatalf("profile %s: %v", base, err)
		}
		pt, err := facts.TargetFromProfile(p0)
		if err != nil {
			t.Fatal(err)
		}
		if ref == "" {
			pt = facts.Target{}
		}
		for _, h := range hosts {
			f := host(t, h.yaml)
			tg := pt
			tg.Sockets, tg.Role = h.tg.Sockets, h.tg.Role
			if err := tg.Validate(); err != nil {
				t.Fatal(err)
			}
			hardSet, nrOpenSet := int64(0), int64(0)
			for _, c := range Evaluate(f, tg) {
				if strings.Contains(cmdRE.ReplaceAllString(c.Remedy, ""), "hostprep tune") {
					t.Errorf("%s names a tune command outside backquotes: %s", c.ID, c.Remedy)
				}
				for _, m := range cmdRE.FindAllStringSubmatch(c.Remedy, -1) {
					args := shellWords(t, m[1])
					if len(args) < 3 || args[0] != "hostprep" || args[1] != "tune" {
						t.Errorf("%s: %q is not `hostprep tune VERB ...`", c.ID, m[1])
						continue
					}
					if args[2] == "verify" {
						if !slices.Equal(args, []string{"hostprep", "tune", "verify", "--boot"}) {
							t.Errorf("%s: %q: tune verify --boot takes no profile (it judges the last apply)", c.ID, m[1])
						}
						continue
					}
					i := slices.Index(args, "--profile")
					if i < 0 || i+1 >= len(args) || args[i+1] != cmp.Or(ref, "PROFILE") {
						t.Errorf("%s: %q does not name the profile %q", c.ID, m[1], cmp.Or(ref, "PROFILE"))
						continue
					}
					var sets []string
					for j := range args {
						if args[j] == "--set" && j+1 < len(args) {
							sets = append(sets, args[j+1])
						}
					}
					for _, s := range pr.sets {
						if !overridden(s, sets) {
							t.Errorf("%s: %q does not repeat preflight's --set %q", c.ID, m[1], s)
						}
					}
					p, err := profiles.Load(base, sets)
					if err != nil {
						t.Errorf("%s with profile %s: tune refuses %q: %v", c.ID, base, m[1], err)
						continue
					}
					for _, s := range sets {
						key, val, _ := strings.Cut(s, "=")
						seen[key] = true
						n, _ := strconv.ParseInt(val, 10, 64)
						if c.ID == "fd.nr_open" && key == "fs.nr_open" {
							nrOpenSet = n
						}
						if c.ID == "fd.hard" && key == "limits.nofile.hard" {
							hardSet = n
						}
						if was := profileValue(p0, key); was > n {
							t.Errorf("%s: %q lowers %s of profile %s from %d to %d", c.ID, m[1], key, base, was, n)
						}
						if now := profileValue(p, key); now != n {
							t.Errorf("%s: %q: %s is %d after loading, not %d", c.ID, m[1], key, now, n)
						}
					}
					// tune's own rules with the host: a hard limit above
					// the host's fs.file-max, or above fs.nr_open at boot
					// (the default where the profile sets none), is refused
					if hard := profileValue(p, "limits.nofile.hard"); hard > 0 {
						if fm, ok := f.SysInt("fs.file-max"); ok && hard > fm && profileValue(p, "fs.file-max") < hard {
							t.Errorf("%s: %q: hard %d above the host's fs.file-max %d, and no fs.file-max to match", c.ID, m[1], hard, fm)
						}
						if nr := profileValue(p, "fs.nr_open"); hard > max(nr, int64(profiles.DefaultNrOpen)) {
							t.Errorf("%s: %q: hard %d above fs.nr_open at boot (%d)", c.ID, m[1], hard, max(nr, int64(profiles.DefaultNrOpen)))
						}
					}
				}
				if c.ID == "iotdb.threads" && tg.Role == facts.IoTDB && tg.Sockets == 5000000 && !(strings.Contains(c.Remedy, "kernel.threads-max=") && strings.Contains(c.Remedy, "kernel.pid_max=4194304") && strings.Contains(c.Remedy, "even then it leaves room for only")) {
					t.Errorf("iotdb.threads for 5M sessions names not every bound short of them: %s", c.Remedy)
				}
			}
			if hardSet > 0 && nrOpenSet > 0 && nrOpenSet < hardSet {
				t.Errorf("profile %s, %d sockets: fd.nr_open asks for fs.nr_open %d, below the hard limit %d fd.hard asks for", base, tg.Sockets, nrOpenSet, hardSet)
			}
		}
	}
	for _, key := range []string{"fs.nr_open", "fs.file-max", "net.ipv4.tcp_max_orphans", "limits.nofile.soft", "limits.nofile.hard", "kernel.pid_max", "kernel.threads-max"} {
		if !seen[key] {
			t.Errorf("no remedy set %s: the hosts above no longer reach that remedy (saw %v)", key, seen)
		}
	}
}

// A unit under systemd whose LimitNOFILE falls short, with a profile
// whose systemd.services has the unit and a LimitNOFILE that covers the
// target: the remedy applies that profile as it is. It said to give the
// profile systemd.limit_nofile {soft: 101000, hard: 101000}, less than
// mqtt-broker-1m's 2097152.
func TestSystemdRemedyKeepsTheProfilesLimit(t *testing.T) {
	p, err := profiles.Load("mqtt-broker-1m", nil)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := facts.TargetFromProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	tg.Sockets = 100000
	if err := tg.Validate(); err != nil {
		t.Fatal(err)
	}
	f := host(t, `target_process: {managed_by: systemd, unit: mosquitto.service, nofile_soft: 4096, nofile_hard: 4096}`)
	f.Systemd.Running = true
	for _, id := range []string{"fd.soft", "fd.hard"} {
		c := testenv.CheckByID(t, Evaluate(f, tg), id)
		if !strings.Contains(c.Remedy, "`hostprep tune apply --profile mqtt-broker-1m`, whose LimitNOFILE for mosquitto.service is 2097152:2097152") ||
			strings.Contains(c.Remedy, "give the profile") || !strings.Contains(c.Remedy, "`hostprep tune verify --boot`") {
			t.Errorf("%s remedy: %s", id, c.Remedy)
		}
	}
}

// overridden says whether sets has the key of s (s itself, or a value
// for the same key that the remedy asks for instead).
func overridden(s string, sets []string) bool {
	k, _, _ := strings.Cut(s, "=")
	return slices.ContainsFunc(sets, func(x string) bool { return strings.HasPrefix(x, k+"=") })
}

// profileValue is the number p has for a --set key (0: none).
func profileValue(p *profiles.Profile, key string) int64 {
	switch key {
	case "limits.nofile.soft", "limits.nofile.hard":
		if p.Limits.Nofile == nil {
			return 0
		}
		if key == "limits.nofile.soft" {
			return int64(p.Limits.Nofile.Soft)
		}
		return int64(p.Limits.Nofile.Hard)
	}
	n, _ := strconv.ParseInt(p.Sysctl[key].Value, 10, 64)
	return n
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
