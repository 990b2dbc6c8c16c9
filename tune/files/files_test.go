package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteAtomicAndMkdirAll(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc", "systemd", "system", "emqx.service.d")
	made, err := MkdirAll(dir)
	if err != nil || len(made) != 4 || made[0] != filepath.Join(root, "etc") {
		t.Fatalf("MkdirAll made %v, %v", made, err)
	}
	p := filepath.Join(dir, "60-hostprep.conf")
	data := RenderServiceDropIn([]string{"a", "b"}, 1024, 2048, "")
	if err := WriteAtomic(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if !Same(p, data) || Same(p, append(data, '\n')) {
		t.Fatal("Same")
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
	if !strings.Contains(string(data), "profile(s): a, b") || !strings.Contains(string(data), "LimitNOFILE=1024:2048") {
		t.Errorf("drop-in:\n%s", data)
	}
	if err := Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := Remove(p); err != nil {
		t.Fatal("removing an absent file must be fine:", err)
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	lines := []SysctlLine{{Key: "fs.nr_open", Value: "2097152", Comment: "raised\nfirst"}, {Key: "net.netfilter.nf_conntrack_max", Value: "1", Optional: true}}
	a := RenderSysctl([]string{"p"}, lines)
	if string(a) != string(RenderSysctl([]string{"p"}, lines)) {
		t.Fatal("not deterministic")
	}
	if !strings.Contains(string(a), "# raised first\nfs.nr_open = 2097152\n-net.netfilter.nf_conntrack_max = 1\n") {
		t.Fatalf("sysctl.d:\n%s", a)
	}
	l := string(RenderLimits([]string{"p"}, []string{"*", "root"}, 1, 2))
	if !strings.Contains(l, "*    soft nofile 1\n*    hard nofile 2\nroot soft nofile 1\nroot hard nofile 2\n") {
		t.Fatalf("limits.d:\n%s", l)
	}
}

func TestHardNofile(t *testing.T) {
	for _, c := range []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"*    soft nofile 1048576\n*    hard nofile 2097152\nroot - nofile 4096\n# hand edit\n", 2097152, true},
		{"[Service]\nLimitNOFILE=1048576:3000000\n", 3000000, true},
		{"[Manager]\nDefaultLimitNOFILE=65536\n", 65536, true},
		{"# * hard nofile 9999999\nfs.nr_open = 2097152\n", 0, false},
		{"* soft nofile 4096\n", 0, false},
	} {
		got, ok := HardNofile([]byte(c.in))
		if got != c.want || ok != c.ok {
			t.Errorf("HardNofile(%q) = %d, %v; want %d, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// No string from a profile can add a line of its own to an owned file, nor
// send a drop-in outside /etc/systemd/system, even when it got past
// profiles.Validate (a profile built in code, an old journal).
func TestRenderersKeepProfileStringsOnOneLine(t *testing.T) {
	evil := "a\nnet.ipv4.ip_forward = 1\x1b[0m\x00"
	outs := map[string][]byte{
		"sysctl": RenderSysctl([]string{evil}, []SysctlLine{{Key: "net.core.somaxconn\n" + evil, Value: "1\nkernel.x = 2", Comment: evil}}),
		"limits": RenderLimits([]string{evil}, []string{"*\nroot hard nofile 1", "root"}, 1024, 2048),
		"system": RenderSystemConf([]string{evil}, 1024, 2048),
		"unit":   RenderServiceDropIn([]string{evil}, 1024, 2048, ""),
	}
	for name, out := range outs {
		for i, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
			if strings.HasPrefix(line, "net.ipv4.ip_forward") || strings.HasPrefix(line, "kernel.x") || strings.HasPrefix(line, "root hard nofile 1") {
				t.Errorf("%s line %d is injected: %q\n%s", name, i+1, line, out)
			}
			if strings.ContainsAny(line, "\x1b\x00") {
				t.Errorf("%s line %d has a control character: %q", name, i+1, line)
			}
		}
	}
	for _, unit := range []string{"../../../etc/passwd", "a/b", "..", "x\ny"} {
		p := ServiceDropIn(unit)
		if !strings.HasPrefix(p, serviceDropDir+"/") || strings.Count(p, "/") != 5 || strings.Contains(p, "..") && !strings.Contains(p, "-") {
			t.Errorf("ServiceDropIn(%q) = %q, leaves %s", unit, p, serviceDropDir)
		}
	}
}
