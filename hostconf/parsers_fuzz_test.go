package hostconf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
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

// FuzzWriterFiles feeds one file's bytes to each writer's parser as the
// file it reads (ufw's IPT_SYSCTL file, a tuned profile, rc.local, a
// service's Exec line): none may panic or hang, and a value found is one
// line.
func FuzzWriterFiles(f *testing.F) {
	for _, s := range []string{
		"net/ipv4/tcp_syncookies=0\n",
		"[main]\ninclude=fz\n[sysctl]\nnet.core.somaxconn=>4096\n",
		"#!/bin/sh\nif true; then env sysctl -w net.core.somaxconn=1; fi\necho 2 > /proc/sys/vm/swappiness\n",
		"/bin/sh -ec \"sysctl -p /etc/rc.local\" ; /etc/rc.local ; bash -o x -c",
		"\x00\xff\n\"'\\",
		"",
	} {
		f.Add([]byte(s))
	}
	root := testenv.TempTree(f, map[string]string{
		"/usr/lib/systemd/systemd-sysctl": "",
		"/etc/default/ufw":                "IPT_SYSCTL=/etc/ufw/sysctl.conf\n",
		"/etc/ufw/ufw.conf":               "ENABLED=yes\n",
		"/etc/systemd/system/multi-user.target.wants/ufw.service":   "symlink to /lib/systemd/system/ufw.service",
		"/etc/tuned/active_profile":                                 "fz\n",
		"/etc/systemd/system/multi-user.target.wants/tuned.service": "symlink to /lib/systemd/system/tuned.service",
		"/etc/systemd/system/multi-user.target.wants/fz.service":    "symlink to /etc/systemd/system/fz.service",
		"/etc/rc.local": "",
	})
	if err := os.Chmod(filepath.Join(root, "etc/rc.local"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		line := strings.NewReplacer("\n", " ", "\r", " ").Replace(string(data))
		b, err := hostconf.ReadBoot(root, map[string][]byte{
			"/etc/ufw/sysctl.conf":           data,
			"/etc/tuned/fz/tuned.conf":       data,
			"/etc/rc.local":                  data,
			"/etc/systemd/system/fz.service": []byte("[Service]\nExecStartPre=" + line + "\n"),
		})
		if err != nil {
			return
		}
		for _, k := range []string{"net.core.somaxconn", "net.ipv4.tcp_syncookies", "vm.swappiness"} {
			if v, _, _, _, _ := b.Key(k).Value(); strings.ContainsAny(v, "\n\r") {
				t.Fatalf("%s = %q at boot: a value spans lines", k, v)
			}
		}
	})
}
