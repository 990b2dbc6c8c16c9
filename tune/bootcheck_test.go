package tune

import (
	"strings"
	"testing"
)

// TestNameAfter: the --persist-name suggested after a winning sysctl.d
// file sorts after it and is a name --persist-name takes, or there is
// none; it never loops (a winner named "~local.conf" or with a UTF-8
// byte hung plan, apply, status and verify --boot at 100% CPU).
func TestNameAfter(t *testing.T) {
	for _, base := range []string{"99-sysctl.conf", "zz-hostprep.conf", "zzzzzzzzzz.conf", "zz~.conf", "~local.conf", "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~.conf", "ü-local.conf", "\x7f.conf", strings.Repeat("~", 250) + ".conf"} {
		name, ok := nameAfter(base)
		if !ok {
			if base[0] < '~' || (base[0] == '~' && len(base) < 190) {
				t.Errorf("%q: no name found, but one exists", base)
			}
			continue
		}
		if name <= base || CheckPersistName(name) != nil {
			t.Errorf("%q: suggested %q (sorts after: %v, valid: %v)", base, name, name > base, CheckPersistName(name))
		}
	}
}
