package tune_test

import (
	"strings"
	"testing"
)

// Writing one sysctl can change others: net.ipv4.conf.all.forwarding
// (one variable with net.ipv4.ip_forward) is copied into every
// interface's forwarding and turns conf.all.accept_redirects off;
// conf.default.X is copied into interfaces that never had X set. hostprep
// read and restored only the keys it wrote, so rollback and the undo of a
// failed apply left other interfaces changed, a key the host already held
// was moved by the profile's default entry, and two names of one variable
// with different values never settled.

// companionNetns is a sandbox with the veth pair a0/b0 and b0 forwarding
// (as a router's uplink would). A new interface copies conf.default
// whole, with the marks of the settings written there, and the kernel
// copies a later write of default only into interfaces with no mark for
// that setting: so default is not written before a0 is made.
func companionNetns(t *testing.T) *netns {
	t.Helper()
	guardGlobal(t)
	n := newNetns(t)
	for _, cmd := range [][]string{
		{"ip", "link", "add", "a0", "type", "veth", "peer", "name", "b0"},
		{"sysctl", "-qw", "net.ipv4.conf.b0.forwarding=1"},
	} {
		if _, e, c := n.Run(cmd...); c != 0 {
			t.Fatalf("%s: %s", strings.Join(cmd, " "), e)
		}
	}
	return n
}

// sameSysctls fails t with every key that differs between before and now.
func sameSysctls(t *testing.T, when string, before, now map[string]string) {
	t.Helper()
	for k, v := range before {
		if now[k] != v {
			t.Errorf("%s: %s = %q, was %q", when, k, now[k], v)
		}
	}
}

func TestE2ERollbackPutsBackWhatTheKernelChangedAlong(t *testing.T) {
	n := companionNetns(t)
	before := n.sysctlAll()
	p := writeProfile(t, "fwd.yaml", "sysctl:\n  net.ipv4.conf.all.forwarding: \"1\"\n")
	if out, e, c := n.Hostprep("tune", "apply", "--profile", p); c != 0 {
		t.Fatalf("apply: exit %d\n%s%s", c, out, e)
	}
	if got := n.Sysctl("net.ipv4.conf.a0.forwarding"); got != "1" {
		t.Fatalf("a0 forwarding = %q after apply: the kernel did not copy all.forwarding, nothing to test", got)
	}
	if out, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s%s", c, out, e)
	}
	sameSysctls(t, "after rollback", before, n.sysctlAll())
}

func TestE2EUndoPutsBackWhatTheKernelChangedAlong(t *testing.T) {
	n := companionNetns(t)
	if _, ok := n.ReadFile("/proc/sys/net/ipv6/conf/a0/mtu"); !ok {
		t.Skip("no IPv6 on this kernel")
	}
	before := n.sysctlAll()
	// The interface refuses an IPv6 mtu above its own (1500), after the
	// forwarding write: apply undoes the run.
	p := writeProfile(t, "undo.yaml", "sysctl:\n  net.ipv4.conf.all.forwarding: \"1\"\n  net.ipv6.conf.a0.mtu: \"9000\"\n")
	if out, e, c := n.Hostprep("tune", "apply", "--profile", p); c != 3 {
		t.Fatalf("apply: exit %d, want 3 (the kernel refuses the mtu)\n%s%s", c, out, e)
	}
	sameSysctls(t, "after the failed apply", before, n.sysctlAll())
}

func TestE2EHeldKeyMovedByDefaultIsWrittenBack(t *testing.T) {
	n := companionNetns(t)
	if got := n.Sysctl("net.ipv4.conf.a0.log_martians"); got != "0" {
		t.Fatalf("a0 log_martians = %q in a new namespace, want 0", got)
	}
	p := writeProfile(t, "lm.yaml", "sysctl:\n  net.ipv4.conf.a0.log_martians: \"0\"\n  net.ipv4.conf.default.log_martians: \"1\"\n")
	if out, e, c := n.Hostprep("tune", "apply", "--profile", p); c != 0 {
		t.Fatalf("apply: exit %d\n%s%s", c, out, e)
	}
	if got := n.Sysctl("net.ipv4.conf.a0.log_martians"); got != "0" {
		t.Errorf("a0 log_martians = %q after apply, want the profile's 0", got)
	}
	if out, e, c := n.Hostprep("tune", "verify", "--profile", p); c != 0 {
		t.Errorf("verify --profile: exit %d\n%s%s", c, out, e)
	}
}

func TestE2ETwoNamesOfOneVariableMustAgree(t *testing.T) {
	n := companionNetns(t)
	before := n.sysctlAll()
	p := writeProfile(t, "alias.yaml", "sysctl:\n  net.ipv4.ip_forward: \"1\"\n  net.ipv4.conf.all.forwarding: \"0\"\n")
	// The kernel trial finds the tie: refused up front, exit 2.
	out, e, c := n.Hostprep("tune", "apply", "--profile", p)
	if c != 2 || !strings.Contains(out+e, "give them values that agree") {
		t.Fatalf("apply: exit %d, want 2 saying the two keys must agree\n%s%s", c, out, e)
	}
	sameSysctls(t, "after the refused apply", before, n.sysctlAll())
}
