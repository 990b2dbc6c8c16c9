package tune

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

// TestFieldCasesInSync makes sure every shared field case has a copy in
// testdata/cases (the shared tree is next to the repository on the build
// host; the copies let the tests run where it is absent).
func TestFieldCasesInSync(t *testing.T) {
	testenv.CasesInSync(t, "tune", false)
}

// layFiles writes a case's host files under h.root, and a systemd-sysctl
// so the boot simulation uses systemd's rules as on Debian.
func (h *fakeHost) layFiles(fs map[string]string) {
	h.t.Helper()
	fs["/usr/lib/systemd/systemd-sysctl"] = ""
	testenv.WriteTree(h.t, h.root, fs)
}

func TestCaseLaterSysctlFileWinsAtBoot(t *testing.T) {
	c, p, err := loadCase(t, "later-sysctl-file-wins-at-boot")
	must(t, err)
	h := newHost(t, c.Host.Sysctl)
	h.layFiles(c.Host.Files)
	foreign := map[string]string{}
	for path := range c.Host.Files {
		b, _ := os.ReadFile(filepath.Join(h.root, path))
		foreign[path] = string(b)
	}
	pl, err := NewPlan(p, h.env)
	must(t, err)
	warn := strings.Join(pl.Warnings, "\n")
	for _, want := range []string{
		"sysctl net.core.somaxconn: after a reboot /usr/lib/sysctl.d/99-vendor.conf:1 sets 512",
		"sysctl fs.file-max: after a reboot /etc/sysctl.conf (as /etc/sysctl.d/99-sysctl.conf):2 sets 1000000",
		"never edits a file it does not own",
	} {
		if !strings.Contains(warn, want) {
			t.Errorf("plan warnings lack %q:\n%s", want, warn)
		}
	}
	var somaxconn *Change
	for i, ch := range pl.Changes {
		if ch.Key == "net.core.somaxconn" {
			somaxconn = &pl.Changes[i]
		}
	}
	if somaxconn == nil || somaxconn.Boot == nil || somaxconn.Boot.Value != "512" || somaxconn.Boot.File != "/usr/lib/sysctl.d/99-vendor.conf" || somaxconn.Boot.Line != 1 {
		t.Errorf("somaxconn change lacks boot {512, 99-vendor.conf, 1}: %+v", somaxconn)
	}
	res, err := h.apply(p)
	must(t, err)
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "99-vendor.conf:1") {
		t.Errorf("apply does not warn: %v", res.Warnings)
	}
	bs, err := VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "net.core.somaxconn", "99-vendor.conf:1", "fs.file-max", "/etc/sysctl.conf")
	if bs == nil || bs.Failing != 2 {
		t.Errorf("verify --boot: %+v", bs)
	}
	for path, want := range foreign {
		if b, _ := os.ReadFile(filepath.Join(h.root, path)); string(b) != want {
			t.Errorf("%s was edited", path)
		}
	}
	// Without the vendor line the old script's /etc/sysctl.conf line wins.
	must(t, os.WriteFile(filepath.Join(h.root, "usr/lib/sysctl.d/99-vendor.conf"), nil, 0o644))
	_, err = VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "fs.file-max", "/etc/sysctl.conf (as /etc/sysctl.d/99-sysctl.conf):1 sets 1024")
	if strings.Contains(err.Error(), "99-vendor") {
		t.Errorf("emptied vendor file still reported: %v", err)
	}
	// Without both, only fs.file-max (line 2 of /etc/sysctl.conf) is left.
	must(t, os.WriteFile(filepath.Join(h.root, "etc/sysctl.conf"), []byte("# cleaned\n\nfs.file-max = 1000000\n"), 0o644))
	_, err = VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "fs.file-max", "sysctl.conf):3")
	if strings.Contains(err.Error(), "somaxconn") {
		t.Errorf("somaxconn still reported: %v", err)
	}
}

