package tune

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

// infinityProfile asks for hard nofile 2000000 for emqx.service and every
// service (DefaultLimitNOFILE), with fs.nr_open raised to fit it.
func infinityProfile() *profiles.Profile {
	l := &profiles.Limit{Soft: 1024, Hard: 2000000}
	return &profiles.Profile{Name: "inf",
		Sysctl:  map[string]profiles.Sysctl{"fs.nr_open": {Value: "4194304", Mode: profiles.AtLeast}},
		Systemd: profiles.Systemd{DefaultLimitNOFILE: l, Services: []string{"emqx"}, LimitNOFILE: l}}
}

// bootItem is the item of verify --boot named name ("emqx.service
// LimitNOFILE"), failing the test when there is none.
func bootItem(t *testing.T, bs *BootStatus, name string) BootItem {
	t.Helper()
	if bs != nil {
		for _, it := range bs.Items {
			if it.Limit == name {
				return it
			}
		}
	}
	t.Fatalf("verify --boot has no item %q: %+v", name, bs)
	return BootItem{}
}

// TestInfinityNofileIsPid1HardAtBoot: LimitNOFILE=infinity in a unit's
// drop-in and DefaultLimitNOFILE=infinity in a system.conf drop-in are no
// unlimited number of files: systemd's setrlimit_closest caps infinity at
// PID 1's hard limit, which PID 1 raised to fs.nr_open before sysctl.d
// ran (1048576 by default, or the kernel command line's
// sysctl.fs.nr_open=). verify --boot counted infinity as enough for a
// profile needing 2000000; now it is 1048576 and says where that comes
// from, and a command line raising fs.nr_open makes it enough.
func TestInfinityNofileIsPid1HardAtBoot(t *testing.T) {
	h := newHost(t, nil)
	h.env.SystemdRunDir = h.root
	must(t, os.WriteFile(filepath.Join(h.proc, "cmdline"), []byte("BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n"), 0o644))
	_, err := h.apply(infinityProfile())
	must(t, err)
	h.layFiles(map[string]string{
		"/etc/systemd/system/emqx.service.d/90-local.conf": "[Service]\nLimitNOFILE=infinity\n",
		"/etc/systemd/system.conf.d/90-local.conf":         "[Manager]\nDefaultLimitNOFILE=1024:infinity\n",
	})
	bs, err := VerifyBoot(h.env)
	wantCode(t, err, exitcode.Failed, "emqx.service LimitNOFILE", "DefaultLimitNOFILE")
	for name, want := range map[string][]string{
		"emqx.service LimitNOFILE": {"uses infinity from /etc/systemd/system/emqx.service.d/90-local.conf:2, which gives 1048576:1048576",
			"infinity: PID 1's hard limit at boot, fs.nr_open before sysctl.d = 1048576 (the kernel default: the kernel command line sets no sysctl.fs.nr_open)", "below the 1024:2000000"},
		"DefaultLimitNOFILE": {"uses 1024:infinity from /etc/systemd/system.conf.d/90-local.conf:2, which gives 1024:1048576", "fs.nr_open before sysctl.d = 1048576"},
	} {
		it := bootItem(t, bs, name)
		if it.OK {
			t.Errorf("%s: infinity counted as enough for 2000000: %+v", name, it)
		}
		for _, w := range want {
			if !strings.Contains(it.Problem, w) {
				t.Errorf("%s: problem lacks %q: %q", name, w, it.Problem)
			}
		}
		if !strings.Contains(it.Boot.Value, ":1048576 (infinity: PID 1's hard limit at boot") {
			t.Errorf("%s: boot value does not say what infinity gives: %q", name, it.Boot.Value)
		}
	}
	// A kernel command line that raises fs.nr_open raises PID 1's hard
	// limit with it (the last value the kernel takes wins; after "--"
	// the parameters are init's).
	must(t, os.WriteFile(filepath.Join(h.proc, "cmdline"), []byte("BOOT_IMAGE=/vmlinuz root=/dev/sda1 sysctl.fs.nr_open=3000000 sysctl/fs/nr_open=\"2500000\" sysctl.fs.nr_open=12 ro -- sysctl.fs.nr_open=1000\n"), 0o644))
	bs, err = VerifyBoot(h.env)
	must(t, err)
	it := bootItem(t, bs, "emqx.service LimitNOFILE")
	if !it.OK || !strings.HasPrefix(it.Boot.Value, "2500000:2500000 (infinity: PID 1's hard limit at boot, fs.nr_open before sysctl.d = 2500000 (sysctl/fs/nr_open=2500000 on the kernel command line))") {
		t.Errorf("with sysctl.fs.nr_open=2500000 on the command line: %+v", it)
	}
}

