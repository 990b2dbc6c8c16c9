package unitname

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServiceAsSystemctl: Service completes a name as Debian's systemctl
// 252 does (`systemctl --root=DIR is-enabled NAME` over a tree with the
// unit file): "php8.2-fpm" is php8.2-fpm.service, a name hostprep took
// as a complete unit name because it has a dot.
func TestServiceAsSystemctl(t *testing.T) {
	for in, want := range map[string]string{"emqx": "emqx.service", "emqx.service": "emqx.service", "php8.2-fpm": "php8.2-fpm.service",
		"getty@tty1": "getty@tty1.service", "a.b.c": "a.b.c.service", "foo.socket": "foo.socket", "x.Service": "x.Service.service"} {
		if got := Service(in); got != want {
			t.Errorf("Service(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := exec.LookPath("systemctl"); err != nil {
		t.Skip("systemctl is needed:", err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "lib/systemd/system")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"php8.2-fpm", "a.b.c", "emqx"} {
		if err := os.WriteFile(filepath.Join(dir, Service(n)), []byte("[Service]\nExecStart=/bin/true\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("systemctl", "--root="+root, "is-enabled", n).CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "static" {
			t.Errorf("systemctl is-enabled %s over %s: %v %s", n, Service(n), err, out)
		}
	}
}