func TestCaseConntrackLimitLostAtBoot(t *testing.T) {
	c, p, err := loadCase(t, "conntrack-limit-lost-at-boot")
	must(t, err)
	// The module is loaded now: the key exists.
	h := newHost(t, map[string]string{"net.netfilter.nf_conntrack_max": "262144"})
	h.layFiles(map[string]string{})
	if len(c.Host.ModulesLoaded) != 1 || c.Host.ModulesLoaded[0] != "nf_conntrack" {
		t.Fatalf("case changed: %+v", c.Host)
	}
	pl, err := NewPlan(p, h.env)
	must(t, err)
	var mod *Change
	for i, ch := range pl.Changes {
		if strings.HasSuffix(ch.File, files.ModulesLoad) {
			mod = &pl.Changes[i]
		}
	}
	if mod == nil || !strings.Contains(mod.Reason, "loads nf_conntrack at boot before systemd-sysctl") {
		t.Fatalf("plan does not write %s with the reason: %+v", files.ModulesLoad, pl.Changes)
	}
	_, err = h.apply(p)
	must(t, err)
	got, ok := h.file(files.ModulesLoad)
	if !ok || !strings.Contains(got, "\nnf_conntrack\n") {
		t.Fatalf("%s:\n%s", files.ModulesLoad, got)
	}
	if _, err := VerifyBoot(h.env); err != nil {
		t.Errorf("verify --boot after apply: %v", err)
	}
	// Without the modules-load.d file the key is lost at boot: verify says so.
	must(t, os.Remove(filepath.Join(h.root, files.ModulesLoad)))
	_, err = VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "net.netfilter.nf_conntrack_max", "nf_conntrack", "modules-load.d")
	must(t, os.WriteFile(filepath.Join(h.root, files.ModulesLoad), []byte(got), 0o644))
	h.rollback()
	if _, ok := h.file(files.ModulesLoad); ok {
		t.Error("rollback left the modules-load.d file")
	}

	// Image mode (--root DIR) writes it too.
	img := t.TempDir()
	_, err = Apply(t.Context(), p, Options{Env: Env{Root: img, Image: true, SkipPrivilegeCheck: true}})
	must(t, err)
	if b, err := os.ReadFile(filepath.Join(img, files.ModulesLoad)); err != nil || !strings.Contains(string(b), "nf_conntrack") {
		t.Errorf("image: %s: %q %v", files.ModulesLoad, b, err)
	}
}

func TestCaseApplyNeverLowersCapacity(t *testing.T) {
	c, p, err := loadCase(t, "apply-never-lowers-capacity")
	must(t, err)
	ls := c.Host.LoginSessionNofile
	if ls == nil || ls.Hard != 20000 {
		t.Fatalf("case changed: %+v", c.Host)
	}
	for _, how := range []string{"pid1", "limits.conf"} {
		t.Run(how, func(t *testing.T) {
			h := newHost(t, nil)
			if how == "pid1" {
				// Without systemd, new sessions inherit PID 1's limit.
				writeProcLimits(t, h, 1, ls.Soft, ls.Hard)
			} else {
				must(t, os.WriteFile(filepath.Join(h.root, "etc/security/limits.conf"), []byte(fmt.Sprintf("*    - nofile %d\nroot - nofile %d\n", ls.Hard, ls.Hard)), 0o644))
			}
			pl, err := NewPlan(p, h.env)
			must(t, err)
			var kept string
			for _, s := range pl.Skipped {
				if strings.HasSuffix(s.File, files.LimitsConf) {
					kept = s.Reason
				}
			}
			if !strings.Contains(kept, "nofile kept at hard 20000 (the profile asks for 16384)") || !strings.Contains(kept, "never lowers") {
				t.Errorf("plan does not say nofile is kept at 20000: %q", kept)
			}
			_, err = h.apply(p)
			must(t, err)
			got, _ := h.file(files.LimitsConf)
			if !strings.Contains(got, "hard nofile 20000") || strings.Contains(got, "16384") {
				t.Errorf("limits.d file lowers nofile:\n%s", got)
			}
		})
	}
}

