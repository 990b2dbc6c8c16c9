package profiles

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/sysctlkey"
	"github.com/hostprep/hostprep/internal/testenv"
)

// Preflight's rules for the kernel-wide TCP socket limits
// (preflight/checks/check_tcp.go): tcp.orphans wants net.ipv4.tcp_max_orphans >=
// sockets, tcp.tw_buckets wants net.ipv4.tcp_max_tw_buckets >= conn_rate x
// 60 s (TCP_TIMEWAIT_LEN), conn_rate defaulting to 2000/s
// (preflight.DefaultConnRate).
const (
	preflightDefaultConnRate = 2000
	timeWaitSeconds          = 60
)

// TestBuiltinsMeetTheirTCPTargets: every built-in with a preflight
// target raises tcp_max_orphans and tcp_max_tw_buckets (at-least) to what
// its own target needs, so preflight's tcp.orphans and tcp.tw_buckets
// pass after applying it; ready-small leaves out the global
// tcp_max_orphans (it must apply inside `unshare --net`) and relies on
// the default.
func TestBuiltinsMeetTheirTCPTargets(t *testing.T) {
	for _, name := range BuiltinNames() {
		p, err := Load(name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p.Preflight == nil {
			continue
		}
		rate := p.Preflight.ConnRate
		if rate == 0 {
			rate = preflightDefaultConnRate
		}
		need := map[string]int64{
			"net.ipv4.tcp_max_tw_buckets": int64(rate) * timeWaitSeconds,
			"net.ipv4.tcp_max_orphans":    int64(p.Preflight.Sockets),
		}
		for key, min := range need {
			s, ok := p.Sysctl[key]
			if name == "ready-small" && key == "net.ipv4.tcp_max_orphans" {
				if ok {
					t.Errorf("ready-small sets %s, a global key; it must hold only per-netns keys", key)
				}
				continue
			}
			v, num := p.sysctlNumber(key)
			switch {
			case !ok:
				t.Errorf("%s sets no %s; its preflight target needs >= %d", name, key, min)
			case !num || v < min:
				t.Errorf("%s: %s %q < %d, what its preflight target (%d sockets, %v connections/s) needs", name, key, s.Value, min, p.Preflight.Sockets, rate)
			case s.Mode != AtLeast:
				t.Errorf("%s: %s mode %s, want at-least (never lower a host tuned higher)", name, key, s.Mode)
			case !strings.Contains(s.Comment, "ip-sysctl.rst"):
				t.Errorf("%s: %s comment does not cite ip-sysctl.rst: %q", name, key, s.Comment)
			}
		}
	}
}

// TestReadySmallKeysExistInANewNetns: ready-small must apply inside
// `unshare --net`, so every key it sets must exist in a fresh network
// namespace (tcp_max_orphans, for one, is global and absent there on
// kernel 6.x). Only reads /proc/sys inside the new namespace.
func TestReadySmallKeysExistInANewNetns(t *testing.T) {
	testenv.RequireUnshare(t)
	p, err := Load("ready-small", nil)
	if err != nil {
		t.Fatal(err)
	}
	for key := range p.Sysctl {
		path := sysctlkey.File("/proc/sys", key)
		out, err := exec.Command("unshare", "--net", "cat", path).CombinedOutput()
		if err != nil {
			t.Errorf("ready-small sets %s, which a new network namespace does not have (%s: %v %s)", key, path, err, strings.TrimSpace(string(out)))
		}
	}
	// The check itself tells a global key from a per-netns one.
	if err := exec.Command("unshare", "--net", "cat", "/proc/sys/net/ipv4/tcp_max_orphans").Run(); err == nil {
		t.Logf("note: net.ipv4.tcp_max_orphans exists in a new netns on this kernel")
	}
}
