package hostconf_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// The field case later-sysctl-file-wins-at-boot: the old script's lines in
// /etc/sysctl.conf (Debian's /etc/sysctl.d/99-sysctl.conf link) and a
// vendor file sort after 60-hostprep.conf and win at boot.
func TestSysctlLaterFileWins(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/etc/sysctl.conf":                 "net.core.somaxconn = 1024\nfs.file-max = 1000000\n",
		"/etc/sysctl.d/99-sysctl.conf":     "symlink to ../sysctl.conf",
		"/etc/sysctl.d/60-hostprep.conf":   "net.core.somaxconn = 32768\nfs.file-max = 2097152\nnet.ipv4.tcp_fin_timeout = 15\n",
		"/usr/lib/sysctl.d/99-vendor.conf": "net.core.somaxconn = 512\n",
		"/usr/lib/systemd/systemd-sysctl":  "",
	})
	s, err := hostconf.ReadSysctlWith(root, hostconf.SystemdSysctl)
	must(t, err)
	for key, want := range map[string]string{"net.core.somaxconn": "512 /usr/lib/sysctl.d/99-vendor.conf:1", "fs.file-max": "1000000 /etc/sysctl.conf (as /etc/sysctl.d/99-sysctl.conf):2", "net.ipv4.tcp_fin_timeout": "15 /etc/sysctl.d/60-hostprep.conf:3"} {
		set, ok := s.Lookup(key)
		if got := set.Value + " " + set.Where(); !ok || got != want {
			t.Errorf("%s at boot: %q (set %v), want %q", key, got, ok, want)
		}
	}
	// procps reads /etc/sysctl.conf once more at the end.
	p, err := hostconf.ReadSysctlWith(root, hostconf.ProcpsSystem)
	must(t, err)
	if set, _ := p.Lookup("net.core.somaxconn"); set.Value != "1024" || set.File.Path != "/etc/sysctl.conf" {
		t.Errorf("procps somaxconn: %+v", set)
	}
	if v, f, l, ok := hostconf.SysctlAtBoot(root, "net/core/somaxconn"); !ok || v != "512" || l != 1 || !strings.HasSuffix(f, "99-vendor.conf") {
		t.Errorf("SysctlAtBoot: %q %q %d %v", v, f, l, ok)
	}
}

func TestNofileAtBootDomains(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/etc/passwd":               "root:x:0:0::/root:/bin/sh\nmqtt:x:1000:1000::/home/mqtt:/bin/sh\n",
		"/etc/group":                "root:x:0:\nmqtt:x:1000:\nbrokers:x:2000:mqtt\n",
		"/etc/security/limits.conf": "mqtt soft nofile 30000 # user line beats everything below\n",
		"/etc/security/limits.d/60-hostprep.conf": "* soft nofile 1024\n* hard nofile 1048576\nroot hard nofile 1048576\n",
		"/etc/security/limits.d/90-local.conf":    "@brokers hard nofile 20000\n* hard nofile 4096\n",
	})
	n, err := hostconf.NofileAtBoot(root, "mqtt")
	must(t, err)
	if n.Soft.Value != 30000 || n.Soft.Domain != "mqtt" || n.Hard.Value != 20000 || n.Hard.Domain != "@brokers" || n.Hard.Line != 1 {
		t.Errorf("mqtt: soft %+v hard %+v", n.Soft, n.Hard)
	}
	r, err := hostconf.NofileAtBoot(root, "root")
	must(t, err)
	if r.Soft.Set || r.Hard.Value != 1048576 || !strings.HasSuffix(r.Hard.Where(), "60-hostprep.conf:3") {
		t.Errorf("root: soft %+v hard %+v", r.Soft, r.Hard)
	}
	o, err := hostconf.NofileAtBoot(root, "nobody")
	must(t, err)
	if o.Hard.Value != 4096 || !strings.HasSuffix(o.Hard.Where(), "90-local.conf:2") {
		t.Errorf("nobody: hard %+v (the later * line wins)", o.Hard)
	}
}

