package boot_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/hostprep/hostprep/tune/boot"
)

// TestManagerOracle draws random system.conf and system.conf.d drop-in
// sets (names across /etc, /run, /usr/local/lib, /usr/lib, shadowing,
// empty files, lines outside [Manager]) and requires boot.ManagerNofile to read
// the files systemd-analyze cat-config lists, in its order, and to take
// the last DefaultLimitNOFILE= of its merged output.
func TestManagerOracle(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("no systemd-analyze")
	}
	dirs := []string{"/etc/systemd/system.conf.d", "/run/systemd/system.conf.d", "/usr/local/lib/systemd/system.conf.d", "/usr/lib/systemd/system.conf.d"}
	rapid.Check(t, func(rt *rapid.T) {
		root := t.TempDir()
		write := func(p, body string) {
			must(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
			must(t, os.WriteFile(filepath.Join(root, p), []byte(body), 0o644))
		}
		val := func() string {
			return rapid.SampledFrom([]string{"1024:524288", "65536", "1024:2097152", "infinity", "4096:8192"}).Draw(rt, "v")
		}
		if rapid.Bool().Draw(rt, "main") {
			write("/etc/systemd/system.conf", "[Manager]\n#DefaultLimitNOFILE=1\nDefaultLimitNOFILE="+val()+"\n")
		}
		for i, n := 0, rapid.IntRange(0, 6).Draw(rt, "n"); i < n; i++ {
			p := filepath.Join(rapid.SampledFrom(dirs).Draw(rt, "dir"), rapid.SampledFrom([]string{"10-a.conf", "60-hostprep.conf", "99-z.conf", "A.conf", "x.conf.bak"}).Draw(rt, "name"))
			if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
				continue
			}
			// No /dev/null links here: under --root systemd-analyze resolves
			// them inside the root, where there is no /dev/null (the
			// sysctl oracle covers masks with the real systemd-sysctl).
			switch rapid.IntRange(1, 5).Draw(rt, "kind") {
			case 1:
				write(p, "")
			case 2:
				write(p, "[Service]\nDefaultLimitNOFILE="+val()+"\n")
			default:
				write(p, fmt.Sprintf("[Manager]\nDefaultLimitNOFILE=%s\n", val()))
			}
		}
		out, err := exec.Command("systemd-analyze", "cat-config", "--no-pager", "--root="+root, "systemd/system.conf").Output()
		if err != nil {
			rt.Skip("cat-config: ", err) // no file at all
		}
		var listed []string
		last, section := "", ""
		for _, l := range strings.Split(string(out), "\n") {
			switch {
			case strings.HasPrefix(l, "# /"):
				listed = append(listed, strings.TrimPrefix(strings.TrimPrefix(l, "# "), root))
			case strings.HasPrefix(l, "["):
				section = l
			case section == "[Manager]" && strings.HasPrefix(l, "DefaultLimitNOFILE="):
				last = strings.TrimPrefix(l, "DefaultLimitNOFILE=")
			}
		}
		m, files, err := boot.ManagerNofile(root)
		if err != nil {
			rt.Fatal(err)
		}
		var read []string
		for _, f := range files {
			if _, err := os.Stat(filepath.Join(root, f.Path)); err == nil && !f.Masked {
				read = append(read, f.Path)
			}
		}
		if strings.Join(read, " ") != strings.Join(listed, " ") {
			rt.Fatalf("cat-config reads %v, simulation %v", listed, read)
		}
		want := "1024:524288" // systemd's default
		if last != "" {
			want = last
			if !strings.Contains(want, ":") {
				want = want + ":" + want
			}
		}
		if m.String() != want {
			rt.Fatalf("DefaultLimitNOFILE: cat-config's last %q, simulation %s at %s", last, m.String(), m.Where())
		}
	})
}

// TestEmptyLimitIsIgnored: "LimitNOFILE=" in a drop-in and
// "DefaultLimitNOFILE=" in a system.conf drop-in do not reset the value
// set before them: systemd rejects the empty value and ignores the line,
// as systemd-analyze verify prints.
func TestEmptyLimitIsIgnored(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"etc/systemd/system/x.service":                 "[Service]\nExecStart=/bin/true\nLimitNOFILE=4096:8192\n",
		"etc/systemd/system/x.service.d/99-admin.conf": "[Service]\nLimitNOFILE=\n",
		"etc/systemd/system.conf":                      "[Manager]\nDefaultLimitNOFILE=2048:65536\n",
		"etc/systemd/system.conf.d/99-admin.conf":      "[Manager]\nDefaultLimitNOFILE=\n",
	}
	for p, body := range files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, p), []byte(body), 0o644))
	}
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		out, _ := exec.Command("systemd-analyze", "verify", "--root="+root, "x.service").CombinedOutput()
		if !strings.Contains(string(out), "99-admin.conf:2: Failed to parse resource value, ignoring") {
			t.Errorf("systemd-analyze verify no longer ignores an empty LimitNOFILE=:\n%s", out)
		}
	}
	u, _, err := boot.UnitNofile(root, "x")
	must(t, err)
	if u.String() != "4096:8192" {
		t.Errorf("unit LimitNOFILE after an empty assignment: %s at %s, want 4096:8192 from the unit file", u.String(), u.Where())
	}
	m, _, err := boot.ManagerNofile(root)
	must(t, err)
	if m.String() != "2048:65536" {
		t.Errorf("DefaultLimitNOFILE after an empty assignment: %s at %s, want 2048:65536 from system.conf", m.String(), m.Where())
	}
}
