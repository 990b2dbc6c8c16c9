package tune_test

import (
	"strings"
	"testing"
)

// TestE2EReservedPortsWithBlanks: docs/profiles.md takes blanks around
// the items of net.ipv4.ip_local_reserved_ports ("8083, 8084") and has
// hostprep write the kernel's own form, which the kernel prints back. The
// blanks went to the kernel trial as written, which the kernel refuses
// (EINVAL), so validate, plan and apply all exited 2 on the docs' own
// example. Now the set is tried, written live and into the sysctl.d file
// as the kernel prints it; verify and a second apply find nothing to do,
// and rollback puts back the set the namespace had.
func TestE2EReservedPortsWithBlanks(t *testing.T) {
	guardGlobal(t)
	for value, want := range map[string]string{
		"8083, 8084":            "8083-8084",
		"9000-9010, 8080 ,7000": "7000,8080,9000-9010",
	} {
		t.Run(want, func(t *testing.T) {
			n := newNetns(t)
			// the namespace's starting values, whatever the kernel's defaults
			const start = "1883"
			for _, kv := range []string{"net.ipv4.ip_local_port_range=32768 60999", "net.ipv4.ip_local_reserved_ports=" + start} {
				if _, e, c := n.Run("sysctl", "-w", kv); c != 0 {
					t.Fatalf("sysctl -w %s: %s", kv, e)
				}
			}
			p := writeProfile(t, "blanks.yaml", "name: blanks\nsysctl:\n  net.ipv4.ip_local_reserved_ports: \""+value+"\"\n")
			if out, e, c := n.Hostprep("profiles", "validate", p); c != 0 {
				t.Fatalf("profiles validate: exit %d\n%s%s", c, out, e)
			}
			merged := "1883," + want // merged with what the namespace reserves
			if out, e, c := n.Hostprep("tune", "plan", "--profile", p); c != 0 || !strings.Contains(out, merged) {
				t.Fatalf("tune plan: exit %d, want 0 planning %s\n%s%s", c, merged, out, e)
			}
			out, e, c := n.Hostprep("tune", "apply", "--profile", p, "-o", "json")
			if c != 0 {
				t.Fatalf("tune apply: exit %d\n%s%s", c, out, e)
			}
			t.Cleanup(func() { n.Hostprep("tune", "rollback") })
			if got := n.Sysctl("net.ipv4.ip_local_reserved_ports"); got != merged {
				t.Errorf("live set %q after apply, want %q", got, merged)
			}
			file, _ := n.ReadFile("/etc/sysctl.d/60-hostprep.conf")
			if !strings.Contains(file, "net.ipv4.ip_local_reserved_ports = "+merged+"\n") {
				t.Errorf("sysctl.d file does not set %s in the kernel's form:\n%s", merged, file)
			}
			for _, args := range [][]string{{"tune", "verify", "--profile", p}, {"tune", "verify", "--boot"}} {
				if out, e, c := n.Hostprep(args...); c != 0 {
					t.Errorf("%s: exit %d\n%s%s", strings.Join(args, " "), c, out, e)
				}
			}
			out, e, c = n.Hostprep("tune", "apply", "--profile", p, "-o", "json")
			if r := decode(t, out); c != 0 || r.Changed {
				t.Errorf("second apply: exit %d, changed %v, want 0 and nothing changed\n%s%s", c, r.Changed, out, e)
			}
			if _, e, c := n.Hostprep("tune", "rollback"); c != 0 {
				t.Fatalf("rollback: exit %d\n%s", c, e)
			}
			if got := n.Sysctl("net.ipv4.ip_local_reserved_ports"); got != start {
				t.Errorf("live set %q after rollback, want %q", got, start)
			}
		})
	}
}
