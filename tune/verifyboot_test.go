package tune

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

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
