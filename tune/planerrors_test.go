package tune

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// TestPlanErrorsNameTheProfilePosition: a key this kernel lacks and a
// nofile above fs.nr_open are found only against the host, and the error
// names the profile file, line and column of the value.
func TestPlanErrorsNameTheProfilePosition(t *testing.T) {
	h := newHost(t, nil)
	p, f := loadFile(t, "bad3.yaml", "description: x\nsysctl:\n  net.core.somaxconn: \"4096\"\n  net.core.nosuchkey: \"1\"\n")
	_, err := NewPlan(p, h.env)
	wantCode(t, err, exitcode.BadInput, f+":4:3:", "net.core.nosuchkey", "optional: true")
	p, f = loadFile(t, "bad9.yaml", "limits:\n  nofile: {soft: 1024, hard: 3000000}\n")
	_, err = NewPlan(p, h.env)
	wantCode(t, err, exitcode.BadInput, f+":2:", "limits.nofile", "fs.nr_open")
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
}
