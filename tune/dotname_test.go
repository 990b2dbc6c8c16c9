package tune

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/profiles"
)

// TestServiceNameWithDot: a unit named with a dot but no type after it
// (Debian's php8.2-fpm.service, named php8.2-fpm as `systemctl status
// php8.2-fpm` takes it) was refused by the profile check ("a name with a
// dot must end in .service"), and boot, files and preflight took
// "php8.2-fpm" for a complete unit name. Now the name is completed as
// systemctl completes it (internal/unitname): the drop-in is
// php8.2-fpm.service.d/60-hostprep.conf, the unit is installed, and
// verify --boot and status judge it ok; a .socket is still refused.
func TestServiceNameWithDot(t *testing.T) {
	root, env := newImage(t, map[string]string{"/lib/systemd/system/php8.2-fpm.service": "[Service]\nExecStart=/bin/true\n"})
	p, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [php8.2-fpm]\n  limit_nofile: {soft: 65536, hard: 65536}\n  tasks_max: 4096\n"))
	must(t, err)
	pl, err := NewPlan(p, env)
	must(t, err)
	if w := strings.Join(pl.Warnings, "\n"); w != "" {
		t.Errorf("plan warns:\n%s", w)
	}
	_, err = Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	if _, err := os.Stat(filepath.Join(root, "etc/systemd/system/php8.2-fpm.service.d/60-hostprep.conf")); err != nil {
		t.Errorf("no drop-in php8.2-fpm.service.d/60-hostprep.conf: %v", err)
	}
	got, _, err := hostconf.UnitNofile(root, "php8.2-fpm")
	must(t, err)
	if got.Soft != 65536 || !got.Set {
		t.Errorf("hostconf.UnitNofile(php8.2-fpm) = %s at %s", got, got.Where())
	}
	bs, err := VerifyBoot(env)
	must(t, err)
	var text bytes.Buffer
	must(t, bs.WriteText(&text))
	wantUnitItems(t, "verify --boot", bs, text.String(), true, nil, []string{"php8.2-fpm.service"})
	if _, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [mqtt.socket]\n  limit_nofile: {soft: 65536, hard: 65536}\n")); err == nil || !strings.Contains(err.Error(), "not a service unit") {
		t.Errorf("a .socket is taken: %v", err)
	}
}
