package tune

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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

// writeProcLimits writes PROC/pid/limits with the given nofile.
func writeProcLimits(t testing.TB, h *fakeHost, pid int, soft, hard uint64) {
	t.Helper()
	lim := fmt.Sprintf("Limit                     Soft Limit           Hard Limit           Units\nMax open files            %d                %d                files\n", soft, hard)
	must(t, os.MkdirAll(filepath.Join(h.proc, strconv.Itoa(pid)), 0o755))
	must(t, os.WriteFile(filepath.Join(h.proc, strconv.Itoa(pid), "limits"), []byte(lim), 0o644))
}

// What a new login session gets with no limits line is what the login
// process tree has (PID 1 without systemd, the manager's
// DefaultLimitNOFILE with it), never the shell that ran hostprep.
func TestSessionNofileIgnoresTheCallersShell(t *testing.T) {
	for _, systemd := range []bool{false, true} {
		h := newHost(t, nil)
		writeProcLimits(t, h, os.Getppid(), 18000, 20000) // the caller's `ulimit -Sn 18000`
		writeProcLimits(t, h, 1, 1024, 4096)
		if systemd {
			h.env.SystemdRunDir = h.root
			h.layFiles(map[string]string{"/etc/systemd/system.conf.d/50-local.conf": "[Manager]\nDefaultLimitNOFILE=1024:4096\n"})
		}
		p := sysTune()
		p.Limits.Nofile = &profiles.Limit{Soft: 1024, Hard: 2097152}
		_, err := h.apply(p)
		must(t, err)
		limits, _ := h.file(files.LimitsConf)
		if !strings.Contains(limits, "*    soft nofile 1024\n") || !strings.Contains(limits, "root soft nofile 1024\n") {
			t.Errorf("systemd %v: host-wide soft follows the caller's shell:\n%s", systemd, limits)
		}
	}
	// A limits.d line that applies wins; a user it does not cover (root
	// for "*") gets the login tree's, and the reason says which.
	h := newHost(t, nil)
	writeProcLimits(t, h, os.Getppid(), 20000, 20000)
	writeProcLimits(t, h, 1, 1024, 8192)
	h.layFiles(map[string]string{"/etc/security/limits.d/90-x.conf": "* soft nofile 1024\n* hard nofile 4096\n"})
	p := sysTune()
	p.Limits.Nofile = &profiles.Limit{Soft: 1024, Hard: 2048}
	pl, err := NewPlan(p, h.env)
	must(t, err)
	var reasons []string
	for _, s := range pl.Skipped {
		reasons = append(reasons, s.Reason)
	}
	all := strings.Join(reasons, "\n")
	if strings.Contains(all, "20000") || strings.Contains(all, "inherited from the process") || !strings.Contains(all, "hard 8192 (the profile asks for 2048)") || !strings.Contains(all, "/proc/1/limits") || !strings.Contains(all, `"root"`) {
		t.Errorf("skip reason does not name the login tree's limit for root:\n%s", all)
	}
}

// A key the runtime already satisfies (no runtime change, so not in the
// journal's keys) is still compared at boot by its mode.
func TestVerifyBootUsesTheModeOfEveryKey(t *testing.T) {
	for _, c := range []struct {
		mode   profiles.Mode
		run    string
		wantOK bool
	}{
		{profiles.AtLeast, "5000", true},
		{profiles.AtLeast, "3000", false},
		{profiles.AtMost, "3000", true},
		{profiles.AtMost, "5000", false},
	} {
		h := newHost(t, map[string]string{"net.core.somaxconn": "4096"})
		h.layFiles(map[string]string{"/run/sysctl.d/90-run.conf": "net.core.somaxconn = " + c.run + "\n"})
		p := &profiles.Profile{Name: "t", Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: "4096", Mode: c.mode}}}
		_, err := h.apply(p)
		must(t, err)
		bs, err := VerifyBoot(h.env)
		if (err == nil) != c.wantOK {
			t.Errorf("%s 4096 with %s at boot: verify --boot err %v, want ok %v (%+v)", c.mode, c.run, err, c.wantOK, bs)
		}
	}
}

// verify --boot with nothing applied says so and passes, as verify does.
func TestVerifyBootNothingApplied(t *testing.T) {
	h := newHost(t, nil)
	bs, err := VerifyBoot(h.env)
	if err != nil || bs == nil || bs.Applied {
		t.Fatalf("verify --boot with no journal: %+v, %v; want not applied, no error", bs, err)
	}
	var boot, live strings.Builder
	must(t, bs.WriteText(&boot))
	st, _, err := Verify(nil, h.env)
	must(t, err)
	must(t, st.WriteText(&live))
	if boot.String() != live.String() || !strings.HasPrefix(boot.String(), "nothing applied") {
		t.Errorf("verify --boot prints %q, verify %q", boot.String(), live.String())
	}
}

// A modules-load.d file masked with a /dev/null link after apply: verify
// --boot shows the key it loads the module for as absent at boot (not a
// file's value), and rollback says the file was replaced by a link.
func TestMaskedModulesLoadFile(t *testing.T) {
	_, p, err := loadCase(t, "conntrack-limit-lost-at-boot")
	must(t, err)
	h := newHost(t, map[string]string{"net.netfilter.nf_conntrack_max": "262144"})
	h.layFiles(map[string]string{})
	_, err = h.apply(p)
	must(t, err)
	host := filepath.Join(h.root, files.ModulesLoad)
	must(t, os.Remove(host))
	must(t, os.Symlink("/dev/null", host))
	bs, _ := VerifyBoot(h.env)
	found := false
	for _, it := range bs.Items {
		if it.Key == "net.netfilter.nf_conntrack_max" {
			found = true
			if it.OK || it.Boot.Value != "absent" || it.Boot.File != "" {
				t.Errorf("at boot: %+v, want absent", it)
			}
		}
	}
	if !found {
		t.Fatalf("no boot item for nf_conntrack_max: %+v", bs.Items)
	}
	res := h.rollback()
	var reason string
	for _, l := range res.Left {
		if l.File == host {
			reason = l.Reason
		}
	}
	if !strings.Contains(reason, "replaced by a symlink to /dev/null (masked)") || strings.Contains(reason, "header still names") {
		t.Errorf("rollback says %q for the masked %s", reason, files.ModulesLoad)
	}
}