// TestInfinityNofileInImage: in image mode the kernel command line is
// the boot loader's, not known: the kernel default counts and the
// message says so.
func TestInfinityNofileInImage(t *testing.T) {
	_, env := newImage(t, map[string]string{"/etc/systemd/system/emqx.service": "[Service]\nExecStart=/bin/true\n"})
	_, err := Apply(context.Background(), infinityProfile(), Options{Env: env})
	must(t, err)
	testenv.WriteTree(t, env.Root, map[string]string{"/etc/systemd/system/emqx.service.d/90-local.conf": "[Service]\nLimitNOFILE=infinity\n"})
	bs, err := VerifyBoot(env)
	wantCode(t, err, exitcode.Failed, "emqx.service LimitNOFILE")
	it := bootItem(t, bs, "emqx.service LimitNOFILE")
	if it.OK || !strings.Contains(it.Problem, "= 1048576 (the kernel default; the kernel command line an image boots with is not known here)") {
		t.Errorf("image: %+v", it)
	}
}

// TestNeverLowerResolvesInfinityAsPid1: a unit that has
// LimitNOFILE=infinity now gets PID 1's hard limit (1048576 here), not
// fs.nr_open after the sysctls (4194304): hostprep keeps the unit's
// infinity (not the number the model resolves it to, which the host may
// exceed), and does not write a higher limit than the unit ever had.
func TestNeverLowerResolvesInfinityAsPid1(t *testing.T) {
	h := newHost(t, map[string]string{"fs.nr_open": "4194304"})
	h.env.SystemdRunDir = h.root
	must(t, os.WriteFile(filepath.Join(h.proc, "cmdline"), []byte("root=/dev/sda1 ro\n"), 0o644))
	h.layFiles(map[string]string{"/etc/systemd/system/emqx.service.d/90-local.conf": "[Service]\nLimitNOFILE=infinity\n"})
	l := &profiles.Limit{Soft: 1024, Hard: 524288}
	pl, err := NewPlan(&profiles.Profile{Name: "n", Systemd: profiles.Systemd{Services: []string{"emqx"}, LimitNOFILE: l}}, h.env)
	must(t, err)
	var kept string
	for _, s := range pl.Skipped {
		if strings.Contains(s.File, "emqx.service.d") {
			kept = s.Reason
		}
	}
	if !strings.Contains(kept, "nofile kept at hard infinity (the profile asks for 524288) and soft infinity") || !strings.Contains(kept, "fs.nr_open before sysctl.d = 1048576") {
		t.Errorf("plan does not keep what infinity gives (1048576): %q", kept)
	}
}

// TestNeverLowerKeepsInfinityHard: a unit's own LimitNOFILE=1024:infinity
// and a profile's 65536:65536: hostprep raised the hard to the number the
// model resolves infinity to (LimitNOFILE=1048576:1048576), which on a
// host whose kernel command line sets sysctl.fs.nr_open higher is less
// than the unit had. It keeps infinity, verify --boot passes, and the
// message no longer reads "(infinity; infinity: PID 1's ...)".
func TestNeverLowerKeepsInfinityHard(t *testing.T) {
	h := newHost(t, nil)
	h.env.SystemdRunDir = h.root
	must(t, os.WriteFile(filepath.Join(h.proc, "cmdline"), []byte("root=/dev/sda1 ro\n"), 0o644))
	h.layFiles(map[string]string{"/etc/systemd/system/emqx.service": "[Service]\nExecStart=/bin/true\nLimitNOFILE=1024:infinity\n"})
	p := &profiles.Profile{Name: "n", Systemd: profiles.Systemd{Services: []string{"emqx"}, LimitNOFILE: &profiles.Limit{Soft: 65536, Hard: 65536}}}
	pl, err := NewPlan(p, h.env)
	must(t, err)
	var kept string
	for _, s := range pl.Skipped {
		if strings.Contains(s.File, "emqx.service.d") {
			kept = s.Reason
		}
	}
	if !strings.Contains(kept, "nofile kept at hard infinity (the profile asks for 65536)") || strings.Contains(kept, "infinity; infinity") ||
		!strings.Contains(kept, "emqx.service:3, which writes 1024:infinity (infinity is PID 1's hard limit at boot") {
		t.Errorf("plan: %q", kept)
	}
	_, err = h.apply(p)
	must(t, err)
	if unit, _ := h.file(files.ServiceDropIn("emqx")); !strings.Contains(unit, "LimitNOFILE=65536:infinity\n") {
		t.Errorf("drop-in pins the unit's infinity hard to a number:\n%s", unit)
	}
	bs, err := VerifyBoot(h.env)
	if it := bootItem(t, bs, "emqx.service LimitNOFILE"); err != nil || !it.OK || it.Want != "65536:infinity" {
		t.Errorf("verify --boot: %+v %v", it, err)
	}
}
