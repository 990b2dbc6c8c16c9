package tune

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

// TestReservedPortsSpellingsAtBoot: net.ipv4.ip_local_reserved_ports is
// a set of ports, which the kernel prints one way ("8083-8084") however
// it was written ("8084,8083", "8083,8084,8083-8083"). A later sysctl.d
// file that writes hostprep's set in another spelling was a false
// DIFFERS in verify --boot and tune status (and, for a one-port set, a
// false "the kernel refuses"); now the sets are compared, and only a
// different set or a list the kernel refuses differs.
func TestReservedPortsSpellingsAtBoot(t *testing.T) {
	const key = "net.ipv4.ip_local_reserved_ports"
	for _, c := range []struct {
		name, profile, admin string
		ok                   bool
		problem              string
	}{
		{"reordered", "8083-8084", "8084,8083", true, ""},
		{"duplicates and overlap", "8083-8084,1883", "8083,8084,8083-8083,1883,1883", true, ""},
		{"one port", "8083", "8083,8083", true, ""},
		{"another set", "8083-8084", "8083", false, "boots with 8083, not 8083-8084"},
		// a later file that reserves every port hostprep reserves and
		// more: hostprep's ports are reserved (was a false DIFFERS)
		{"superset", "1883,8083-8084", "1883,8083-8084,9000", true, ""},
		{"refused", "8083-8084", "8083, 8084", false, "which the kernel refuses (EINVAL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			h.layFiles(map[string]string{})
			_, err := h.apply(&profiles.Profile{Name: "p", Sysctl: map[string]profiles.Sysctl{key: {Value: c.profile}}})
			must(t, err)
			h.layFiles(map[string]string{"/etc/sysctl.d/99-admin.conf": key + " = " + c.admin + "\n"})
			bs, err := VerifyBoot(h.env)
			var it *BootItem
			for i := range bs.Items {
				if bs.Items[i].Key == key {
					it = &bs.Items[i]
				}
			}
			if it == nil {
				t.Fatalf("verify --boot has no %s: %+v (%v)", key, bs, err)
			}
			if it.OK != c.ok || (err == nil) != c.ok || !strings.Contains(it.Problem, c.problem) {
				t.Errorf("%s = %q after hostprep's %q: ok %v (want %v), problem %q (want %q), err %v", key, c.admin, c.profile, it.OK, c.ok, it.Problem, c.problem, err)
			}
			st, err := StatusOf(h.env)
			must(t, err)
			for _, b := range st.Boot {
				if b.Key == key && b.OK != c.ok {
					t.Errorf("tune status: %s at boot ok %v, want %v: %s", key, b.OK, c.ok, b.Problem)
				}
			}
		})
	}
}

// TestImageReservedPortsKeptAtBoot: in image mode the image's own
// ip_local_reserved_ports (etc/sysctl.d/10-app.conf reserving 9000) is
// merged into hostprep's, as host mode merges the live value: hostprep's
// file, read later at boot, wrote only its own ports and dropped 9000,
// while plan, apply and verify --boot said ok; --persist-name
// zzz-hostprep.conf dropped it too.
func TestImageReservedPortsKeptAtBoot(t *testing.T) {
	const key = "net.ipv4.ip_local_reserved_ports"
	for _, name := range []string{"", "zzz-hostprep.conf"} {
		_, env := newImage(t, map[string]string{
			"/etc/sysctl.d/10-app.conf":       key + " = 9000\n",
			"/usr/lib/systemd/systemd-sysctl": "",
		})
		env.PersistName = name
		p := &profiles.Profile{Name: "p", Sysctl: map[string]profiles.Sysctl{key: {Value: "1883,8083-8084"}}}
		_, err := Apply(t.Context(), p, Options{Env: env})
		must(t, err)
		bs, err := VerifyBoot(env)
		must(t, err)
		for _, it := range bs.Items {
			if it.Key == key && it.Boot.Value != "1883,8083-8084,9000" {
				t.Errorf("--persist-name %q: %s at boot %q (%s:%d), want the image's 9000 kept: 1883,8083-8084,9000", name, key, it.Boot.Value, it.Boot.File, it.Boot.Line)
			}
		}
		// a second apply keeps it (hostprep's own file is not the image's value)
		_, err = Apply(t.Context(), p, Options{Env: env})
		must(t, err)
		pl, err := NewPlan(p, env)
		must(t, err)
		if !strings.Contains(strings.Join(pl.Notes, "\n"), "the image's /etc/sysctl.d/10-app.conf:1 reserves 9000 at boot") {
			t.Errorf("--persist-name %q: plan does not say it keeps the image's 9000: %q", name, pl.Notes)
		}
		if pl.Changed {
			t.Errorf("--persist-name %q: plan after apply changes %+v", name, pl.Changes)
		}
	}
}
