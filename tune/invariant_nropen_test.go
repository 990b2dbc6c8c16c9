package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// TestCaseNrOpenBelowConfiguredHardNofile guards the fs.nr_open invariant
// on field case nr-open-below-configured-hard-nofile: a profile setting
// fs.nr_open below root's hard nofile in limits.conf is refused by plan
// and apply, in image and host mode, with exit 2 naming
// /etc/security/limits.conf:1, and nothing is written.
func TestCaseNrOpenBelowConfiguredHardNofile(t *testing.T) {
	c, p, err := loadCase(t, "nr-open-below-configured-hard-nofile")
	if err != nil {
		t.Fatal(err)
	}
	tree := map[string]string{}
	for f, body := range c.Host.Files {
		tree[f] = body
	}
	img, env := newImage(t, tree)
	_, err = NewPlan(p, env)
	wantCode(t, err, exitcode.BadInput, "/etc/security/limits.conf:1", "1048576", "fs.nr_open", "at least 1048576")
	_, err = Apply(t.Context(), p, Options{Env: env})
	wantCode(t, err, exitcode.BadInput, "/etc/security/limits.conf:1")
	if _, err := os.Stat(filepath.Join(img, "etc/sysctl.d/60-hostprep.conf")); err == nil {
		t.Fatal("a refused apply wrote the sysctl.d file")
	}

	h := newHost(t, c.Host.Sysctl)
	for f, body := range c.Host.Files {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(h.root, f)), 0o755))
		must(t, os.WriteFile(filepath.Join(h.root, f), []byte(body), 0o644))
	}
	before := h.snapshot()
	_, err = h.apply(p)
	wantCode(t, err, exitcode.BadInput, "/etc/security/limits.conf:1")
	h.assertUnchanged(before)

	// At or above the configured hard limit it plans.
	p.Sysctl["fs.nr_open"] = profiles.Sysctl{Value: "1048576", Mode: profiles.Exact}
	if _, err := NewPlan(p, env); err != nil {
		t.Fatalf("fs.nr_open equal to the highest hard nofile: %v", err)
	}
}

// TestNrOpenInvariantReadsSystemd guards that the invariant covers
// systemd's DefaultLimitNOFILE and a unit's LimitNOFILE, from its unit
// file or a drop-in, naming the line.
func TestNrOpenInvariantReadsSystemd(t *testing.T) {
	p := &profiles.Profile{Name: "low", Sysctl: map[string]profiles.Sysctl{"fs.nr_open": {Value: "2000000", Mode: profiles.Exact}}}
	_, env := newImage(t, map[string]string{
		"/etc/sysctl.d/10-nr.conf":               "fs.nr_open = 4194304\n",
		"/lib/systemd/system/broker.service":     "[Service]\nExecStart=/bin/true\nLimitNOFILE=3000000\n",
		"/etc/systemd/system.conf.d/limits.conf": "[Manager]\nDefaultLimitNOFILE=1024:2500000\n",
		// set only by a drop-in, not by the unit file
		"/lib/systemd/system/worker.service":                  "[Service]\nExecStart=/bin/true\n",
		"/etc/systemd/system/worker.service.d/10-nofile.conf": "[Service]\nLimitNOFILE=2600000\n",
	})
	_, err := NewPlan(p, env)
	wantCode(t, err, exitcode.BadInput, "/lib/systemd/system/broker.service:3", "broker.service", "3000000", "2500000", "/etc/systemd/system.conf.d/limits.conf:2",
		"2600000 for worker.service (LimitNOFILE) (/etc/systemd/system/worker.service.d/10-nofile.conf:2)")
}

// TestBuiltinProfilesKeepNrOpenInvariant guards that no built-in profile
// sets fs.nr_open below a hard nofile of a stock host (its own limits
// files included): each plans on a stock host and on a stock image, and
// the highest configured hard nofile fits under the fs.nr_open it sets.
func TestBuiltinProfilesKeepNrOpenInvariant(t *testing.T) {
	for _, name := range profiles.BuiltinNames() {
		t.Run(name, func(t *testing.T) {
			p, err := profiles.Load(name, nil)
			must(t, err)
			h := newHost(t, nil)
			pl, err := NewPlan(p, h.env)
			if err != nil && strings.Contains(err.Error(), "below the hard nofile") {
				t.Fatalf("host: %v", err)
			}
			_, env := newImage(t, map[string]string{"/etc/security/limits.conf": "# stock\n"})
			if pl, err = NewPlan(p, env); err != nil {
				t.Fatalf("image: %v", err)
			}
			limits, err := configuredHardNofiles(env, overlayOf(env, pl.files))
			must(t, err)
			if len(limits) == 0 {
				t.Fatal("no hard nofile found: PID 1's at least must be there")
			}
			if s, ok := p.Sysctl[keyNrOpen]; ok {
				targets := map[string]target{keyNrOpen: {value: s.Value, present: true}}
				n, _, err := pl.effective(keyNrOpen, targets, defaultNrOpen)
				must(t, err)
				if err := nrOpenConflict("", n, s.Value, limits); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
