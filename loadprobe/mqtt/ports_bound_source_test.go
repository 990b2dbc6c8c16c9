package mqtt

import (
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/testenv"
)

// TestPortsRemedyForBoundClients guards the field case
// bound-source-remedy.md in a throwaway network namespace whose
// ip_local_port_range holds 1000 ports: a probe whose clients bind to
// one source address and need more ports than it has is refused before
// any connect (exit 3) naming 1000 ports per source address and the
// fixes that work for a bound client: the number of source addresses
// that hold the load (2, then 4 for 3,500 clients over 2), or a wider
// range. Never more destination endpoints: they cannot help a
// bound client, and the probe connects to one --broker.
func TestPortsRemedyForBoundClients(t *testing.T) {
	testenv.RequireRoot(t)
	s := testenv.NewSandbox(t)
	if _, errOut, code := s.Run("sh", "-c", "echo '40000 40999' > /proc/sys/net/ipv4/ip_local_port_range"); code != 0 {
		t.Fatalf("setting the sandbox's port range: %s", errOut)
	}
	for _, tc := range []struct {
		clients, sources string
		need             string
	}{
		{"1500", "127.0.0.2", "spread over 2 or more source addresses with --source-ips"},
		{"3500", "127.0.0.2-127.0.0.3", "spread over 4 or more source addresses with --source-ips"},
	} {
		_, errOut, code := s.Hostprep("probe", "mqtt", "--clients", tc.clients, "--conn-rate", "1000", "--source-ips", tc.sources, "--duration", "3s")
		if code != 3 {
			t.Errorf("--clients %s --source-ips %s: exit %d, want 3 (refused before any connect): %s", tc.clients, tc.sources, code, errOut)
			continue
		}
		for _, want := range []string{"1000 ports per source address", tc.need, "widen net.ipv4.ip_local_port_range"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("--clients %s: %q does not say %q", tc.clients, errOut, want)
			}
		}
		if strings.Contains(errOut, "destination endpoint") {
			t.Errorf("--clients %s: remedy suggests destination endpoints, which cannot help a bound client: %s", tc.clients, errOut)
		}
	}
}
