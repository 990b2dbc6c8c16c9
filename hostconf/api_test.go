package hostconf_test

import (
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/testenv"
)

// NofileForGroups takes the groups from the caller (NSS, a recording),
// not from ROOT/etc/group, which this tree does not have.
func TestNofileForGroups(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/etc/security/limits.conf":         "*  soft nofile 1024\n*  hard nofile 4096\n",
		"/etc/security/limits.d/90-db.conf": "@dba hard nofile 65536\n",
	})
	n, err := hostconf.NofileForGroups(root, "alice", []string{"users", "dba"})
	must(t, err)
	if n.Soft.Value != 1024 || n.Soft.Domain != "*" || n.Hard.Value != 65536 || n.Hard.Where() != "/etc/security/limits.d/90-db.conf:1" {
		t.Errorf("alice in dba: soft %+v hard %+v", n.Soft, n.Hard)
	}
	if n, err := hostconf.NofileForGroups(root, "alice", nil); err != nil || n.Hard.Value != 4096 {
		t.Errorf("alice in no group: hard %+v %v, want 4096 from *", n.Hard, err)
	}
}

// LastSetting: the last assignment in the section wins across the unit
// and its drop-ins, an empty one resets, other sections do not count.
func TestLastSettingUser(t *testing.T) {
	root := testenv.TempTree(t, map[string]string{
		"/usr/lib/systemd/system/emqx.service":             "[Unit]\nUser=nobody\n[Service]\nUser=emqx\n",
		"/etc/systemd/system/emqx.service.d/10-user.conf":  "[Service]\nUser=broker\n",
		"/etc/systemd/system/emqx.service.d/20-reset.conf": "[Service]\nUser=\n",
	})
	_, files, err := hostconf.UnitNofile(root, "emqx")
	must(t, err)
	if v, where, err := hostconf.LastSetting(root, files, "Service", "User"); err != nil || v != "" || where != "" {
		t.Errorf("reset by an empty User=: %q %q %v", v, where, err)
	}
	if v, where, _ := hostconf.LastSetting(root, files[:2], "Service", "User"); v != "broker" || where != "/etc/systemd/system/emqx.service.d/10-user.conf:2" {
		t.Errorf("drop-in wins: %q at %q", v, where)
	}
	for in, ok := range map[string]bool{"65536": true, "1024:524288": true, "infinity": true, "2:1": false, "lots": false} {
		if _, _, got := hostconf.ParseNofile(in); got != ok {
			t.Errorf("ParseNofile(%q) ok %v, want %v", in, got, ok)
		}
	}
}
