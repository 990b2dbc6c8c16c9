package tune_test

import (
	"strings"
	"testing"
)

// TestE2ESecretKeyRefused: a key whose /proc/sys file the kernel shows
// readable by root only (mode 0600) holds a secret:
// net.ipv4.tcp_fastopen_key (the TFO cookie key), or a
// net.ipv6.conf.*.stable_secret. hostprep prints the values it plans and
// writes them to a sysctl.d file of mode 0644, so tune plan, tune apply
// and profiles validate refuse such a key up front: exit 2, one line
// naming the profile's file:line, the key, why and the fix, never the
// value; nothing changes. The kernel's own printed form, hex words with
// leading zeros, gets that refusal too, not advice about octal.
func TestE2ESecretKeyRefused(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	const key = "net.ipv4.tcp_fastopen_key"
	if _, _, c := n.Run("test", "-e", "/proc/sys/net/ipv4/tcp_fastopen_key"); c != 0 {
		t.Skip("no " + key + " on this kernel")
	}
	cases := map[string]string{
		key:            "00000001-00000002-00000003-00000004",
		key + " zero":  "00000000-00000000-00000000-00000000",
		key + " short": "1-2-3-4",
	}
	if _, _, c := n.Run("test", "-e", "/proc/sys/net/ipv6/conf/lo/stable_secret"); c == 0 {
		cases["net.ipv6.conf.lo.stable_secret"] = "fd00:1:2:3:4:5:6:7"
	}
	const other = "net.core.somaxconn"
	before, secretBefore := n.Sysctl(other), n.Sysctl(key)
	for name, value := range cases {
		k, _, _ := strings.Cut(name, " ")
		p := writeProfile(t, "secret.yaml", "sysctl:\n  "+other+": \"4097\"\n  "+k+": \""+value+"\"\n")
		for _, argv := range [][]string{{"tune", "plan", "--profile", p}, {"tune", "apply", "--profile", p}, {"profiles", "validate", p}} {
			out, errOut, code := n.Hostprep(argv...)
			what := argv[0] + " " + argv[1] + " with " + name
			if code != 2 || !strings.Contains(errOut, p+":3:") || !strings.Contains(errOut, "sysctl "+k+": ") ||
				!strings.Contains(errOut, "keeps its value secret") || !strings.Contains(errOut, "set it outside hostprep") {
				t.Errorf("%s: exit %d, want 2 naming %s:3, the key, why and the fix:\n%s%s", what, code, p, out, errOut)
			}
			if strings.Contains(errOut, "octal") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
				t.Errorf("%s: want the one-line secret refusal, got:\n%s", what, errOut)
			}
			if strings.Contains(out+errOut, value) || strings.Contains(out+errOut, "00000001") {
				t.Errorf("%s: the secret is printed:\n%s%s", what, out, errOut)
			}
		}
	}
	if got := n.Sysctl(other); got != before {
		t.Errorf("%s = %q after a refused apply, want %q", other, got, before)
	}
	if got := n.Sysctl(key); got != secretBefore {
		t.Errorf("%s changed by a refused apply", key)
	}
	for _, f := range []string{"/var/lib/hostprep", "/etc/sysctl.d/60-hostprep.conf"} {
		if _, _, e := n.Run("test", "-e", f); e == 0 {
			t.Errorf("%s written for a refused profile", f)
		}
	}
}

// TestE2ERootOnlyNumberIsNoSecret: the kernel shows numeric settings mode
// 0600 too (net.core.bpf_jit_harden, which hardening profiles set, and
// vm.mmap_rnd_bits, which a network namespace shows too); they are
// root-only, not secret, and are planned as any other key (plan only: the
// key is global).
func TestE2ERootOnlyNumberIsNoSecret(t *testing.T) {
	guardGlobal(t)
	n := newNetns(t)
	const key = "vm.mmap_rnd_bits"
	mode, _, c := n.Run("stat", "-c", "%a", "/proc/sys/vm/mmap_rnd_bits")
	if c != 0 || strings.TrimSpace(mode) != "600" {
		t.Skip(key + " is not mode 0600 here")
	}
	p := writeProfile(t, "harden.yaml", "sysctl:\n  "+key+": \""+n.Sysctl(key)+"\"\n")
	if out, errOut, code := n.Hostprep("tune", "plan", "--profile", p); code != 0 || strings.Contains(errOut, "secret") {
		t.Errorf("tune plan with %s at its value: exit %d, want 0 and no secret refusal:\n%s%s", key, code, out, errOut)
	}
}