func TestManagerAndUnitNofile(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/etc/systemd/system.conf":                            "[Manager]\n#DefaultLimitNOFILE=1024:524288\n",
		"/etc/systemd/system.conf.d/60-hostprep.conf":         "[Manager]\nDefaultLimitNOFILE=1024:2097152\n",
		"/usr/lib/systemd/system.conf.d/70-vendor.conf":       "[Manager]\nDefaultLimitNOFILE=65536\n",
		"/usr/lib/systemd/system.conf.d/60-hostprep.conf":     "[Manager]\nDefaultLimitNOFILE=1\n",
		"/usr/lib/systemd/system/emqx.service":                "[Service]\nExecStart=/bin/true\nLimitNOFILE=1048576\n",
		"/etc/systemd/system/emqx.service.d/60-hostprep.conf": "[Service]\nLimitNOFILE=2097152:2097152\n",
		"/usr/lib/systemd/system/plain.service":               "[Service]\nExecStart=/bin/true\n",
	})
	m, files, err := hostconf.ManagerNofile(root)
	must(t, err)
	if m.String() != "65536:65536" || !strings.HasSuffix(m.Where(), "70-vendor.conf:2") || len(files) != 3 {
		t.Errorf("manager: %v at %s, files %v", m, m.Where(), files)
	}
	u, _, err := hostconf.UnitNofile(root, "emqx")
	must(t, err)
	if u.String() != "2097152:2097152" || !strings.HasSuffix(u.Where(), "emqx.service.d/60-hostprep.conf:2") {
		t.Errorf("emqx: %v at %s", u, u.Where())
	}
	p, _, err := hostconf.UnitNofile(root, "plain.service")
	must(t, err)
	if p != m {
		t.Errorf("plain.service: %v, want the manager default %v", p, m)
	}
	// systemd-analyze cat-config reads the same files in the same order.
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("no systemd-analyze")
	}
	out, err := exec.Command("systemd-analyze", "cat-config", "--no-pager", "--root="+root, "systemd/system.conf").Output()
	must(t, err)
	var got []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "# /") {
			got = append(got, strings.TrimPrefix(strings.TrimPrefix(l, "# "), root))
		}
	}
	var want []string
	for _, f := range files {
		want = append(want, f.Path)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("systemd-analyze cat-config reads %v, simulation %v", got, want)
	}
}

// systemd's drop-in chain (src/shared/dropin.c unit_file_find_dirs).
func TestDropInNames(t *testing.T) {
	for unit, want := range map[string]string{
		"emqx.service":          "emqx.service",
		"foo-bar-waldo.service": "foo-bar-waldo.service foo-bar-.service foo-.service",
		"foo-bar@x.service":     "foo-bar@x.service foo-bar@.service foo-.service foo-@x.service foo-@.service",
		"iotdb@.service":        "iotdb@.service",
		"-lead.service":         "-lead.service",
		"trail-.service":        "trail-.service",
		"a-b-.service":          "a-b-.service a-.service",
	} {
		if got := strings.Join(hostconf.DropInNames(unit), " "); got != want {
			t.Errorf("%s: %s, want %s", unit, got, want)
		}
	}
}

