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
