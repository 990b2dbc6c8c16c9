package tune

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
)

// keyItem is the item of key in items, failing t when there is none.
func keyItem(t *testing.T, items []BootItem, key string) BootItem {
	t.Helper()
	for _, it := range items {
		if it.Key == key {
			return it
		}
	}
	t.Fatalf("no boot item for %s in %+v", key, items)
	return BootItem{}
}

// ufwCaseImage lays the host of case other-writer-ufw-wins-at-boot out
// as an image with systemd-sysctl installed.
func ufwCaseImage(t *testing.T) (*fieldCase, *profiles.Profile, string, Env) {
	t.Helper()
	c, p, err := loadCase(t, "other-writer-ufw-wins-at-boot")
	must(t, err)
	tree := map[string]string{"/usr/lib/systemd/systemd-sysctl": ""}
	for k, v := range c.Host.Files {
		tree[k] = v
	}
	img, env := newImage(t, tree)
	return c, p, img, env
}

// Case other-writer-ufw-wins-at-boot: ufw re-applies /etc/ufw/sysctl.conf
// (IPT_SYSCTL) at boot and at every `ufw reload`, over hostprep's sysctl.d
// file. Plan and apply warn naming the line, its value, when ufw runs and
// the fix; verify --boot fails on it and carries the writer in JSON; the
// other key, which ufw does not set, stays ok; ufw's files are not edited.
func TestCaseOtherWriterUfwWinsAtBoot(t *testing.T) {
	_, p, img, env := ufwCaseImage(t)
	ufwSysctl := filepath.Join(img, "etc/ufw/sysctl.conf")
	before, err := os.ReadFile(ufwSysctl)
	must(t, err)

	pl, err := NewPlan(p, env)
	must(t, err)
	warn := strings.Join(pl.Warnings, "\n")
	for _, want := range []string{"sysctl net.ipv4.tcp_syncookies: ufw sets 0 at /etc/ufw/sysctl.conf:1", "ufw reload", "IPT_SYSCTL=", "never edits a file it does not own"} {
		if !strings.Contains(warn, want) {
			t.Errorf("plan warnings lack %q:\n%s", want, warn)
		}
	}
	res, err := Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "/etc/ufw/sysctl.conf:1") {
		t.Errorf("apply does not warn about ufw:\n%s", w)
	}

	bs, err := VerifyBoot(env)
	wantCode(t, err, exitcode.Failed, "net.ipv4.tcp_syncookies", "/etc/ufw/sysctl.conf:1", "ufw")
	if bs == nil || bs.Failing != 1 {
		t.Fatalf("verify --boot: want exactly tcp_syncookies failing: %+v", bs)
	}
	it := keyItem(t, bs.Items, "net.ipv4.tcp_syncookies")
	if it.OK || it.Boot.Value != "0" || it.Boot.File != "/etc/ufw/sysctl.conf" || it.Boot.Line != 1 || it.Boot.Writer != "ufw" {
		t.Errorf("tcp_syncookies item: %+v", it)
	}
	if len(it.Writers) != 1 || it.Writers[0].Writer != "ufw" || it.Writers[0].Verdict != "overrides" || it.Writers[0].Where() != "/etc/ufw/sysctl.conf:1" || it.Writers[0].Fix == "" || it.Writers[0].When == "" {
		t.Errorf("tcp_syncookies writers: %+v", it.Writers)
	}
	if it := keyItem(t, bs.Items, "net.ipv4.tcp_max_syn_backlog"); !it.OK || len(it.Writers) != 0 {
		t.Errorf("tcp_max_syn_backlog, which ufw does not set: %+v", it)
	}
	b, err := json.Marshal(bs)
	must(t, err)
	if !strings.Contains(string(b), `"writers":[{"writer":"ufw","file":"/etc/ufw/sysctl.conf","line":1,"value":"0"`) {
		t.Errorf("JSON lacks the writer: %s", b)
	}
	var sb strings.Builder
	must(t, bs.WriteText(&sb))
	if !strings.Contains(sb.String(), "/etc/ufw/sysctl.conf:1 (ufw)") {
		t.Errorf("text lacks the writer:\n%s", sb.String())
	}
	if after, _ := os.ReadFile(ufwSysctl); string(after) != string(before) {
		t.Errorf("hostprep edited ufw's file: %q", after)
	}
	// The fix the problem names (comment the line out) makes it pass.
	must(t, os.WriteFile(ufwSysctl, []byte("#net/ipv4/tcp_syncookies=0\n"), 0o644))
	if bs, err := VerifyBoot(env); err != nil {
		t.Errorf("after the fix: %v %+v", err, bs)
	}
}