func TestCaseHostWideSoftNofileStays1024(t *testing.T) {
	_, p, err := loadCase(t, "host-wide-soft-nofile-stays-1024")
	must(t, err)
	h := newHost(t, nil)
	h.env.SystemdRunDir = h.root // "systemd is running"
	pl, err := NewPlan(p, h.env)
	must(t, err)
	for _, w := range append(pl.Warnings, pl.Notes...) {
		if strings.Contains(w, "FD_SETSIZE") {
			t.Errorf("the built-in raises a host-wide soft: %s", w)
		}
	}
	_, err = h.apply(p)
	must(t, err)
	limits, _ := h.file(files.LimitsConf)
	system, _ := h.file(files.SystemConf)
	unit, _ := h.file(files.ServiceDropIn("emqx"))
	if !strings.Contains(limits, "*    soft nofile 1024\n") || !strings.Contains(limits, "*    hard nofile 2097152\n") {
		t.Errorf("limits.d:\n%s", limits)
	}
	if !strings.Contains(system, "DefaultLimitNOFILE=1024:2097152\n") {
		t.Errorf("system.conf.d:\n%s", system)
	}
	if !strings.Contains(unit, "LimitNOFILE=2097152:2097152\n") {
		t.Errorf("emqx drop-in:\n%s", unit)
	}
	// A profile that raises the host-wide soft gets a note, and a warning
	// past 1048576.
	for soft, where := range map[uint64]string{16384: "note", 2097152: "warning"} {
		q := *p
		q.Limits.Nofile = &profiles.Limit{Soft: soft, Hard: 2097152}
		pl, err := NewPlan(&q, newHost(t, nil).env)
		must(t, err)
		list := pl.Notes
		if where == "warning" {
			list = pl.Warnings
		}
		if !strings.Contains(strings.Join(list, "\n"), "select()") || !strings.Contains(strings.Join(list, "\n"), "FD_SETSIZE") {
			t.Errorf("soft %d: no %s naming select() and FD_SETSIZE: notes %v warnings %v", soft, where, pl.Notes, pl.Warnings)
		}
	}
}

func TestCaseBufferFieldAboveIntMax(t *testing.T) {
	_, _, err := loadCase(t, "buffer-field-above-int-max")
	wantCode(t, err, exitcode.BadInput, "net.ipv4.tcp_rmem", "field max", "4294967296", "2147483647", "int[3]")
	// The same for tcp_wmem and every key held in an int, built in code
	// (reaching tune's own check), with nothing touched.
	for key, v := range map[string]string{"net.ipv4.tcp_wmem": "4096 16384 4294967296", "net.core.rmem_max": "4294967296", "net.core.somaxconn": "2147483648", "net.ipv4.tcp_max_syn_backlog": "3000000000"} {
		h := newHost(t, nil)
		before := h.snapshot()
		_, err := h.apply(&profiles.Profile{Name: "case", Sysctl: map[string]profiles.Sysctl{key: {Value: v}}})
		wantCode(t, err, exitcode.BadInput, key, "2147483647")
		h.assertUnchanged(before)
	}
}

func TestCaseSomaxconnAbove65535OldKernel(t *testing.T) {
	c, p, err := loadCase(t, "somaxconn-above-65535-old-kernel")
	must(t, err)
	host := map[string]string{"kernel.osrelease": c.Host.Kernel}
	for k, v := range c.Host.Sysctl {
		host[k] = v
	}
	h := newHost(t, host)
	before := h.snapshot()
	_, err = h.apply(p)
	wantCode(t, err, exitcode.BadInput, "net.core.somaxconn", "262144", "4.15.0", "0..65535", "u16", "5.4")
	h.assertUnchanged(before)
	// On kernel 6 262144 is fine.
	host["kernel.osrelease"] = "6.1.0-18-amd64"
	h6 := newHost(t, host)
	if _, err := h6.apply(p); err != nil {
		t.Fatal(err)
	}
	if got := h6.get("net.core.somaxconn"); got != "262144" {
		t.Errorf("somaxconn on kernel 6: %s", got)
	}
}

