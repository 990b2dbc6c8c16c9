package tune

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/profiles"
)

// TestUnmaskAdviceLiftsTheMask: verify --boot's problem for a masked
// unit told to run `systemctl unmask UNIT` wherever the mask was; Debian's
// systemctl 252 (run with --root over the same tree) removes a mask in
// /etc/systemd/system only: for a package's mask in /lib/systemd/system
// it exits 0 and leaves the unit masked. Now the command is suggested
// only where it lifts the mask (it does, run as printed), and a mask in
// /lib is named with the override that does (a unit file in /etc); the
// problem names the mask itself, also when reached through an alias.
func TestUnmaskAdviceLiftsTheMask(t *testing.T) {
	if _, err := exec.LookPath("systemctl"); err != nil {
		t.Skip("systemctl is needed:", err)
	}
	const unit = "[Service]\nExecStart=/bin/true\n"
	for _, c := range []struct {
		name, mask string
		tree       map[string]string
	}{
		{name: "/etc mask", mask: "/etc/systemd/system/mosquitto.service", tree: map[string]string{"/etc/systemd/system/mosquitto.service": "symlink to /dev/null", "/lib/systemd/system/mosquitto.service": unit}},
		{name: "/etc empty file", mask: "/etc/systemd/system/mosquitto.service", tree: map[string]string{"/etc/systemd/system/mosquitto.service": "", "/lib/systemd/system/mosquitto.service": unit}},
		{name: "/lib mask", mask: "/lib/systemd/system/mosquitto.service", tree: map[string]string{"/lib/systemd/system/mosquitto.service": "symlink to /dev/null"}},
		{name: "an alias of a unit masked in /lib", mask: "/lib/systemd/system/mqtt.service", tree: map[string]string{"/lib/systemd/system/mqtt.service": "symlink to /dev/null",
			"/etc/systemd/system/mosquitto.service": "symlink to /lib/systemd/system/mqtt.service"}},
		// systemctl unmask removes the mask of the name it is given; here
		// that is mosquitto-real.service, not the alias mosquitto.service
		{name: "an alias of a unit masked in /etc", mask: "/etc/systemd/system/mosquitto-real.service", tree: map[string]string{
			"/lib/systemd/system/mosquitto-real.service": unit, "/lib/systemd/system/mosquitto.service": "symlink to mosquitto-real.service",
			"/etc/systemd/system/mosquitto-real.service": "symlink to /dev/null"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, env := newImage(t, c.tree)
			p, err := profiles.Parse("t.yaml", []byte("systemd:\n  services: [mosquitto]\n  limit_nofile: {soft: 65536, hard: 65536}\n"))
			must(t, err)
			_, err = Apply(t.Context(), p, Options{Env: env})
			must(t, err)
			_, err = VerifyBoot(env)
			wantCode(t, err, 1, "the unit is masked ("+c.mask+" is empty or a link to /dev/null)")
			cmd := regexp.MustCompile(`systemctl unmask (--runtime )?\S+\)`).FindString(err.Error())
			lib := strings.HasPrefix(c.mask, "/lib/")
			if lib != (cmd == "") {
				t.Fatalf("mask %s: suggested %q:\n%v", c.mask, cmd, err)
			}
			if lib {
				cmd = "systemctl unmask mosquitto.service)" // what it said before: run it to see it does nothing
				if !strings.Contains(err.Error(), "unit file /etc/systemd/system/"+strings.TrimPrefix(c.mask, "/lib/systemd/system/")) {
					t.Errorf("no override named for the mask in /lib:\n%v", err)
				}
			}
			args := append([]string{"--root=" + root}, strings.Fields(strings.TrimSuffix(cmd, ")"))[1:]...)
			if out, err := exec.Command("systemctl", args...).CombinedOutput(); err != nil {
				t.Fatalf("systemctl %q: %v\n%s", args, err, out)
			}
			_, read, err := hostconf.UnitNofile(root, "mosquitto")
			must(t, err)
			if masked := len(read) > 0 && read[0].Masked; masked != lib {
				t.Errorf("after systemctl %q the unit is masked: %v, want %v (%v)", args, masked, lib, read)
			}
		})
	}
}