// `hostprep tune verify --boot --root IMG` on an image with the case's
// ufw files exits 1 naming /etc/ufw/sysctl.conf:1 (case
// other-writer-ufw-wins-at-boot, through the command line).
func TestCaseOtherWriterUfwWinsAtBootCLI(t *testing.T) {
	c, _, img, _ := ufwCaseImage(t)
	frag, err := yaml.Marshal(&c.Profile)
	must(t, err)
	prof := filepath.Join(t.TempDir(), "ufw-case.yaml")
	must(t, os.WriteFile(prof, frag, 0o644))
	if out, errOut, code := testenv.Run(t, nil, "tune", "apply", "--profile", prof, "--root", img); code != 0 {
		t.Fatalf("tune apply --root: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code := testenv.Run(t, nil, "tune", "verify", "--boot", "--root", img)
	if code != 1 || !strings.Contains(out+errOut, "/etc/ufw/sysctl.conf:1") {
		t.Errorf("tune verify --boot --root: exit %d, want 1 naming /etc/ufw/sysctl.conf:1\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "tcp_syncookies  1  1") {
		t.Errorf("tcp_syncookies still shown as hostprep's value at boot:\n%s", out)
	}
}

// tuned applies its active profile's [sysctl] after systemd-sysctl and,
// with reapply_sysctl (default 1), re-applies /etc/sysctl.d afterwards:
// hostprep's file there wins over the profile's somaxconn=4096; without
// it (removed), or with reapply_sysctl = 0, the profile's line wins and
// verify --boot names it and the fix.
func TestBootWriterTuned(t *testing.T) {
	img, env := newImage(t, map[string]string{
		"/usr/lib/systemd/systemd-sysctl":                           "",
		"/usr/lib/sysctl.d/50-vendor.conf":                          "net.core.somaxconn = 1024\n",
		"/etc/systemd/system/multi-user.target.wants/tuned.service": "symlink to /usr/lib/systemd/system/tuned.service",
		"/etc/tuned/active_profile":                                 "broker\n",
		"/etc/tuned/broker/tuned.conf":                              "[main]\ninclude=throughput-performance\n\n[sysctl]\nnet.core.somaxconn=4096\n",
		"/usr/lib/tuned/throughput-performance/tuned.conf":          "[sysctl]\nvm.swappiness=10\n",
	})
	p, err := profiles.Parse("tuned.yaml", []byte("sysctl:\n  net.core.somaxconn: {value: \"65535\", mode: at-least}\n"))
	must(t, err)
	if _, err := Apply(t.Context(), p, Options{Env: env}); err != nil {
		t.Fatal(err)
	}
	bs, err := VerifyBoot(env)
	if err != nil {
		t.Fatalf("with hostprep's /etc/sysctl.d file and reapply_sysctl's default: %v %+v", err, bs)
	}
	it := keyItem(t, bs.Items, "net.core.somaxconn")
	if !it.OK || len(it.Writers) != 1 || it.Writers[0].Writer != "tuned" || it.Writers[0].Verdict != "agrees" || !strings.HasPrefix(it.Writers[0].File, "/etc/sysctl.d/") {
		t.Errorf("somaxconn with hostprep's file: %+v", it)
	}

	// reapply_sysctl = 0: the profile's value stays
	testenv.WriteTree(t, img, map[string]string{"/etc/tuned/tuned-main.conf": "reapply_sysctl = 0\n"})
	bs, err = VerifyBoot(env)
	wantCode(t, err, exitcode.Failed, "tuned sets 4096 at /etc/tuned/broker/tuned.conf:5", "set reapply_sysctl = 1 in /etc/tuned/tuned-main.conf (now reapply_sysctl = 0 at /etc/tuned/tuned-main.conf:1)")
	if it := keyItem(t, bs.Items, "net.core.somaxconn"); it.Boot.Value != "4096" || it.Boot.Writer != "tuned" {
		t.Errorf("reapply_sysctl = 0: %+v", it)
	}

	// without hostprep's file, reapply or not, tuned's 4096 beats the vendor's 1024
	must(t, os.Remove(filepath.Join(img, "etc/tuned/tuned-main.conf")))
	must(t, os.Remove(filepath.Join(img, "etc/sysctl.d/60-hostprep.conf")))
	bs, err = VerifyBoot(env)
	wantCode(t, err, exitcode.Failed, "tuned sets 4096 at /etc/tuned/broker/tuned.conf:5")
	if it := keyItem(t, bs.Items, "net.core.somaxconn"); it.Boot.Value != "4096" || it.Boot.File != "/etc/tuned/broker/tuned.conf" {
		t.Errorf("without hostprep's file: %+v", it)
	}
}
