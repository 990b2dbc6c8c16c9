package facts

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// A recording keeps the links in the unit directories that systemd's
// unit name map reads, so a replay gives a unit the same alias names and
// their drop-ins: ssh.service gets sshd.service.d's LimitNOFILE through
// the alias sshd.service, worker@a.service job@a.service.d's through the
// instance alias, and a masked unit stays masked. Field case: the live
// host failed (the alias drop-in's 1024), the recording passed (the unit
// file's 65536).
func TestRecordKeepsUnitDirLinks(t *testing.T) {
	host := testenv.TempTree(t, map[string]string{
		"lib/systemd/system/ssh.service":                    "[Service]\nExecStart=/bin/true\nLimitNOFILE=65536\n",
		"etc/systemd/system/sshd.service":                   "symlink to /lib/systemd/system/ssh.service",
		"etc/systemd/system/sshd.service.d/10-x.conf":       "[Service]\nLimitNOFILE=1024\n",
		"lib/systemd/system/worker@.service":                "[Service]\nExecStart=/bin/true\nLimitNOFILE=65536\n",
		"etc/systemd/system/job@a.service":                  "symlink to ../../../lib/systemd/system/worker@.service",
		"etc/systemd/system/job@a.service.d/10-x.conf":      "[Service]\nLimitNOFILE=2048\n",
		"etc/systemd/system/multi-user.target.wants/x.conf": "",
		"lib/systemd/system/gone.service":                   "[Service]\nExecStart=/bin/true\n",
		"etc/systemd/system/gone.service":                   "symlink to /dev/null",
	})
	for _, unit := range []string{"ssh.service", "worker@a.service", "gone.service"} {
		g := &Gatherer{Root: host, F: &Facts{}, rec: newRecorder()}
		live, err := g.unitFromFiles(unit)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "rec")
		if err := g.rec.write(dir); err != nil {
			t.Fatal(err)
		}
		replay := &Gatherer{Root: filepath.Join(dir, host), F: &Facts{}}
		got, err := replay.unitFromFiles(unit)
		if err != nil {
			t.Fatal(err)
		}
		live.files, got.files = nil, nil
		if !reflect.DeepEqual(got, live) {
			t.Errorf("%s: replay %+v, live host %+v", unit, got, live)
		}
		if _, err := os.Lstat(filepath.Join(dir, host, "etc/systemd/system/multi-user.target.wants/x.conf")); err == nil {
			t.Errorf("%s: the recording copied a file no one read", unit)
		}
	}
}
