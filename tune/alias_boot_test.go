package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// TestAliasDropInsCountAtBoot: systemd reads a unit's drop-ins under
// every name of it, so with Debian's alias link
// /etc/systemd/system/sshd.service -> /lib/systemd/system/ssh.service a
// LimitNOFILE= in sshd.service.d counts for ssh.service and one in
// ssh.service.d for sshd.service. verify --boot read only the drop-ins
// of the name the profile used, and passed while another file lowered
// the limit.
func TestAliasDropInsCountAtBoot(t *testing.T) {
	for _, c := range []struct{ profileName, otherName string }{{"ssh", "sshd"}, {"sshd", "ssh"}} {
		t.Run(c.profileName, func(t *testing.T) {
			h := newHost(t, nil)
			h.env.SystemdRunDir = h.root
			h.layFiles(map[string]string{"/lib/systemd/system/ssh.service": "[Unit]\nDescription=OpenBSD Secure Shell server\n[Service]\nExecStart=/usr/sbin/sshd -D\n[Install]\nAlias=sshd.service\n"})
			must(t, os.MkdirAll(filepath.Join(h.root, "etc/systemd/system"), 0o755))
			must(t, os.Symlink("/lib/systemd/system/ssh.service", filepath.Join(h.root, "etc/systemd/system/sshd.service")))
			l := &profiles.Limit{Soft: 65536, Hard: 65536}
			_, err := h.apply(&profiles.Profile{Name: "a", Systemd: profiles.Systemd{Services: []string{c.profileName}, LimitNOFILE: l}})
			must(t, err)
			_, err = VerifyBoot(h.env)
			must(t, err)
			other := "/etc/systemd/system/" + c.otherName + ".service.d/90-local.conf"
			h.layFiles(map[string]string{other: "[Service]\nLimitNOFILE=4096\n"})
			bs, err := VerifyBoot(h.env)
			wantCode(t, err, exitcode.Failed, c.profileName+".service LimitNOFILE")
			it := bootItem(t, bs, c.profileName+".service LimitNOFILE")
			if it.OK || it.Boot.Value != "4096:4096" || !strings.Contains(it.Problem, other+":2") || !strings.Contains(it.Problem, "sorts after hostprep's") {
				t.Errorf("a drop-in under the alias %s is not counted: %+v", c.otherName, it)
			}
		})
	}
}

// TestInstanceAliasImage is the tester's image: job@a.service ->
// /lib/systemd/system/worker@.service (what Alias=job@%i.service makes
// when worker@a is enabled) with job@a.service.d/zz.conf
// LimitNOFILE=100000, and worker@.service.d/yy.conf 2048. systemd gives
// worker@b 2048 (an instance alias names its own instance only);
// hostprep said worker@b "already get 100000 from job@a.service.d/zz.conf"
// and verify --boot passed. Now plan keeps nothing for worker@b, and
// verify --boot fails on yy.conf, read after hostprep's drop-in.
func TestInstanceAliasImage(t *testing.T) {
	img, env := newImage(t, map[string]string{
		"/usr/lib/systemd/system/worker@.service": "[Service]\nExecStart=/bin/true\nLimitNOFILE=1024\n",
		"/lib":                              "symlink to usr/lib",
		"/etc/systemd/system/job@a.service": "symlink to /lib/systemd/system/worker@.service",
		"/etc/systemd/system/job@a.service.d/zz.conf":       "[Service]\nLimitNOFILE=100000\n",
		"/usr/lib/systemd/system/worker@.service.d/yy.conf": "[Service]\nLimitNOFILE=2048\n",
	})
	p := &profiles.Profile{Name: "w", Systemd: profiles.Systemd{Services: []string{"worker@b.service"}, LimitNOFILE: &profiles.Limit{Soft: 65536, Hard: 65536}}}
	pl, err := NewPlan(p, env)
	must(t, err)
	for _, s := range pl.Skipped {
		if strings.Contains(s.Reason, "job@a") {
			t.Errorf("plan keeps job@a's drop-in for worker@b: %s", s.Reason)
		}
	}
	_, err = Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	// yy.conf sorts after hostprep's 60-hostprep.conf: systemd gives
	// worker@b its 2048, and verify --boot says so (it passed, on
	// job@a's 100000)
	bs, err := VerifyBoot(env)
	wantCode(t, err, exitcode.Failed, "worker@b.service LimitNOFILE")
	if it := bootItem(t, bs, "worker@b.service LimitNOFILE"); it.OK || it.Boot.Value != "2048:2048" || !strings.Contains(it.Problem, "worker@.service.d/yy.conf") {
		t.Errorf("verify --boot: %+v", it)
	}
	// job@a.service.d does not count for worker@b, whatever it holds
	must(t, os.MkdirAll(filepath.Join(img, "etc/systemd/system/job@a.service.d"), 0o755))
	must(t, os.WriteFile(filepath.Join(img, "etc/systemd/system/job@a.service.d/zzzz.conf"), []byte("[Service]\nLimitNOFILE=4096\n"), 0o644))
	bs, _ = VerifyBoot(env)
	if it := bootItem(t, bs, "worker@b.service LimitNOFILE"); strings.Contains(it.Problem, "job@a") {
		t.Errorf("verify --boot counts job@a.service.d for worker@b: %+v", it)
	}
}