// The fix the boot warning offers: --persist-name with a name that sorts
// after the winning file makes hostprep's values win at boot; rollback
// removes both owned files.
func TestPersistNameWinsAtBoot(t *testing.T) {
	c, p, err := loadCase(t, "later-sysctl-file-wins-at-boot")
	must(t, err)
	h := newHost(t, c.Host.Sysctl)
	h.layFiles(c.Host.Files)
	res, err := h.apply(p)
	must(t, err)
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "--persist-name zz-hostprep.conf") {
		t.Fatalf("no --persist-name hint:\n%s", w)
	}
	wantCode(t, CheckPersistName("../x.conf"), exitcode.BadInput, "--persist-name", ".conf")
	must(t, CheckPersistName("zz-hostprep.conf"))
	h.env.PersistName = "zz-hostprep.conf"
	if _, err := h.apply(p); err != nil {
		t.Fatal(err)
	}
	h.env.PersistName = ""
	if bs, err := VerifyBoot(h.env); err != nil {
		t.Fatalf("verify --boot with hostprep's file read last: %v %+v", err, bs)
	}
	h.rollback()
	for _, f := range []string{files.SysctlConf, "/etc/sysctl.d/zz-hostprep.conf"} {
		if _, ok := h.file(f); ok {
			t.Errorf("rollback left %s", f)
		}
	}
}

// A later limits.d file or systemd drop-in that lowers what hostprep
// writes wins at boot: plan warns naming its file:line and verify --boot
// fails.
func TestLaterLimitsAndDropInWinAtBoot(t *testing.T) {
	_, p, err := loadCase(t, "host-wide-soft-nofile-stays-1024") // mqtt-broker-1m
	must(t, err)
	h := newHost(t, nil)
	h.env.SystemdRunDir = h.root
	h.layFiles(map[string]string{
		"/etc/security/limits.d/90-local.conf":                  "# local cap\n* hard nofile 65536\n",
		"/etc/systemd/system.conf.d/90-local.conf":              "[Manager]\nDefaultLimitNOFILE=1024:65536\n",
		"/etc/systemd/system/emqx.service.d/90-local.conf":      "[Service]\nLimitNOFILE=65536\n",
		"/etc/systemd/system/mosquitto.service.d/10-early.conf": "[Service]\nLimitNOFILE=65536\n",
	})
	pl, err := NewPlan(p, h.env)
	must(t, err)
	warn := strings.Join(pl.Warnings, "\n")
	for _, want := range []string{
		"limits.d nofile for *: new login sessions get nofile 1024:65536, below the 1024:2097152 hostprep wrote: /etc/security/limits.d/90-local.conf:2",
		"DefaultLimitNOFILE: after a reboot systemd uses 1024:65536 from /etc/systemd/system.conf.d/90-local.conf:2",
		"emqx.service LimitNOFILE: after a reboot systemd uses 65536:65536 from /etc/systemd/system/emqx.service.d/90-local.conf:2",
	} {
		if !strings.Contains(warn, want) {
			t.Errorf("plan warnings lack %q:\n%s", want, warn)
		}
	}
	if strings.Contains(warn, "mosquitto.service LimitNOFILE") {
		t.Errorf("an earlier drop-in (10-early.conf) does not win over 60-hostprep.conf:\n%s", warn)
	}
	_, err = h.apply(p)
	must(t, err)
	_, err = VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "90-local.conf:2", "DefaultLimitNOFILE", "emqx.service")
}

// tcp_mem (in pages) above physical memory and a conntrack table that
// would not fit are warnings naming both numbers.
func TestMemoryRelativeWarnings(t *testing.T) {
	h := newHost(t, map[string]string{"net.netfilter.nf_conntrack_max": "262144"})
	must(t, os.WriteFile(filepath.Join(h.proc, "meminfo"), []byte("MemTotal:        4000000 kB\nMemFree:  1000 kB\n"), 0o644))
	p := &profiles.Profile{Name: "ram", Sysctl: map[string]profiles.Sysctl{
		"net.ipv4.tcp_mem":               {Value: "786432 1048576 1572864", Mode: profiles.AtLeast},
		"net.netfilter.nf_conntrack_max": {Value: "20000000", Mode: profiles.AtLeast},
	}}
	pl, err := NewPlan(p, h.env)
	must(t, err)
	w := strings.Join(pl.Warnings, "\n")
	for _, want := range []string{"tcp_mem", "pressure 1048576 pages is 4.0 GiB, above this host's physical memory (3.8 GiB)", "max 1572864 pages", "tcp_mem is in pages", "nf_conntrack_max 20000000: a full table takes about 6.0 GiB"} {
		if !strings.Contains(w, want) {
			t.Errorf("warnings lack %q:\n%s", want, w)
		}
	}
}

