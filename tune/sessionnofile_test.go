package tune

import (
	"os"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
	"github.com/hostprep/hostprep/tune/files"
)

// What a new login session gets with no limits line is what the login
// process tree has (PID 1 without systemd, the manager's
// DefaultLimitNOFILE with it), never the shell that ran hostprep.
func TestSessionNofileIgnoresTheCallersShell(t *testing.T) {
	for _, systemd := range []bool{false, true} {
		h := newHost(t, nil)
		writeProcLimits(t, h, os.Getppid(), 18000, 20000) // the caller's `ulimit -Sn 18000`
		writeProcLimits(t, h, 1, 1024, 4096)
		if systemd {
			h.env.SystemdRunDir = h.root
			h.layFiles(map[string]string{"/etc/systemd/system.conf.d/50-local.conf": "[Manager]\nDefaultLimitNOFILE=1024:4096\n"})
		}
		p := sysTune()
		p.Limits.Nofile = &profiles.Limit{Soft: 1024, Hard: 2097152}
		_, err := h.apply(p)
		must(t, err)
		limits, _ := h.file(files.LimitsConf)
		if !strings.Contains(limits, "*    soft nofile 1024\n") || !strings.Contains(limits, "root soft nofile 1024\n") {
			t.Errorf("systemd %v: host-wide soft follows the caller's shell:\n%s", systemd, limits)
		}
	}
	// A limits.d line that applies wins; a user it does not cover (root
	// for "*") gets the login tree's, and the reason says which.
	h := newHost(t, nil)
	writeProcLimits(t, h, os.Getppid(), 20000, 20000)
	writeProcLimits(t, h, 1, 1024, 8192)
	h.layFiles(map[string]string{"/etc/security/limits.d/90-x.conf": "* soft nofile 1024\n* hard nofile 4096\n"})
	p := sysTune()
	p.Limits.Nofile = &profiles.Limit{Soft: 1024, Hard: 2048}
	pl, err := NewPlan(p, h.env)
	must(t, err)
	var reasons []string
	for _, s := range pl.Skipped {
		reasons = append(reasons, s.Reason)
	}
	all := strings.Join(reasons, "\n")
	if strings.Contains(all, "20000") || strings.Contains(all, "inherited from the process") || !strings.Contains(all, "hard 8192 (the profile asks for 2048)") || !strings.Contains(all, "/proc/1/limits") || !strings.Contains(all, `"root"`) {
		t.Errorf("skip reason does not name the login tree's limit for root:\n%s", all)
	}
}
