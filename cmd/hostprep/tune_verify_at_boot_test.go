package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestTuneApplyVerifyAtBootFlags guards the CLI of --verify-at-boot: in
// image mode the unit runs /usr/local/bin/hostprep and writes into the
// given textfile directory every given period; a relative directory or a
// period systemd cannot read is bad input (exit 2) with nothing written,
// and so is either flag without --verify-at-boot;
// `tune verify --textfile` of a missing directory is bad input too.
func TestTuneApplyVerifyAtBootFlags(t *testing.T) {
	zero := writeProfile(t, "zero.yaml", zeroYAML)
	img := t.TempDir()
	for _, bad := range [][]string{{"--verify-every", "hourly"}, {"--verify-textfile-dir", "prom"}} {
		args := append([]string{"tune", "apply", "--profile", zero, "--root", img, "--verify-at-boot"}, bad...)
		if _, stderr, code := testenv.Run(t, nil, args...); code != 2 || !strings.Contains(stderr, bad[0]) {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s", bad, code, stderr, bad[0])
		}
	}
	// without --verify-at-boot the unit's flags would change nothing:
	// bad input too, for plan and apply
	for _, verb := range []string{"plan", "apply"} {
		for _, given := range [][]string{{"--verify-every", "30min"}, {"--verify-textfile-dir", "/srv/prom"}} {
			args := append([]string{"tune", verb, "--profile", zero, "--root", img}, given...)
			if _, stderr, code := testenv.Run(t, nil, args...); code != 2 || !strings.Contains(stderr, given[0]) || !strings.Contains(stderr, "--verify-at-boot") {
				t.Errorf("%s %v without --verify-at-boot: exit %d, stderr %q; want 2 naming %s and --verify-at-boot", verb, given, code, stderr, given[0])
			}
		}
	}
	if _, err := os.Stat(filepath.Join(img, "etc")); err == nil {
		t.Fatal("a refused apply wrote into the image")
	}
	if _, stderr, code := testenv.Run(t, nil, "tune", "apply", "--profile", zero, "--root", img, "--verify-at-boot", "--verify-textfile-dir", "/srv/prom", "--verify-every", "30min"); code != 0 {
		t.Fatalf("apply --verify-at-boot: exit %d: %s", code, stderr)
	}
	unit, err := os.ReadFile(filepath.Join(img, "etc/systemd/system/hostprep-verify.service"))
	if err != nil {
		t.Fatal(err)
	}
	timer, err := os.ReadFile(filepath.Join(img, "etc/systemd/system/hostprep-verify.timer"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/hostprep tune verify --textfile /srv/prom\n") || !strings.Contains(string(timer), "OnUnitActiveSec=30min\n") {
		t.Errorf("unit:\n%s\ntimer:\n%s", unit, timer)
	}
	if _, stderr, code := testenv.Run(t, nil, "tune", "verify", "--root", img, "--textfile", filepath.Join(img, "no-such-dir")); code != 2 || !strings.Contains(stderr, "--textfile") {
		t.Errorf("verify --textfile of a missing directory: exit %d, stderr %q", code, stderr)
	}
}

// TestTuneVerifyTextfileJSON guards that `tune verify --textfile DIR
// --output json` prints only JSON (the status, naming the textfile it
// wrote), while the text output prints the summary line.
func TestTuneVerifyTextfileJSON(t *testing.T) {
	zero := writeProfile(t, "zero.yaml", zeroYAML)
	img, dir := t.TempDir(), t.TempDir()
	if _, stderr, code := testenv.Run(t, nil, "tune", "apply", "--profile", zero, "--root", img); code != 0 {
		t.Fatalf("apply: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := testenv.Run(t, nil, "tune", "verify", "--root", img, "--textfile", dir, "--output", "json")
	if code != 0 {
		t.Fatalf("verify --textfile -o json: exit %d: %s%s", code, stdout, stderr)
	}
	var got struct {
		Textfile string `json:"textfile"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || got.Textfile != filepath.Join(dir, "hostprep_tune.prom") {
		t.Fatalf("stdout is not only JSON naming the textfile (%v):\n%s", err, stdout)
	}
	if _, err := os.Stat(got.Textfile); err != nil {
		t.Fatal(err)
	}
	stdout, _, _ = testenv.Run(t, nil, "tune", "verify", "--root", img, "--textfile", dir)
	if !strings.Contains(stdout, "hostprep tune verify: 0 of ") {
		t.Errorf("text output lacks the summary line:\n%s", stdout)
	}
}
