package tune_test

import (
	"strings"
	"testing"
)

// TestE2EUnprivilegedStartLowered: the kernel refuses a port range whose
// low end is below net.ipv4.ip_unprivileged_port_start, on a write of
// either key. A profile that lowers the start and the range with it
// ({range "1025 65000", start "1024"} where the start is 2000) is valid:
// the docs judge the range against the profile's own start. But the keys
// were tried and written by name, range first, so the kernel refused the
// range against the old start and tune exited 2 advising "2000 65000".
// The start a profile lowers is now written before the range, and one it
// raises after (the case that worked already, kept working); the trial
// follows apply's order, rollback undoes it in reverse.
func TestE2EUnprivilegedStartLowered(t *testing.T) {
	guardGlobal(t)
	for _, c := range []struct {
		name                   string
		fromRange, fromStart   string
		toRange, toStart, want string // want: the order of the runtime changes
	}{
		{"lowered", "32768 60999", "2000", "1025 65000", "1024", "start,range"},
		{"raised", "32768 60999", "1024", "40001 65000", "40000", "range,start"},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := newNetns(t)
			// the namespace's starting values, whatever the kernel's defaults
			for _, kv := range []string{"net.ipv4.ip_local_port_range=" + c.fromRange, "net.ipv4.ip_unprivileged_port_start=" + c.fromStart} {
				if _, e, code := n.Run("sysctl", "-w", kv); code != 0 {
					t.Fatalf("sysctl -w %s: %s", kv, e)
				}
			}
			p := writeProfile(t, "ports.yaml", "name: ports\nsysctl:\n  net.ipv4.ip_local_port_range: \""+c.toRange+"\"\n  net.ipv4.ip_unprivileged_port_start: \""+c.toStart+"\"\n")
			if out, e, code := n.Hostprep("profiles", "validate", p); code != 0 {
				t.Fatalf("profiles validate: exit %d\n%s%s", code, out, e)
			}
			if out, e, code := n.Hostprep("tune", "plan", "--profile", p); code != 0 {
				t.Fatalf("tune plan: exit %d\n%s%s", code, out, e)
			}
			out, e, code := n.Hostprep("tune", "apply", "--profile", p, "-o", "json")
			if code != 0 {
				t.Fatalf("tune apply: exit %d\n%s%s", code, out, e)
			}
			t.Cleanup(func() { n.Hostprep("tune", "rollback") })
			var order []string
			for _, ch := range decode(t, out).Changes {
				switch ch.Key {
				case "net.ipv4.ip_unprivileged_port_start":
					order = append(order, "start")
				case "net.ipv4.ip_local_port_range":
					order = append(order, "range")
				}
			}
			if got := strings.Join(order, ","); got != c.want {
				t.Errorf("runtime changes in the order %s, want %s", got, c.want)
			}
			if r, s := n.Sysctl("net.ipv4.ip_local_port_range"), n.Sysctl("net.ipv4.ip_unprivileged_port_start"); strings.Join(strings.Fields(r), " ") != c.toRange || s != c.toStart {
				t.Errorf("after apply: range %q, start %s; want %q, %s", r, s, c.toRange, c.toStart)
			}
			if out, e, code := n.Hostprep("tune", "verify", "--profile", p); code != 0 {
				t.Errorf("tune verify: exit %d\n%s%s", code, out, e)
			}
			out, e, code = n.Hostprep("tune", "apply", "--profile", p, "-o", "json")
			if r := decode(t, out); code != 0 || r.Changed {
				t.Errorf("second apply: exit %d, changed %v, want 0 and nothing changed\n%s%s", code, r.Changed, out, e)
			}
			if _, e, code := n.Hostprep("tune", "rollback"); code != 0 {
				t.Fatalf("rollback: exit %d\n%s", code, e)
			}
			if r, s := n.Sysctl("net.ipv4.ip_local_port_range"), n.Sysctl("net.ipv4.ip_unprivileged_port_start"); strings.Join(strings.Fields(r), " ") != c.fromRange || s != c.fromStart {
				t.Errorf("after rollback: range %q, start %s; want %q, %s", r, s, c.fromRange, c.fromStart)
			}
		})
	}
}
