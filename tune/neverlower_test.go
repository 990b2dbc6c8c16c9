package tune

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

// An unlimited nofile already on the host (systemd's infinity in a unit
// or as DefaultLimitNOFILE: PID 1's hard limit, fs.nr_open before
// sysctl.d; limits.d's unlimited or -1: fs.nr_open) gives 1048576 files
// here: hostprep never writes less, and says it kept it; systemd's
// infinity is kept as infinity (PID 1's hard limit may be more on the
// host: sysctl.fs.nr_open on the kernel command line).
func TestUnlimitedNowIsNeverLowered(t *testing.T) {
	for _, unlimited := range []string{"unlimited", "-1"} {
		h := newHost(t, nil) // fs.nr_open 1048576
		h.env.SystemdRunDir = h.root
		h.layFiles(map[string]string{
			"/etc/systemd/system/foo.service":          "[Service]\nExecStart=/bin/true\nLimitNOFILE=infinity\n",
			"/etc/systemd/system.conf.d/50-local.conf": "[Manager]\nDefaultLimitNOFILE=infinity\n",
			"/etc/security/limits.d/50-local.conf":     "* soft nofile " + unlimited + "\n* hard nofile " + unlimited + "\n",
		})
		p := &profiles.Profile{Name: "t",
			Limits:  profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 65536}, Users: []string{"*"}},
			Systemd: profiles.Systemd{Services: []string{"foo"}, LimitNOFILE: &profiles.Limit{Soft: 65536, Hard: 65536}, DefaultLimitNOFILE: &profiles.Limit{Soft: 1024, Hard: 65536}},
		}
		pl, err := NewPlan(p, h.env)
		must(t, err)
		for _, who := range []string{"foo.service", "DefaultLimitNOFILE", "new login sessions"} {
			found := false
			for _, s := range pl.Skipped {
				// pam_limits' unlimited is fs.nr_open; systemd's infinity
				// PID 1's hard limit, fs.nr_open before sysctl.d
				// (1048576 here); systemd's infinity stays infinity,
				// which on a host may be more
				how, hard := "resolves to fs.nr_open 1048576", "hard 1048576 (the profile asks for 65536)"
				if who != "new login sessions" {
					how, hard = "which writes infinity (infinity is PID 1's hard limit at boot, fs.nr_open before sysctl.d = 1048576", "hard infinity (the profile asks for 65536) and soft infinity"
				}
				found = found || (strings.Contains(s.Reason, who) && strings.Contains(s.Reason, hard) && strings.Contains(s.Reason, how))
			}
			if !found {
				t.Errorf("%s: plan does not say the unlimited nofile of %s is kept at fs.nr_open: %+v", unlimited, who, pl.Skipped)
			}
		}
		_, err = h.apply(p)
		must(t, err)
		unit, _ := h.file(files.ServiceDropIn("foo"))
		system, _ := h.file(files.SystemConf)
		limits, _ := h.file(files.LimitsConf)
		if !strings.Contains(unit, "LimitNOFILE=infinity:infinity\n") {
			t.Errorf("foo drop-in lowers LimitNOFILE=infinity:\n%s", unit)
		}
		if !strings.Contains(system, "DefaultLimitNOFILE=infinity:infinity\n") {
			t.Errorf("system.conf.d lowers DefaultLimitNOFILE=infinity:\n%s", system)
		}
		if !strings.Contains(limits, "hard nofile 1048576") || strings.Contains(limits, "65536") {
			t.Errorf("limits.d lowers %s:\n%s", unlimited, limits)
		}
	}
}
