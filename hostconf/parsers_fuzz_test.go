package hostconf_test

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
)

// FuzzBootFiles feeds one file's bytes to each of the boot model's
// parsers as the file that parser reads (a sysctl.d file under both
// loaders, a limits.d file, a unit drop-in): none may panic or hang, and
// a value they find is one line, as the kernel and systemd take it.
func FuzzBootFiles(f *testing.F) {
	for _, s := range []string{
		"net.core.somaxconn = 4096\n-net.ipv4.tcp_rmem\nnet.ipv4.conf.*.rp_filter=1\n",
		"  ; comment\n# comment\nfs.file-max=\t2097152  \nbad line\n=\n",
		"* soft nofile 1024\nroot hard nofile 1048576\n@adm - nofile unlimited\nuser -\n",
		"[Service]\nLimitNOFILE=1024:infinity\nLimitNOFILE=\nTasksMax=80%\\\n  more\n",
		"\x00\xff\n[Service\nLimitNOFILE=0x10\n",
		"",
	} {
		f.Add([]byte(s))
	}
	root := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, loader := range []hostconf.Loader{hostconf.SystemdSysctl, hostconf.ProcpsSystem} {
			s, err := hostconf.ReadSysctlOverlay(root, loader, map[string][]byte{"/etc/sysctl.d/50-fuzz.conf": data})
			if err != nil {
				continue
			}
			for _, k := range []string{"net.core.somaxconn", "fs.file-max", "net.ipv4.conf.all.rp_filter"} {
				if set, ok := s.Lookup(k); ok && strings.ContainsAny(set.Value, "\n\r") {
					t.Fatalf("%s = %q: a sysctl value spans lines", k, set.Value)
				}
			}
		}
		_, _ = hostconf.NofileOverlay(root, "root", map[string][]byte{"/etc/security/limits.d/50-fuzz.conf": data})
		_, _ = hostconf.NofileOverlay(root, hostconf.AnyUser, map[string][]byte{"/etc/security/limits.conf": data})
		_, _, _ = hostconf.UnitNofileOverlay(root, "fuzz.service", map[string][]byte{
			"/etc/systemd/system/fuzz.service":                []byte("[Service]\nExecStart=/bin/true\n"),
			"/etc/systemd/system/fuzz.service.d/50-fuzz.conf": data,
			"/etc/systemd/system.conf.d/50-fuzz.conf":         data,
		})
		_, _, _ = hostconf.ManagerNofileOverlay(root, map[string][]byte{"/etc/systemd/system.conf": data})
	})
}
