package hostconf_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// keyAtBoot reads the boot model of root and returns key's value, its
// writer and FILE:LINE, and whether it is known.
func keyAtBoot(t *testing.T, root, key string) (string, string, string, bool, hostconf.KeyAtBoot) {
	t.Helper()
	b, err := hostconf.ReadBoot(root, nil)
	must(t, err)
	k := b.Key(key)
	v, who, where, known, _ := k.Value()
	return v, who, where, known, k
}

// ufw's IPT_SYSCTL file is applied after sysctl.d (at boot or at the next
// `ufw reload`) when ufw.service is enabled and ufw.conf says ENABLED=yes
// (case other-writer-ufw-wins-at-boot).
func TestWriterUfw(t *testing.T) {
	files := map[string]string{
		"/usr/lib/systemd/systemd-sysctl":                         "",
		"/etc/sysctl.d/60-hostprep.conf":                          "net.ipv4.tcp_syncookies = 1\nnet.core.somaxconn = 4096\n",
		"/etc/default/ufw":                                        "IPT_SYSCTL=/etc/ufw/sysctl.conf\n",
		"/etc/ufw/ufw.conf":                                       "ENABLED=yes\n",
		"/etc/ufw/sysctl.conf":                                    "net/ipv4/tcp_syncookies=0\n",
		"/etc/systemd/system/multi-user.target.wants/ufw.service": "symlink to /lib/systemd/system/ufw.service",
	}
	root := testenv.TempTree(t, files)
	v, who, where, known, k := keyAtBoot(t, root, "net.ipv4.tcp_syncookies")
	if v != "0" || who != "ufw" || where != "/etc/ufw/sysctl.conf:1" || known {
		t.Errorf("tcp_syncookies at boot = %q by %s at %s known %v; want 0 by ufw at /etc/ufw/sysctl.conf:1, not known (ufw is unordered with systemd-sysctl)", v, who, where, known)
	}
	if len(k.Later) != 1 || !strings.Contains(k.Later[0].Fix, "IPT_SYSCTL=") || !strings.Contains(k.Later[0].Fix, "/etc/ufw/sysctl.conf line 1") {
		t.Errorf("ufw write: %+v", k.Later)
	}
	if v, who, where, known, set, err := hostconf.SysctlWho(root, "net.core.somaxconn"); err != nil || v != "4096" || who != "systemd-sysctl" || where != "/etc/sysctl.d/60-hostprep.conf:2" || !known || !set {
		t.Errorf("somaxconn, which ufw does not set: %q by %s at %s known %v set %v %v", v, who, where, known, set, err)
	}
	// Not enabled in ufw.conf, or IPT_SYSCTL emptied, or the unit not
	// enabled: ufw writes nothing.
	for name, change := range map[string]map[string]string{
		"ENABLED=no":  {"/etc/ufw/ufw.conf": "ENABLED=no\n"},
		"IPT_SYSCTL=": {"/etc/default/ufw": "IPT_SYSCTL=\n"},
		"not enabled": {"/etc/systemd/system/multi-user.target.wants/ufw.service": "symlink to /dev/null", "/etc/systemd/system/ufw.service": "symlink to /dev/null"},
	} {
		root := testenv.TempTree(t, files)
		testenv.WriteTree(t, root, change)
		if _, who, _, _, _ := keyAtBoot(t, root, "net.ipv4.tcp_syncookies"); who != "systemd-sysctl" {
			t.Errorf("%s: tcp_syncookies set by %s, want systemd-sysctl", name, who)
		}
	}
}

