package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// fieldCase is a file of testdata/cases (copied from the project's field
// cases): a profile fragment or built-in, the host it meets, expectations.
type fieldCase struct {
	Profile yaml.Node `yaml:"profile"`
	Host    struct {
		Sysctl map[string]string `yaml:"sysctl"`
		// Files are laid out under the host's root; "symlink to X" makes
		// a symlink.
		Files              map[string]string `yaml:"files"`
		ModulesLoaded      []string          `yaml:"modules_loaded"`
		Kernel             string            `yaml:"kernel"`
		LoginSessionNofile *struct {
			Soft, Hard uint64
		} `yaml:"login_session_nofile"`
	} `yaml:"host"`
	Expect map[string]any `yaml:"expect"`
}

func loadCase(t *testing.T, name string) (*fieldCase, *profiles.Profile, error) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "cases", name+".yaml"))
	must(t, err)
	var c fieldCase
	must(t, yaml.Unmarshal(b, &c))
	var ref struct {
		Builtin string `yaml:"builtin"`
	}
	_ = c.Profile.Decode(&ref)
	if ref.Builtin != "" {
		p, err := profiles.Load(ref.Builtin, nil)
		return &c, p, err
	}
	frag, err := yaml.Marshal(&c.Profile)
	must(t, err)
	p, err := profiles.Parse(name+".yaml", frag)
	return &c, p, err
}

func TestCaseLimitsConfAppendedTwice(t *testing.T) {
	c, p, err := loadCase(t, "limits-conf-appended-twice")
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(t, c.Host.Sysctl)
	sysctlConf := filepath.Join(h.root, "etc/sysctl.conf")
	limitsConf := filepath.Join(h.root, "etc/security/limits.conf")
	stat := func(p string) (string, os.FileInfo) {
		b, err := os.ReadFile(p)
		must(t, err)
		st, err := os.Stat(p)
		must(t, err)
		return string(b), st
	}
	s0, si0 := stat(sysctlConf)
	l0, li0 := stat(limitsConf)
	if _, err := h.apply(p); err != nil {
		t.Fatal(err)
	}
	before := h.snapshot()
	cb := &countingBackend{Backend: h.backend()}
	h.env.Backend = cb
	res, err := h.apply(p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed || len(cb.writes) > 0 {
		t.Fatalf("second apply: changed %v, /proc/sys writes %v", res.Changed, cb.writes)
	}
	if d := diffSnapshots(before, h.snapshot(), true); len(d) > 0 {
		t.Fatalf("second apply wrote: %v", d)
	}
	s1, si1 := stat(sysctlConf)
	l1, li1 := stat(limitsConf)
	if s0 != s1 || l0 != l1 || !si0.ModTime().Equal(si1.ModTime()) || !li0.ModTime().Equal(li1.ModTime()) {
		t.Fatal("/etc/sysctl.conf or /etc/security/limits.conf was touched")
	}
	h.rollback()
}

func TestCaseNofileAboveNrOpen(t *testing.T) {
	c, p, err := loadCase(t, "nofile-above-nr-open")
	if err != nil {
		t.Fatal(err)
	}
	h := newHost(t, c.Host.Sysctl)
	before := h.snapshot()
	_, err = h.apply(p)
	// hostprep refuses (it does not raise a key the profile does not name):
	// exit 2 naming fs.nr_open and the fix; no limits file is written.
	wantCode(t, err, exitcode.BadInput, "fs.nr_open", "1048576", "2097152")
	h.assertUnchanged(before)

	// With fs.nr_open in the profile it is raised before the limits file.
	p.Sysctl = map[string]profiles.Sysctl{"fs.nr_open": {Value: "2097152", Mode: profiles.AtLeast}, "fs.file-max": {Value: "2097152", Mode: profiles.AtLeast}}
	cb := &countingBackend{Backend: h.backend()}
	h.env.Backend = cb
	res, err := h.apply(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(cb.writes) == 0 || cb.writes[0] != "fs.nr_open=2097152" {
		t.Fatalf("writes %v: want fs.nr_open first", cb.writes)
	}
	if last := res.Changes[len(res.Changes)-1]; !strings.HasSuffix(last.File, "limits.d/60-hostprep.conf") {
		t.Fatalf("limits file not last: %+v", res.Changes)
	}
	if h.get("fs.nr_open") != "2097152" {
		t.Fatal("fs.nr_open not raised")
	}
}

func TestCasePortRangeBelowUnprivilegedStart(t *testing.T) {
	c, _, err := loadCase(t, "port-range-below-unprivileged-start")
	// Through the loader (the CLI's path): refused before any host access.
	wantCode(t, err, exitcode.BadInput, "ip_unprivileged_port_start", "1024")
	// A profile built in code reaches tune's own host check.
	p := &profiles.Profile{Name: "case", Sysctl: map[string]profiles.Sysctl{"net.ipv4.ip_local_port_range": {Value: "1000 65535"}}}
	h := newHost(t, c.Host.Sysctl)
	before := h.snapshot()
	_, err = h.apply(p)
	wantCode(t, err, exitcode.BadInput, "ip_unprivileged_port_start", `"1024 65535"`, "EINVAL")
	h.assertUnchanged(before)

	// A host with a higher start refuses even a statically valid range,
	// naming the host's value.
	h2 := newHost(t, map[string]string{"net.ipv4.ip_unprivileged_port_start": "2000"})
	_, err = h2.apply(&profiles.Profile{Name: "x", Sysctl: map[string]profiles.Sysctl{"net.ipv4.ip_local_port_range": {Value: "1024 65535"}}})
	wantCode(t, err, exitcode.BadInput, "2000", "this host", `"2000 65535"`)
}
