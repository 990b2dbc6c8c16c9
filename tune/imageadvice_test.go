package tune

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/journal"
)

// adviceRE matches every hostprep tune command a message suggests, in or
// out of backquotes.
var adviceRE = regexp.MustCompile("`?hostprep tune [a-z]+[^`;\n]*`?")

// TestImageModeAdviceKeepsRoot: in image mode (--root DIR) every hostprep
// command that plan, apply, status and verify suggest repeats --root DIR
// (shell-quoted), over a foreign file hostprep replaces, a later sysctl.d
// file that wins at boot, an edited owned file (drift), a profile the
// image does not match, and an interrupted apply. Copying the advice of an
// image-mode run must never tune the live host.
func TestImageModeAdviceKeepsRoot(t *testing.T) {
	img := filepath.Join(t.TempDir(), "my image")
	must(t, os.MkdirAll(img, 0o755))
	testenv.WriteTree(t, img, map[string]string{
		"/etc/security/limits.d/60-hostprep.conf": "* hard nofile 4096\n",
		"/usr/lib/sysctl.d/99-vendor.conf":        "net.core.somaxconn = 512\n",
		"/usr/lib/systemd/systemd-sysctl":         "",
	})
	env := Env{Root: img, Image: true, SkipPrivilegeCheck: true}
	p, err := profiles.Load("mqtt-broker-1m", nil)
	must(t, err)
	quoted := "--root '" + img + "'"

	var out []string
	add := func(what string, v any, err error) {
		t.Helper()
		b, jerr := json.Marshal(v)
		must(t, jerr)
		out = append(out, what+": "+string(b))
		if err != nil {
			out = append(out, what+" error: "+err.Error())
		}
	}
	addText := func(what string, write func(*strings.Builder) error) {
		var sb strings.Builder
		must(t, write(&sb))
		out = append(out, what+" text: "+sb.String())
	}

	pl, err := NewPlan(p, env)
	add("plan", pl, err)
	res, err := Apply(t.Context(), p, Options{Env: env})
	add("apply", res, err)
	if res != nil {
		addText("apply", func(sb *strings.Builder) error { return res.WriteText(sb, "apply") })
	}
	bs, err := VerifyBoot(env)
	add("verify --boot", bs, err)

	// Drift: hostprep's sysctl.d file edited after the apply.
	conf := filepath.Join(img, "etc/sysctl.d/60-hostprep.conf")
	b, err := os.ReadFile(conf)
	must(t, err)
	must(t, os.WriteFile(conf, []byte(strings.Replace(string(b), "net.core.somaxconn = ", "net.core.somaxconn = 1", 1)), 0o644))
	s, err := StatusOf(env)
	add("status drift", s, err)
	if s != nil {
		addText("status drift", func(sb *strings.Builder) error { return s.WriteText(sb) })
	}
	_, _, err = Verify(nil, env)
	add("verify drift", nil, err)
	_, _, err = Verify(p, env)
	add("verify --profile drift", nil, err)
	bs, err = VerifyBoot(env)
	add("verify --boot drift", bs, err)

	// Interrupted apply.
	st, err := journal.Load(env.stateFile())
	must(t, err)
	st.Applies[len(st.Applies)-1].InProgress = true
	must(t, journal.Save(env.stateFile(), st))
	s, err = StatusOf(env)
	add("status interrupted", s, err)
	if s != nil {
		addText("status interrupted", func(sb *strings.Builder) error { return s.WriteText(sb) })
	}
	_, _, err = Verify(p, env)
	add("verify interrupted", nil, err)

	// A profile the image does not match.
	st.Applies[len(st.Applies)-1].InProgress = false
	must(t, journal.Save(env.stateFile(), st))
	must(t, os.WriteFile(conf, b, 0o644))
	other, err := profiles.Load("sys-tune", nil)
	must(t, err)
	_, _, err = Verify(other, env)
	add("verify other profile", nil, err)

	all := strings.Join(out, "\n")
	found := map[string]int{}
	for _, line := range out {
		for _, hint := range regexp.MustCompile("apply again with --persist-name[^;\n\"]*").FindAllString(line, -1) {
			if !strings.Contains(hint, quoted) {
				t.Errorf("--persist-name hint without %s: %s", quoted, hint)
			}
		}
		for _, m := range adviceRE.FindAllString(line, -1) {
			found[strings.Fields(m)[2]]++
			if !strings.Contains(m, quoted) {
				t.Errorf("suggestion without %s: %s\n  in %s", quoted, m, line)
			}
		}
	}
	// Every state above must have produced its advice.
	for _, verb := range []string{"apply", "rollback", "plan"} {
		if found[verb] == 0 {
			t.Errorf("no `hostprep tune %s` suggestion found in:\n%s", verb, all)
		}
	}
	for _, want := range []string{"--persist-name zz", "interrupted", "sets it again", "lists them", "restores them"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %q in the output (a state was not reached):\n%s", want, all)
		}
	}
}

// Advice to apply again names the profile the way --profile took it (the
// file's absolute path, with its --set overrides), not the profile's name,
// which --profile does not resolve for a file; the journal keeps both for
// status and verify.
func TestAdviceNamesTheProfileFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s1.yaml")
	must(t, os.WriteFile(file, []byte("name: s1\nsysctl:\n  net.core.somaxconn: {value: \"8192\", mode: at-least}\n"), 0o644))
	p, err := profiles.Load(file, []string{"net.core.somaxconn=9000"})
	must(t, err)
	img := filepath.Join(dir, "img")
	must(t, os.MkdirAll(img, 0o755))
	env := Env{Root: img, Image: true, SkipPrivilegeCheck: true}
	_, err = Apply(t.Context(), p, Options{Env: env})
	must(t, err)
	conf := filepath.Join(img, "etc/sysctl.d/60-hostprep.conf")
	b, err := os.ReadFile(conf)
	must(t, err)
	must(t, os.WriteFile(conf, append(b, "net.core.somaxconn = 10\n"...), 0o644))
	_, _, verr := Verify(nil, env)
	_, berr := VerifyBoot(env)
	for _, err := range []error{verr, berr} {
		if err == nil || !strings.Contains(err.Error(), "`hostprep tune apply --profile "+file+" --set net.core.somaxconn=9000 --root ") {
			t.Errorf("advice does not name the profile file %s and its --set: %v", file, err)
		}
	}
}
