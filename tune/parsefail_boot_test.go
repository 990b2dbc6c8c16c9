package tune

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// TestSystemdParseFailureAtBoot: systemd's config_parse stops a file at a
// line that is not valid UTF-8 or a bad section header. In a drop-in the
// lines after it do not count (verify --boot took a later LimitNOFILE
// there as winning: a false DIFFERS); in the unit file the unit fails to
// load and is never started (verify --boot passed on hostprep's drop-in).
func TestSystemdParseFailureAtBoot(t *testing.T) {
	l := &profiles.Limit{Soft: 65536, Hard: 65536}
	p := &profiles.Profile{Name: "u", Systemd: profiles.Systemd{Services: []string{"emqx"}, LimitNOFILE: l}}
	const unit = "/etc/systemd/system/emqx.service"
	for _, c := range []struct {
		name   string
		files  map[string]string
		ok     bool
		reason string
	}{
		{"drop-in stops at a bad header", map[string]string{unit + ".d/90-local.conf": "[Service]\nDescription=local\n[Service\nLimitNOFILE=4096\n"}, true, ""},
		{"drop-in stops at invalid UTF-8", map[string]string{unit + ".d/90-local.conf": "[Service]\nDescription=caf\xe9\nLimitNOFILE=4096\n"}, true, ""},
		{"drop-in line before the failure counts", map[string]string{unit + ".d/90-local.conf": "[Service]\nLimitNOFILE=4096\n[Ser\"vice]\n"}, false, "90-local.conf:2"},
		{"unit file fails to load", map[string]string{unit: "[Unit]\nDescription=EMQX \xff\n[Service]\nExecStart=/bin/true\n"}, false,
			"systemd cannot parse the unit file (" + unit + ":2: the line \"Description=EMQX \\xff\" is not valid UTF-8) and fails to load the unit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHost(t, nil)
			h.env.SystemdRunDir = h.root
			h.layFiles(map[string]string{unit: "[Service]\nExecStart=/bin/true\n"})
			_, err := h.apply(p)
			must(t, err)
			h.layFiles(c.files)
			bs, err := VerifyBoot(h.env)
			if c.ok {
				must(t, err)
			} else {
				wantCode(t, err, exitcode.Failed, "emqx.service LimitNOFILE")
			}
			it := bootItem(t, bs, "emqx.service LimitNOFILE")
			if it.OK != c.ok || !strings.Contains(it.Problem, c.reason) {
				t.Errorf("ok %v (want %v), problem %q (want %q)", it.OK, c.ok, it.Problem, c.reason)
			}
		})
	}
}
