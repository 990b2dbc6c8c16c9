package tune_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestE2EKeyOfAnInterfaceWithADot: an interface whose name has a dot (a
// VLAN such as eth0.100) is spelled with a slash in a dotted key,
// net.ipv4.conf.eth0/100.rp_filter, and its file is
// /proc/sys/net/ipv4/conf/eth0.100/rp_filter (procps and systemd swap dots
// and slashes when the key's first separator is a dot). hostprep took
// every dot for a slash: tune wrote nothing for such a key and still
// exited 0, and the kernel trial could not try it.
// The test makes the interface in its own namespace and has procps's
// sysctl read the key back.
func TestE2EKeyOfAnInterfaceWithADot(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	n.veth("hp0.7", "hp1")
	const key = "net.ipv4.conf.hp0/7.rp_filter"
	before := n.Sysctl(key)
	want := "2"
	if before == want {
		want = "1"
	}
	p := writeProfile(t, "vlan.yaml", "sysctl:\n  "+key+": \""+want+"\"\n")
	// A new namespace has no hp0.7: the kernel trial writes the value on
	// conf's default entry, which every interface's entry is built from,
	// and says so.
	out, errOut, code := n.Hostprep("tune", "apply", "--profile", p)
	if code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out+errOut, key+" as net.ipv4.conf.default.rp_filter") || strings.Contains(out+errOut, "table of kernel bounds") {
		t.Errorf("apply does not say the key was tried as net.ipv4.conf.default.rp_filter:\n%s%s", out, errOut)
	}
	if got := n.Sysctl(key); got != want {
		t.Fatalf("%s = %q after apply, want %q", key, got, want)
	}
	if f, ok := n.ReadFile("/etc/sysctl.d/60-hostprep.conf"); !ok || !strings.Contains(f, key+" = "+want) {
		t.Errorf("60-hostprep.conf does not set %s = %s:\n%s", key, want, f)
	}
	if out, errOut, code := n.Hostprep("tune", "verify"); code != 0 {
		t.Errorf("verify: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := n.Hostprep("tune", "rollback"); code != 0 {
		t.Fatalf("rollback: exit %d\n%s%s", code, out, errOut)
	}
	if got := n.Sysctl(key); got != before {
		t.Fatalf("%s = %q after rollback, want %q", key, got, before)
	}
}

// TestE2EKeyOfAMissingInterface: the key of an interface this namespace
// does not have is not a global key to leave to the host. Inside a
// network namespace it was skipped as one, exit 0; it is refused up
// front (exit 2, nothing written), and when the interface is there under
// a name with a dot the key spelled with dots, the fix names the key's
// right spelling.
func TestE2EKeyOfAMissingInterface(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	n.veth("hp0.7", "hp1")
	for _, c := range []struct{ key, want string }{
		{"net.ipv4.conf.nosuch0.rp_filter", `no interface "nosuch0"`},
		{"net.ipv4.conf.hp0.7.rp_filter", "its key is spelled net.ipv4.conf.hp0/7.rp_filter"},
	} {
		p := writeProfile(t, "missing.yaml", "sysctl:\n  "+c.key+": \"2\"\n")
		out, errOut, code := n.Hostprep("tune", "apply", "--profile", p)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, want 2 saying %q:\n%s%s", c.key, code, c.want, out, errOut)
		}
		if _, _, e := n.Run("test", "-e", "/var/lib/hostprep"); e == 0 {
			t.Fatalf("%s: journal written for a refused profile", c.key)
		}
	}
}

// TestE2EStandInAcceptanceIsNoPromise: the trial writes an interface's
// key on the entry standing for any interface, whose rules can be
// looser than the interface's own: conf/default takes an IPv6 mtu that
// an interface of MTU 1500 refuses. The plan says the key was judged on
// the stand-in (JSON: trial_on_stand_in) and that the interface can
// refuse more; apply then meets the refusal and undoes the run.
func TestE2EStandInAcceptanceIsNoPromise(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	n.veth("hp0.7", "hp1", "mtu", "1500")
	if _, ok := n.ReadFile("/proc/sys/net/ipv6/conf/hp0.7/mtu"); !ok {
		t.Skip("no IPv6 on this kernel")
	}
	const key = "net.ipv6.conf.hp0/7.mtu"
	before := n.Sysctl(key)
	p := writeProfile(t, "mtu.yaml", "sysctl:\n  "+key+": \"9000\"\n")
	out, errOut, code := n.Hostprep("tune", "plan", "--profile", p, "-o", "json")
	var plan struct {
		Kernel struct {
			Keys map[string]string `json:"keys"`
		} `json:"kernel_check"`
		Notes []string `json:"notes"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	if plan.Kernel.Keys[key] != "trial_on_stand_in" || !strings.Contains(strings.Join(plan.Notes, "\n"), "can refuse more") {
		t.Errorf("plan does not say %s was judged on a stand-in that promises nothing: %+v", key, plan)
	}
	_, errOut, code = n.Hostprep("tune", "apply", "--profile", p)
	if code == 0 || !strings.Contains(errOut, "undone") {
		t.Errorf("apply of an mtu above the interface's: exit %d, want a refusal undone:\n%s", code, errOut)
	}
	if got := n.Sysctl(key); got != before {
		t.Errorf("%s = %s after the refused apply, want %s", key, got, before)
	}
}
