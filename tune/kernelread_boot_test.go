package tune

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
)

// verify --boot compares a value as the kernel reads it: text after the
// fields a key takes is ignored ("32768 # keep", a fourth tcp_rmem
// field), while a value the kernel refuses (a trailing U+00A0, which
// systemd-sysctl does not strip) leaves the key at its default, so the
// item fails. Measured against the real systemd-sysctl and procps in
// boot's TestSysctlOracle.
func TestVerifyBootReadsValuesAsTheKernel(t *testing.T) {
	p := &profiles.Profile{Name: "k", Sysctl: map[string]profiles.Sysctl{
		"net.core.somaxconn":       {Value: "32768"},
		"net.ipv4.tcp_fin_timeout": {Value: "15"},
		"net.ipv4.tcp_rmem":        {Value: "1024 4096 16777216"},
		"net.ipv4.tcp_wmem":        {Value: "1024 4096 16777216"},
	}}
	for _, loader := range []string{"systemd", "procps"} {
		t.Run(loader, func(t *testing.T) {
			tree := map[string]string{"/etc/security/limits.conf": ""}
			if loader == "systemd" {
				tree["/usr/lib/systemd/systemd-sysctl"] = ""
			}
			img, env := newImage(t, tree)
			_, err := Apply(t.Context(), p, Options{Env: env})
			must(t, err)
			testenv.WriteTree(t, img, map[string]string{"/etc/sysctl.d/70-x.conf": "net.core.somaxconn = 32768 # keep\n" +
				"net.ipv4.tcp_fin_timeout = 15 ; x\nnet.ipv4.tcp_rmem = 1024 4096 16777216 1\n" +
				"net.ipv4.tcp_wmem = 1024 4096 16777216\u00a0\n"})
			bs, _ := VerifyBoot(env)
			got := map[string]BootItem{}
			for _, it := range bs.Items {
				got[it.Key] = it
			}
			for _, k := range []string{"net.core.somaxconn", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_rmem"} {
				if it := got[k]; !it.OK || it.Boot.Value != p.Sysctl[k].Value {
					t.Errorf("%s: ok %v at boot %q, want ok %q: %s", k, it.OK, it.Boot.Value, p.Sysctl[k].Value, it.Problem)
				}
			}
			// The kernel refuses "16777216\u00a0" (EINVAL): systemd-sysctl
			// writes only that last assignment, so the key keeps its
			// default; procps wrote hostprep's line before it, which stands.
			it := got["net.ipv4.tcp_wmem"]
			if loader == "systemd" && (it.OK || !strings.Contains(it.Problem, "refuses")) {
				t.Errorf("tcp_wmem with a trailing U+00A0: ok %v %q: %s", it.OK, it.Boot.Value, it.Problem)
			}
			if loader == "procps" && (!it.OK || !strings.Contains(it.Boot.File, "60-hostprep.conf")) {
				t.Errorf("procps: tcp_wmem with a refused later line: ok %v %q from %s: %s", it.OK, it.Boot.Value, it.Boot.File, it.Problem)
			}
		})
	}
}
