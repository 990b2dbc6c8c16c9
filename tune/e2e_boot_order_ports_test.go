package tune_test

import (
	"strings"
	"testing"
)

// TestE2EBootFileOrdersTheStartAndTheRange: hostprep's sysctl.d file
// listed net.ipv4.ip_local_port_range before a lowered
// net.ipv4.ip_unprivileged_port_start. The boot starts from the kernel's
// default start (1024), which refuses a range reaching below it, so the
// range failed at every boot while apply (which writes the start first)
// and verify --boot said all was well. The file is loaded here in a new
// network namespace of the kernel's defaults, by procps's `sysctl -p` and
// by systemd-sysctl, which both apply it in order; a raised start is
// checked the same way.
func TestE2EBootFileOrdersTheStartAndTheRange(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	for _, c := range []struct{ start, portRange string }{{"500", "600 65000"}, {"40000", "40001 65000"}} {
		p := writeProfile(t, "ports.yaml", "sysctl:\n  net.ipv4.ip_unprivileged_port_start: \""+c.start+"\"\n  net.ipv4.ip_local_port_range: \""+c.portRange+"\"\n")
		if out, e, code := n.Hostprep("tune", "apply", "--profile", p); code != 0 {
			t.Fatalf("apply start %s: exit %d\n%s%s", c.start, code, out, e)
		}
		for _, loader := range []string{"sysctl -q -p /etc/sysctl.d/60-hostprep.conf", "/lib/systemd/systemd-sysctl /etc/sysctl.d/60-hostprep.conf"} {
			if strings.HasPrefix(loader, "/lib") {
				if _, _, code := n.Run("test", "-x", "/lib/systemd/systemd-sysctl"); code != 0 {
					continue
				}
			}
			out, e, code := n.Run("unshare", "-n", "sh", "-c", loader+"; sysctl -n net.ipv4.ip_unprivileged_port_start net.ipv4.ip_local_port_range")
			got := strings.Fields(out)
			want := append([]string{c.start}, strings.Fields(c.portRange)...)
			if code != 0 || strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("start %s: %s at a fresh boot gave %q (exit %d), want %q\n%s", c.start, strings.Fields(loader)[0], got, code, want, e)
			}
		}
		if out, e, code := n.Hostprep("tune", "rollback"); code != 0 {
			t.Fatalf("rollback: exit %d\n%s%s", code, out, e)
		}
	}
}