// tuned applies its active profile's [sysctl] (with the profiles it
// includes) after systemd-sysctl, then, with reapply_sysctl (default 1),
// the lines of /etc/sysctl.d and /run/sysctl.d again but not those of
// /usr/lib/sysctl.d: a profile beats a vendor file, loses to /etc.
func TestWriterTuned(t *testing.T) {
	files := map[string]string{
		"/usr/lib/systemd/systemd-sysctl":                           "",
		"/usr/lib/sysctl.d/50-vendor.conf":                          "net.core.somaxconn = 1024\n",
		"/etc/systemd/system/multi-user.target.wants/tuned.service": "symlink to /usr/lib/systemd/system/tuned.service",
		"/etc/tuned/active_profile":                                 "broker\n",
		"/etc/tuned/broker/tuned.conf":                              "[main]\ninclude=throughput-performance\n\n[sysctl]\nnet.core.somaxconn=4096\n",
		"/usr/lib/tuned/throughput-performance/tuned.conf":          "[main]\nsummary=x\n[sysctl]\nnet.core.somaxconn=2048\nvm.swappiness=10\n",
	}
	root := testenv.TempTree(t, files)
	// without hostprep's file: the profile (its own line beats the
	// included one) wins over the vendor file
	v, who, where, known, _ := keyAtBoot(t, root, "net.core.somaxconn")
	if v != "4096" || who != "tuned" || where != "/etc/tuned/broker/tuned.conf:5" || !known {
		t.Errorf("without hostprep's file: somaxconn %q by %s at %s known %v, want 4096 by tuned at /etc/tuned/broker/tuned.conf:5", v, who, where, known)
	}
	if v, _, where, _, _ := keyAtBoot(t, root, "vm.swappiness"); v != "10" || where != "/usr/lib/tuned/throughput-performance/tuned.conf:5" {
		t.Errorf("included profile's key: %q at %s", v, where)
	}
	// with hostprep's file in /etc/sysctl.d: tuned re-applies it last
	testenv.WriteTree(t, root, map[string]string{"/etc/sysctl.d/60-hostprep.conf": "net.core.somaxconn = 65535\n"})
	if v, who, where, known, _ := keyAtBoot(t, root, "net.core.somaxconn"); v != "65535" || who != "tuned" || where != "/etc/sysctl.d/60-hostprep.conf:1" || !known {
		t.Errorf("with hostprep's file: somaxconn %q by %s at %s known %v, want 65535 re-applied from 60-hostprep.conf:1", v, who, where, known)
	}
	// reapply_sysctl = 0: the profile wins over /etc/sysctl.d too
	testenv.WriteTree(t, root, map[string]string{"/etc/tuned/tuned-main.conf": "# tuned\nreapply_sysctl = 0\n"})
	_, _, _, _, k := keyAtBoot(t, root, "net.core.somaxconn")
	if v, who, where, _, _ := k.Value(); v != "4096" || who != "tuned" || where != "/etc/tuned/broker/tuned.conf:5" || !strings.Contains(k.Later[0].Fix, "set reapply_sysctl = 1 in /etc/tuned/tuned-main.conf (now reapply_sysctl = 0 at /etc/tuned/tuned-main.conf:2)") {
		t.Errorf("reapply_sysctl=0: somaxconn %q by %s at %s; fix %q", v, who, where, k.Later[0].Fix)
	}
	// an /etc/tuned profile that includes its own name loads the
	// /usr/lib/tuned one first; a modifier makes the write conditional
	testenv.WriteTree(t, root, map[string]string{
		"/etc/tuned/active_profile":                       "throughput-performance",
		"/etc/tuned/throughput-performance/tuned.conf":    "[main]\ninclude=throughput-performance\n[sysctl]\nnet.core.somaxconn=>8192\n",
		"/etc/systemd/system/tuned.service.d/x.conf":      "[Service]\n",
		"/etc/tuned/broker/tuned.conf":                    "",
		"/usr/lib/tuned/throughput-performance/README.md": "",
	})
	if v, _, where, known, _ := keyAtBoot(t, root, "vm.swappiness"); v != "10" || where != "/usr/lib/tuned/throughput-performance/tuned.conf:5" || !known {
		t.Errorf("self-include: swappiness %q at %s known %v", v, where, known)
	}
	if _, _, _, known, k := keyAtBoot(t, root, "net.core.somaxconn"); known || len(k.Later) != 1 || k.Later[0].Value != "8192" || k.Later[0].Sure {
		t.Errorf(">8192: somaxconn known %v %+v, want a write of 8192 that is not sure (written only when higher)", known, k.Later)
	}
	// a profile tuned cannot find: it loads none and writes nothing
	testenv.WriteTree(t, root, map[string]string{"/etc/tuned/active_profile": "throughput-performance nosuch\n"})
	if _, who, _, _, _ := keyAtBoot(t, root, "vm.swappiness"); who == "tuned" {
		t.Error("a missing profile: tuned still writes")
	}
	// tuned not enabled: nothing
	must(t, os.Remove(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/tuned.service")))
	if _, who, _, _, _ := keyAtBoot(t, root, "net.core.somaxconn"); who != "systemd-sysctl" {
		t.Errorf("tuned not enabled: somaxconn by %s", who)
	}
}

// rc.local and enabled services that run sysctl or write /proc/sys are
// writers too; a script's line may or may not run (not known), a
// sysctl -w in an ExecStartPre= runs whenever the unit starts.
func TestWriterScriptsAndUnits(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/usr/lib/systemd/systemd-sysctl":                            "",
		"/etc/sysctl.d/60-hostprep.conf":                             "net.core.somaxconn = 65535\nnet.ipv4.tcp_max_syn_backlog = 65535\nfs.file-max = 2000000\n",
		"/etc/systemd/system/broker.service":                         "[Service]\nExecStartPre=-/usr/sbin/sysctl -q -w net.core.somaxconn=1024\nExecStart=/usr/bin/broker\n",
		"/etc/systemd/system/multi-user.target.wants/broker.service": "symlink to /etc/systemd/system/broker.service",
		"/etc/systemd/system/tweak.service":                          "[Service]\nExecStart=/bin/sh -c 'echo 512 > /proc/sys/net/ipv4/tcp_max_syn_backlog'\n",
		"/etc/systemd/system/multi-user.target.wants/tweak.service":  "symlink to /etc/systemd/system/tweak.service",
		"/etc/rc.local":                                          "#!/bin/sh -e\nif [ -e /x ]; then\n  sysctl -w fs.file-max=$MAX\nfi\nexit 0\n",
		"/usr/local/sbin/tune-net":                               "#!/bin/sh\necho 2048 >/proc/sys/net/core/somaxconn\n",
		"/etc/systemd/system/zz.service":                         "[Service]\nExecStartPost=/usr/local/sbin/tune-net\n",
		"/etc/systemd/system/multi-user.target.wants/zz.service": "symlink to /etc/systemd/system/zz.service",
	})
	must(t, os.Chmod(filepath.Join(root, "etc/rc.local"), 0o755))
	// two services set somaxconn: both are named, and the value is not
	// known (broker's sysctl -w is sure, zz's script line is not)
	v, who, where, known, k := keyAtBoot(t, root, "net.core.somaxconn")
	if v != "1024" || who != "service" || where != "/etc/systemd/system/broker.service:2" || known {
		t.Errorf("somaxconn: %q by %s at %s known %v", v, who, where, known)
	}
	if len(k.Later) != 2 || k.Later[1].Source != "zz.service" || k.Later[1].Value != "2048" || k.Later[1].Where() != "/usr/local/sbin/tune-net:2" {
		t.Errorf("somaxconn writes: %+v", k.Later)
	}
	if _, _, _, known, k := keyAtBoot(t, root, "net.ipv4.tcp_max_syn_backlog"); known || len(k.Later) != 1 || k.Later[0].Value != "512" || k.Later[0].Where() != "/etc/systemd/system/tweak.service:2" {
		t.Errorf("tcp_max_syn_backlog from sh -c: known %v %+v, want a write of 512 at tweak.service:2, not known", known, k.Later)
	}
	_, _, _, known, k = keyAtBoot(t, root, "fs.file-max")
	if known || len(k.Later) != 1 || k.Later[0].Writer.Name != "rc.local" || k.Later[0].Value != "" || k.Later[0].Where() != "/etc/rc.local:3" {
		t.Errorf("fs.file-max from rc.local: known %v %+v", known, k.Later)
	}
	// not executable: rc-local.service does not run it
	must(t, os.Chmod(filepath.Join(root, "etc/rc.local"), 0o644))
	if _, _, _, known, _ := keyAtBoot(t, root, "fs.file-max"); !known {
		t.Error("a non-executable rc.local still counts")
	}
}

