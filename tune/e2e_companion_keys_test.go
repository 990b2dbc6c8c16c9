package tune_test

import (
	"os/exec"
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
	n.veth("a0", "b0")
	if _, e, c := n.Run("sysctl", "-qw", "net.ipv4.conf.b0.forwarding=1"); c != 0 {
		t.Fatalf("sysctl -w: %s", e)
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

// rollbackToSame runs tune rollback, which must exit 0, and fails t with
// every key that then differs from before.
func rollbackToSame(t *testing.T, n *netns, before map[string]string) {
	t.Helper()
	if out, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s%s", c, out, e)
	}
	sameSysctls(t, "after rollback", before, n.sysctlAll())
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
	rollbackToSame(t, n, before)
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

// applyOK runs tune apply of a profile body and fails t unless it exits 0.
func applyOK(t *testing.T, n *netns, name, body string) {
	t.Helper()
	p := writeProfile(t, name, body)
	if out, e, c := n.Hostprep("tune", "apply", "--profile", p); c != 0 {
		t.Fatalf("apply %s: exit %d\n%s%s", name, c, out, e)
	}
}

// A companion an earlier apply moved and a later apply then set is
// journaled with its value from before the first apply, not the moved
// one.
func TestE2ECompanionSetByALaterApply(t *testing.T) {
	n := companionNetns(t)
	before := n.sysctlAll()
	applyOK(t, n, "a.yaml", "sysctl:\n  net.ipv4.conf.default.log_martians: \"1\"\n")
	if got := n.Sysctl("net.ipv4.conf.a0.log_martians"); got != "1" {
		t.Fatalf("a0 log_martians = %q: the kernel did not copy default, nothing to test", got)
	}
	applyOK(t, n, "b.yaml", "sysctl:\n  net.ipv4.conf.a0.log_martians: \"0\"\n")
	rollbackToSame(t, n, before)
}

// Another writer's change to a key no apply moved is theirs: a later
// apply does not make it hostprep's to roll back.
func TestE2ECompanionChangedByAnotherWriter(t *testing.T) {
	n := companionNetns(t)
	applyOK(t, n, "a.yaml", "sysctl:\n  net.ipv4.conf.all.rp_filter: \"2\"\n")
	if _, e, c := n.Run("sysctl", "-qw", "net.ipv4.conf.default.accept_local=1", "net.ipv4.conf.all.arp_ignore=2"); c != 0 {
		t.Fatal(e)
	}
	applyOK(t, n, "b.yaml", "sysctl:\n  net.ipv4.conf.all.log_martians: \"1\"\n")
	if out, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("rollback: exit %d\n%s%s", c, out, e)
	}
	for k, want := range map[string]string{"net.ipv4.conf.default.accept_local": "1", "net.ipv4.conf.all.arp_ignore": "2"} {
		if got := n.Sysctl(k); got != want {
			t.Errorf("%s = %q after rollback, want the other writer's %q", k, got, want)
		}
	}
}

// An apply killed after its writes, before it settled its companions:
// rollback takes them as moved and puts them back.
func TestE2ECompanionsOfAKilledApply(t *testing.T) {
	if _, err := exec.LookPath("strace"); err != nil {
		t.Skip("strace not installed")
	}
	n := companionNetns(t)
	before := n.sysctlAll()
	p := writeProfile(t, "fwd.yaml", "sysctl:\n  net.ipv4.conf.all.forwarding: \"1\"\n")
	_, e, c := n.Run("strace", "-f", "-qq", "-o", "/dev/null", "-P", "/etc/sysctl.d/60-hostprep.conf", "-e", "trace=rename,renameat,renameat2",
		"-e", "inject=rename,renameat,renameat2:error=EIO:signal=SIGKILL:when=1", n.Bin, "tune", "apply", "--profile", p)
	if c == 0 {
		t.Fatalf("apply was not killed:\n%s", e)
	}
	if got := n.Sysctl("net.ipv4.conf.a0.forwarding"); got != "1" {
		t.Fatalf("a0 forwarding = %q: the kill came before the runtime writes, nothing to test", got)
	}
	rollbackToSame(t, n, before)
}

// A rollback that could not restore a key keeps just that in the
// journal: the next rollback does not put back, as companions, what the
// operator changed in between.
func TestE2EIncompleteRollbackKeepsNoCompanions(t *testing.T) {
	n := companionNetns(t)
	applyOK(t, n, "p.yaml", "sysctl:\n  net.ipv4.ip_local_port_range: \"40000 60999\"\n  net.ipv4.conf.all.forwarding: \"1\"\n")
	if _, e, c := n.Run("sysctl", "-qw", "net.ipv4.ip_unprivileged_port_start=35000"); c != 0 {
		t.Fatal(e)
	}
	if out, e, c := n.Hostprep("tune", "rollback"); c != 3 {
		t.Fatalf("rollback: exit %d, want 3 (the kernel refuses the original range)\n%s%s", c, out, e)
	}
	if _, e, c := n.Run("sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv4.ip_unprivileged_port_start=1024"); c != 0 {
		t.Fatal(e)
	}
	if out, e, c := n.Hostprep("tune", "rollback"); c != 0 {
		t.Fatalf("second rollback: exit %d\n%s%s", c, out, e)
	}
	if got := n.Sysctl("net.ipv4.ip_forward"); got != "1" {
		t.Errorf("ip_forward = %q after the second rollback, want the operator's 1", got)
	}
}
