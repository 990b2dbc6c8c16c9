package tune_test

import (
	"strings"
	"testing"
)

// TestE2ECaseKubernetesUnsafeSysctlAdvice runs field case
// kubernetes-unsafe-sysctl-advice against the running kernel: in the
// sandbox's own network namespace with /proc/sys read-only (a container),
// apply exits 3 and routes each key as the kernel shows it: the safe
// ip_local_port_range to the pod's securityContext.sysctls, somaxconn
// (writable here, not in the safe set) to the kubelet's
// allowed-unsafe-sysctls, wmem_max (read-only here: global) to the node.
func TestE2ECaseKubernetesUnsafeSysctlAdvice(t *testing.T) {
	n := newNetns(t)
	prof := writeProfile(t, "k8s.yaml", "sysctl:\n  net.core.somaxconn: {value: \"65535\", mode: at-least}\n  net.ipv4.ip_local_port_range: \"1024 65535\"\n  net.core.wmem_max: {value: \"8388608\", mode: at-least}\n")
	if _, e, c := n.Run("sh", "-c", "mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys"); c != 0 {
		t.Fatal(e)
	}
	_, errOut, code := n.Hostprep("tune", "apply", "--profile", prof)
	for _, want := range []string{
		"securityContext.sysctls: net.ipv4.ip_local_port_range=1024 65535 (safe since Kubernetes 1.12)",
		"namespaced but unsafe: net.core.somaxconn=65535 (the kernel shows it writable in this network namespace)",
		"--allowed-unsafe-sysctls=net.core.somaxconn",
		"Node-level keys, not namespaced: net.core.wmem_max (the kernel shows it read-only in this network namespace: global)",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("lacks %q", want)
		}
	}
	if code != 3 || t.Failed() {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
}
