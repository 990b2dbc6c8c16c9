package tune

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/testenv"
	"github.com/hostprep/hostprep/profiles"
)

// TestDotDotKeyUnderProcps: procps `sysctl --system` opens a key's path
// as written, so the kernel follows a ".." in it only through a directory
// that exists: net/ipv4/../core/somaxconn sets somaxconn,
// net/nosuch/../core/somaxconn sets nothing (ENOENT). verify --boot took
// both as somaxconn (a lexical path.Clean): a false DIFFERS for the
// second.
func TestDotDotKeyUnderProcps(t *testing.T) {
	for _, c := range []struct {
		key string
		ok  bool
	}{{"net/nosuch/../core/somaxconn", true}, {"net/ipv4/../core/somaxconn", false}} {
		t.Run(c.key, func(t *testing.T) {
			h := newHost(t, nil) // no systemd-sysctl under the root: procps rules
			_, err := h.apply(&profiles.Profile{Name: "s", Sysctl: map[string]profiles.Sysctl{"net.core.somaxconn": {Value: "8192"}}})
			must(t, err)
			testenv.WriteTree(t, h.root, map[string]string{"/etc/sysctl.conf": c.key + " = 1024\n"})
			bs, err := VerifyBoot(h.env)
			if c.ok {
				must(t, err)
			} else {
				wantCode(t, err, exitcode.Failed, "net.core.somaxconn", "/etc/sysctl.conf:1 sets 1024")
			}
			for _, it := range bs.Items {
				if it.Key == "net.core.somaxconn" && it.OK != c.ok {
					t.Errorf("%s = 1024 in /etc/sysctl.conf: ok %v, want %v: %s", c.key, it.OK, c.ok, it.Problem)
				}
			}
			if !strings.Contains(bootLoaderOf(h), "sysctl --system") {
				t.Fatalf("the root is read with %s, not procps", bootLoaderOf(h))
			}
		})
	}
}

func bootLoaderOf(h *fakeHost) string { return string(hostconf.DetectLoader(h.root)) }