// A unit's LimitNOFILE at boot comes from its template and from drop-ins
// of its dash prefixes too, and a same-named drop-in of the unit's own
// chain in any unit directory hides the type's top-level one (service.d),
// which systemd reads last.
func TestUnitNofileTemplatesPrefixesTopLevel(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/usr/lib/systemd/system/iotdb-datanode@.service":           "[Service]\nExecStart=/bin/true\nLimitNOFILE=65536\n",
		"/usr/lib/systemd/system/iotdb-.service.d/50-limits.conf":   "[Service]\nLimitNOFILE=131072\n",
		"/etc/systemd/system/service.d/50-limits.conf":              "[Service]\nLimitNOFILE=1024\n",
		"/etc/systemd/system/service.d/90-all.conf":                 "[Service]\nLimitNOFILE=4096\n",
		"/usr/lib/systemd/system/iotdb-datanode@.service.d/95.conf": "[Service]\nLimitNOFILE=262144\n",
	})
	u, files, err := hostconf.UnitNofile(root, "iotdb-datanode@a")
	must(t, err)
	if u.String() != "262144:262144" || !strings.HasSuffix(u.Where(), "iotdb-datanode@.service.d/95.conf:2") {
		t.Errorf("instance: %v at %s (files %v)", u, u.Where(), files)
	}
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	want := "/usr/lib/systemd/system/iotdb-datanode@.service /usr/lib/systemd/system/iotdb-.service.d/50-limits.conf " +
		"/etc/systemd/system/service.d/90-all.conf /usr/lib/systemd/system/iotdb-datanode@.service.d/95.conf"
	if got := strings.Join(paths, " "); got != want {
		t.Errorf("files read:\n %s\nwant\n %s", got, want)
	}
	// Without the template's own drop-in: the top-level 90-all.conf is the
	// last by basename.
	if err := os.Remove(root + "/usr/lib/systemd/system/iotdb-datanode@.service.d/95.conf"); err != nil {
		t.Fatal(err)
	}
	u, _, err = hostconf.UnitNofile(root, "iotdb-datanode@a.service")
	must(t, err)
	if u.String() != "4096:4096" || !strings.HasSuffix(u.Where(), "service.d/90-all.conf:2") {
		t.Errorf("instance without 95.conf: %v at %s", u, u.Where())
	}
}

// TestUnitNofileAttachedDirs: drop-ins in the portable services'
// /etc/systemd/system.attached count like any other unit directory's, in
// systemd 252's search path order (measured with systemd --test: a
// 99-z.conf there with LimitNOFILE=4096 gave 4096, which verify --boot
// had called ok at 2097152).
func TestUnitNofileAttachedDirs(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/usr/lib/systemd/system/hpx.service":                  "[Service]\nExecStart=/bin/true\n",
		"/etc/systemd/system/hpx.service.d/60-hostprep.conf":   "[Service]\nLimitNOFILE=2097152\n",
		"/etc/systemd/system.attached/hpx.service.d/99-z.conf": "[Service]\nLimitNOFILE=4096\n",
	})
	u, _, err := hostconf.UnitNofile(root, "hpx")
	must(t, err)
	if u.String() != "4096:4096" || !strings.Contains(u.Where(), "system.attached") {
		t.Errorf("unit nofile %v at %s, want 4096 from system.attached", u, u.Where())
	}
}

// TestUnitDropInHiddenByBrokenEntry: systemd lists a unit's drop-ins by
// name without a stat, so a dangling link or a directory named X.conf in
// an earlier directory hides X.conf in later ones and sets nothing
// (measured with systemd --test both ways: a hidden 60-hostprep.conf was
// not applied; a hidden vendor 99-z.conf at 4096 did not lower it).
func TestUnitDropInHiddenByBrokenEntry(t *testing.T) {
	for _, broken := range []string{"dangling link", "directory"} {
		root := testenv.TempTree(t, map[string]string{
			"/usr/lib/systemd/system/hpx.service":                "[Service]\nExecStart=/bin/true\n",
			"/etc/systemd/system/hpx.service.d/60-hostprep.conf": "[Service]\nLimitNOFILE=2097152\n",
			"/usr/lib/systemd/system/hpx.service.d/99-z.conf":    "[Service]\nLimitNOFILE=4096\n",
		})
		p := filepath.Join(root, "etc/systemd/system/hpx.service.d/99-z.conf")
		if broken == "directory" {
			must(t, os.Mkdir(p, 0o755))
		} else {
			must(t, os.Symlink("/nonexistent", p))
		}
		u, _, err := hostconf.UnitNofile(root, "hpx")
		must(t, err)
		if u.String() != "2097152:2097152" {
			t.Errorf("%s named 99-z.conf: unit nofile %v at %s, want 2097152 (the vendor 4096 hidden)", broken, u, u.Where())
		}
	}
}
