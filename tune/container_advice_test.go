package tune

import (
	"os"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// TestCaseKubernetesUnsafeSysctlAdvice guards the container advice on
// field case kubernetes-unsafe-sysctl-advice: in a container (its own
// network namespace, where the kernel shows net.core.wmem_max read-only),
// each key of the profile gets its route: ip_local_port_range in
// Kubernetes' safe set (the pod's securityContext.sysctls), somaxconn
// namespaced but unsafe (the kubelet's allowed-unsafe-sysctls with the
// pod's securityContext), wmem_max node-level; none is dropped.
func TestCaseKubernetesUnsafeSysctlAdvice(t *testing.T) {
	_, p, err := loadCase(t, "kubernetes-unsafe-sysctl-advice")
	if err != nil {
		t.Fatal(err)
	}
	// The container's view: no net.core.dev_weight (initial namespace
	// only) and the global buffer limits read-only, as the kernel shows them.
	h := newHost(t, map[string]string{"net.core.dev_weight": "<absent>"})
	must(t, os.Chmod(h.keyPath("net.core.wmem_max"), 0o444))
	if !h.env.foreignNetNS() {
		t.Fatal("fixture is not seen as a network namespace of its own")
	}
	pl, err := NewPlan(p, h.env)
	must(t, err)
	err = containerError(pl)
	wantCode(t, err, exitcode.Environment,
		"net.ipv4.ip_local_port_range=1024 65535 (safe since Kubernetes 1.12)", "the pod's securityContext.sysctls: ",
		"namespaced but unsafe: net.core.somaxconn=65535",
		"--allowed-unsafe-sysctls=net.core.somaxconn",
		"allowedUnsafeSysctls",
		"SysctlForbidden",
		"Node-level keys, not namespaced: net.core.wmem_max (the kernel shows it read-only in this network namespace: global)",
		"DaemonSet")
	msg := err.Error()
	if strings.Contains(msg, "--sysctl net.core.wmem_max") {
		t.Errorf("a node-level key is advised for docker run --sysctl: %s", msg)
	}
	if !strings.Contains(msg, "--sysctl net.core.somaxconn=65535 --sysctl 'net.ipv4.ip_local_port_range=1024 65535'") {
		t.Errorf("docker advice changed: %s", msg)
	}
}

// TestK8sSafeSetAsDocumented guards the safe set against the Kubernetes
// documentation's list (kernel-version-requirements, safe_sysctls.go):
// every documented key is in it with its release, and keys the
// documentation leaves out (somaxconn, tcp_max_syn_backlog) are not.
func TestK8sSafeSetAsDocumented(t *testing.T) {
	for key, since := range map[string]string{
		"kernel.shm_rmid_forced": "1.12", "net.ipv4.ip_local_port_range": "1.12", "net.ipv4.tcp_syncookies": "1.12",
		"net.ipv4.ping_group_range": "1.18", "net.ipv4.ip_unprivileged_port_start": "1.22", "net.ipv4.ip_local_reserved_ports": "1.27",
		"net.ipv4.tcp_keepalive_time": "1.29", "net.ipv4.tcp_fin_timeout": "1.29", "net.ipv4.tcp_keepalive_intvl": "1.29",
		"net.ipv4.tcp_keepalive_probes": "1.29", "net.ipv4.tcp_rmem": "1.32", "net.ipv4.tcp_wmem": "1.32",
	} {
		if got := k8sSafeSince(key); got != since {
			t.Errorf("%s: safe since %q, want %q", key, got, since)
		}
	}
	for _, key := range []string{"net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog", "net.core.wmem_max", "fs.nr_open"} {
		if k8sSafeSince(key) != "" {
			t.Errorf("%s is not in Kubernetes' safe set", key)
		}
	}
}
