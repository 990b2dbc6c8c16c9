package hostconf_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/tune/sysval"
)

// ufwOracleKeys are network-namespaced keys, each with the value the
// sandbox sets before a run.
var ufwOracleKeys = []struct{ key, baseline string }{
	{"net.ipv4.tcp_syncookies", "1"},
	{"net.core.somaxconn", "4321"},
	{"net.ipv4.tcp_fin_timeout", "42"},
	{"net.ipv4.tcp_keepalive_probes", "7"},
	{"net.ipv4.conf.lo.rp_filter", "0"},
}

// TestWriterUfwOracle holds the ufw entry to the real program: ufw-init
// applies IPT_SYSCTL with `sysctl -e -q -p FILE` (procps-ng), run here in
// the sandbox over files with both key spellings, repeats, comments,
// "-key" lines, globs, unknown keys and values the kernel refuses; the
// values it leaves must be what the boot model says ufw leaves.
func TestWriterUfwOracle(t *testing.T) {
	testenv.RequireFiles(t, "/usr/sbin/sysctl")
	box := testenv.NewSandbox(t)
	for i, file := range []string{
		"net/ipv4/tcp_syncookies=0\n",
		"# ufw\nnet.core.somaxconn = 1000\nnet/core/somaxconn=2048\n",
		"net.ipv4.tcp_fin_timeout=20\n-net.core.somaxconn\n  net.ipv4.tcp_keepalive_probes =  5 \n",
		"net.ipv4.conf.*.rp_filter = 2\nnet.ipv4.conf.lo.rp_filter = 1\n",
		"net.core.somaxconn=2048\nnet.core.somaxconn=1000x\nnet.core.nosuchkey=1\nnet.ipv4.tcp_fin_timeout = 0x1e\n",
		"; comment\nnet.ipv4.tcp_syncookies=2 # two\nnet.ipv4.tcp_keepalive_probes\n",
	} {
		root := testenv.TempTree(t, map[string]string{
			"/usr/lib/systemd/systemd-sysctl": "",
			"/etc/default/ufw":                "IPT_SYSCTL=/etc/ufw/sysctl.conf\n",
			"/etc/ufw/ufw.conf":               "ENABLED=yes\n",
			"/etc/ufw/sysctl.conf":            file,
			"/etc/systemd/system/multi-user.target.wants/ufw.service": "symlink to /lib/systemd/system/ufw.service",
		})
		var sh strings.Builder
		for _, k := range ufwOracleKeys {
			fmt.Fprintf(&sh, "printf '%%s' '%s' > /proc/sys/%s\n", k.baseline, sysctlkey.Path(k.key))
		}
		fmt.Fprintf(&sh, "sysctl -e -q -p %s >/dev/null 2>&1 || true\n", filepath.Join(root, "etc/ufw/sysctl.conf"))
		for _, k := range ufwOracleKeys {
			fmt.Fprintf(&sh, "cat /proc/sys/%s\n", sysctlkey.Path(k.key))
		}
		out, e, c := box.Run("sh", "-c", sh.String())
		if c != 0 {
			t.Fatalf("sandbox: %s", e)
		}
		got := strings.Split(strings.TrimRight(out, "\n"), "\n")
		b, err := hostconf.ReadBoot(root, nil)
		must(t, err)
		for j, k := range ufwOracleKeys {
			took := func(v string) bool { f, ok := sysval.Written(v, 1); return ok && len(f) == 1 }
			want := k.baseline
			if ws := b.KeyAccepted(k.key, took).Later; len(ws) > 0 {
				f, _ := sysval.Written(ws[len(ws)-1].Value, 1)
				want = f[0]
			}
			if j >= len(got) || strings.TrimSpace(got[j]) != want {
				t.Errorf("file %d %q: %s is %q after sysctl -e -q -p, the boot model says %q", i, file, k.key, got, want)
			}
		}
	}
}