// After an apply, what makes a systemd nofile setting lose at boot is
// named for what it is, with the fix that works: hostprep's drop-in
// masked or removed (not read at all: apply writes it again), hostprep's
// drop-in edited (apply writes it again), or another file read after it
// (change that file: apply cannot help).
func TestSystemdDropInProblemsNameTheCause(t *testing.T) {
	_, p, err := loadCase(t, "host-wide-soft-nofile-stays-1024") // mqtt-broker-1m: emqx.service
	must(t, err)
	const own = "/etc/systemd/system/emqx.service.d/60-hostprep.conf"
	for _, c := range []struct {
		name    string
		change  func(h *fakeHost)
		want    []string
		notWant string
	}{
		{"masked", func(h *fakeHost) {
			path := filepath.Join(h.root, own)
			must(t, os.Remove(path))
			must(t, os.Symlink("/dev/null", path))
		}, []string{"hostprep's drop-in " + own + " is not read", "masked", "hostprep tune apply"}, "sorts after"},
		{"removed", func(h *fakeHost) {
			must(t, os.Remove(filepath.Join(h.root, own)))
		}, []string{"is not read", "removed", "hostprep tune apply"}, "sorts after"},
		{"hidden by a mask in system.control", func(h *fakeHost) {
			path := filepath.Join(h.root, "/etc/systemd/system.control/emqx.service.d/60-hostprep.conf")
			must(t, os.MkdirAll(filepath.Dir(path), 0o755))
			must(t, os.Symlink("/dev/null", path))
		}, []string{"hidden by /etc/systemd/system.control/emqx.service.d/60-hostprep.conf", "a mask", "remove that file"}, "hostprep tune apply"},
		{"edited", func(h *fakeHost) {
			h.layFiles(map[string]string{own: "[Service]\nLimitNOFILE=4096\n"})
		}, []string{"from " + own + ":2", "hostprep's drop-in was edited", "hostprep tune apply"}, "not read"},
		{"a later drop-in", func(h *fakeHost) {
			h.layFiles(map[string]string{"/etc/systemd/system/emqx.service.d/90-local.conf": "[Service]\nLimitNOFILE=4096\n"})
		}, []string{"90-local.conf:2", "sorts after hostprep's", "change or remove that line"}, "hostprep tune apply"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			h.env.SystemdRunDir = h.root
			_, err := h.apply(p)
			must(t, err)
			c.change(h)
			bs, err := VerifyBoot(h.env)
			wantCode(t, err, exitcode.Failed)
			var problem string
			for _, it := range bs.Items {
				if it.Limit == "emqx.service LimitNOFILE" {
					problem = it.Problem
				}
			}
			for _, w := range c.want {
				if !strings.Contains(problem, w) {
					t.Errorf("problem lacks %q: %q", w, problem)
				}
			}
			if strings.Contains(problem, c.notWant) {
				t.Errorf("problem says %q, which does not fit: %q", c.notWant, problem)
			}
		})
	}
}

// The same for pam_limits: hostprep's limits.d file edited is named as
// such (apply writes it again), not as a line of a file hostprep does not
// own.
func TestEditedLimitsFileIsNamedAsHostpreps(t *testing.T) {
	h := newHost(t, nil)
	_, err := h.apply(&profiles.Profile{Name: "n", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 1048576}}})
	must(t, err)
	conf, _ := h.file(files.LimitsConf)
	h.layFiles(map[string]string{files.LimitsConf: strings.ReplaceAll(conf, "1048576", "65536")})
	bs, err := VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed)
	var problems []string
	for _, it := range bs.Items {
		if it.Problem != "" {
			problems = append(problems, it.Problem)
		}
	}
	got := strings.Join(problems, "\n")
	if !strings.Contains(got, "hostprep's "+files.LimitsConf+" was edited") || !strings.Contains(got, "hostprep tune apply") || strings.Contains(got, "does not own") {
		t.Errorf("problems:\n%s", got)
	}
}