// Every entry of Writers declares where its configuration lives, when
// it runs and whether its effect is known offline.
func TestWritersDeclared(t *testing.T) {
	seen := map[string]bool{}
	for _, w := range hostconf.Writers {
		if w.Name == "" || w.Config == "" || w.When == "" || seen[w.Name] {
			t.Errorf("writer %+v: name, config and when are required, names unique", w)
		}
		seen[w.Name] = true
		if (w.Loader == "") == (w.Writes == nil) {
			t.Errorf("writer %s: exactly one of Loader and Writes", w.Name)
		}
	}
}

// A service's sysctl is found however its Exec line or script runs it:
// through a wrapper (env, timeout), after a shell keyword, in a shell's
// -c string with options before it (-ec), in a script a shell is given,
// or as the second command of a line (systemd runs the commands a ";"
// word separates in turn). A command that only mentions a sysctl key is
// no write.
func TestWriterCommandForms(t *testing.T) {
	for _, tc := range []struct {
		exec  string
		write bool
	}{
		{"/usr/bin/env sysctl net.core.somaxconn=128", true},
		{"/usr/bin/env -i /sbin/sysctl -w net.core.somaxconn=128", true},
		{"/usr/bin/timeout 10 sysctl -w net.core.somaxconn=128", true},
		{"/bin/sh -ec \"sysctl -w net.core.somaxconn=128\"", true},
		{"/bin/sh -e -c \"sysctl -w net.core.somaxconn=128\"", true},
		{"/bin/bash -o pipefail -c \"sysctl -w net.core.somaxconn=128\"", true},
		{"/bin/sh -c \"if true; then sysctl -w net.core.somaxconn=128; fi\"", true},
		{"/usr/bin/env bash -c \"sysctl -w net.core.somaxconn=128\"", true},
		{"/usr/bin/true ; /sbin/sysctl -w net.core.somaxconn=128", true},
		{"/usr/bin/true ; -/sbin/sysctl -w net.core.somaxconn=128", true},
		{"/bin/bash /usr/local/sbin/tune-net", true},
		{"/usr/bin/docker run --sysctl net.core.somaxconn=128 img", false},
		{"/usr/bin/true", false},
	} {
		root := testenv.TempTree(t, map[string]string{
			"/usr/lib/systemd/systemd-sysctl":                          "",
			"/etc/sysctl.d/60-hostprep.conf":                           "net.core.somaxconn = 65535\n",
			"/usr/local/sbin/tune-net":                                 "sysctl -w net.core.somaxconn=128\n",
			"/etc/systemd/system/late.service":                         "[Service]\nType=oneshot\nExecStart=" + tc.exec + "\n",
			"/etc/systemd/system/multi-user.target.wants/late.service": "symlink to /etc/systemd/system/late.service",
		})
		_, _, _, known, k := keyAtBoot(t, root, "net.core.somaxconn")
		found := len(k.Later) == 1 && k.Later[0].Value == "128" && k.Later[0].Writer.Name == "service" &&
			(k.Later[0].Where() == "/etc/systemd/system/late.service:3" || k.Later[0].Where() == "/usr/local/sbin/tune-net:1")
		switch {
		case tc.write && !found:
			t.Errorf("ExecStart=%s: somaxconn known %v, later writes %+v; want one write of 128 by service at late.service:3 (or the script's line)", tc.exec, known, k.Later)
		case !tc.write && (len(k.Later) != 0 || !known):
			t.Errorf("ExecStart=%s: somaxconn known %v, later writes %+v; want no write", tc.exec, known, k.Later)
		}
	}
	// a script given to a shell by a relative path is not known offline
	root := testenv.TempTree(t, map[string]string{
		"/usr/lib/systemd/systemd-sysctl":                          "",
		"/etc/sysctl.d/60-hostprep.conf":                           "net.core.somaxconn = 65535\n",
		"/etc/systemd/system/late.service":                         "[Service]\nExecStart=/bin/sh tune-net\n",
		"/etc/systemd/system/multi-user.target.wants/late.service": "symlink to /etc/systemd/system/late.service",
	})
	if _, _, _, known, k := keyAtBoot(t, root, "net.core.somaxconn"); known || len(k.Later) != 1 || k.Later[0].Key != "*" {
		t.Errorf("sh tune-net: somaxconn known %v, later writes %+v; want one write of keys not known", known, k.Later)
	}
	// the same forms in a script (rc.local) are read the same way
	root = testenv.TempTree(t, map[string]string{
		"/usr/lib/systemd/systemd-sysctl": "",
		"/etc/sysctl.d/60-hostprep.conf":  "net.core.somaxconn = 65535\n",
		"/etc/rc.local":                   "#!/bin/sh\nif true; then sysctl -w net.core.somaxconn=256; fi\n",
	})
	must(t, os.Chmod(filepath.Join(root, "etc/rc.local"), 0o755))
	if _, _, _, known, k := keyAtBoot(t, root, "net.core.somaxconn"); known || len(k.Later) != 1 || k.Later[0].Value != "256" || k.Later[0].Writer.Name != "rc.local" || k.Later[0].Where() != "/etc/rc.local:2" {
		t.Errorf("rc.local `if ...; then sysctl ...; fi`: somaxconn known %v, later writes %+v; want one write of 256 by rc.local at /etc/rc.local:2", known, k.Later)
	}
}