// The @group lines hostprep writes are checked at boot like "*" and user
// lines: a later file's @adm line below hostprep's wins for the group's
// members and verify --boot fails naming it.
func TestGroupLimitsAreCheckedAtBoot(t *testing.T) {
	h := newHost(t, nil)
	_, err := h.apply(&profiles.Profile{Name: "g", Limits: profiles.Limits{Users: []string{"@adm"}, Nofile: &profiles.Limit{Soft: 1024, Hard: 524288}}})
	must(t, err)
	if bs, err := VerifyBoot(h.env); err != nil || len(bs.Items) != 1 || bs.Items[0].Limit != "limits.d nofile for @adm" {
		t.Fatalf("verify --boot right after the apply: %v %+v", err, bs)
	}
	h.layFiles(map[string]string{"/etc/security/limits.d/90-local.conf": "@adm hard nofile 4096\n"})
	_, err = VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "limits.d nofile for @adm", "90-local.conf:1")
}

// pam_limits lowers a soft limit above the hard one to the hard one, so
// the boot value shown is what sessions get (524288:524288), not the
// soft line's 900000.
func TestBootSoftAboveHardIsClamped(t *testing.T) {
	h := newHost(t, nil)
	_, err := h.apply(&profiles.Profile{Name: "n", Limits: profiles.Limits{Nofile: &profiles.Limit{Soft: 1024, Hard: 524288}}})
	must(t, err)
	h.layFiles(map[string]string{"/etc/security/limits.d/90-local.conf": "* soft nofile 900000\n"})
	bs, err := VerifyBoot(h.env)
	must(t, err)
	for _, it := range bs.Items {
		if it.Limit == "limits.d nofile for *" && it.Boot.Value != "524288:524288" {
			t.Errorf("boot value %q, want 524288:524288 (soft lowered to the hard by pam_limits)", it.Boot.Value)
		}
	}
}

// Every pam_limits line kind that can take a session's nofile from
// hostprep's is checked at boot (field case: a uid range, a "root -"
// line and a value with trailing text were ignored and verify --boot
// said ok): uid ranges (user rank), an @gid range, the two-field
// "DOMAIN -" line (no limits at all), values strtoul reads.
func TestEveryLimitsLineKindIsCheckedAtBoot(t *testing.T) {
	for _, c := range []struct{ name, line, item, mention string }{
		{"uid range of ordinary users", "1000: hard nofile 8192\n", "limits.d nofile for *", "90-local.conf:1"},
		{"uid range holding root", "0: hard nofile 8192\n", "limits.d nofile for root", "90-local.conf:1"},
		{"exact uid of root", ":0 hard nofile 8192\n", "limits.d nofile for root", "90-local.conf:1"},
		{"gid range of ordinary users", "@1000: hard nofile 8192\n", "limits.d nofile for *", "90-local.conf:1"},
		{"no limits for root", "root -\n", "limits.d nofile for root", "PAM_IGNORE"},
		{"value with trailing text", "* hard nofile 8192x\n", "limits.d nofile for *", "90-local.conf:1"},
		{"a fifth field", "* hard nofile 8192 extra\n", "limits.d nofile for *", "90-local.conf:1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			_, err := h.apply(&profiles.Profile{Name: "n", Limits: profiles.Limits{Users: []string{"*", "root"}, Nofile: &profiles.Limit{Soft: 1024, Hard: 524288}}})
			must(t, err)
			h.layFiles(map[string]string{"/etc/security/limits.d/90-local.conf": c.line})
			bs, err := VerifyBoot(h.env)
			wantCode(t, err, exitcode.Failed, c.item, c.mention)
			for _, it := range bs.Items {
				if it.Limit == c.item && it.OK {
					t.Errorf("%s: ok at boot with %q", it.Limit, c.line)
				}
			}
		})
	}
}

// A limits.d entry pam_limits cannot open (a link to a missing file)
// fails every login session; verify --boot said ok.
func TestBrokenLimitsEntryFailsAtBoot(t *testing.T) {
	h := newHost(t, nil)
	_, err := h.apply(&profiles.Profile{Name: "n", Limits: profiles.Limits{Users: []string{"*", "root"}, Nofile: &profiles.Limit{Soft: 1024, Hard: 524288}}})
	must(t, err)
	must(t, os.Symlink("/nonexistent", filepath.Join(h.root, "etc/security/limits.d/95-dangling.conf")))
	_, err = VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "limits.d nofile for *", "95-dangling.conf", "fails every login session")
}
