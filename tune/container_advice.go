package tune

import (
	"fmt"
	"os"
	"strings"

	"github.com/hostprep/hostprep/internal/sysctlkey"
)

// Container advice: where /proc/sys is read-only (a container), each key
// of the profile gets the route that can set it, and none is dropped:
//   - namespaced and in Kubernetes' safe set: the pod's
//     securityContext.sysctls (docker run --sysctl outside Kubernetes);
//   - namespaced but unsafe: the kubelet's --allowed-unsafe-sysctls (or
//     KubeletConfiguration allowedUnsafeSysctls) on the node, together
//     with the pod's securityContext.sysctls; without it the pod is
//     refused (SysctlForbidden);
//   - not namespaced: only the node can set it (hostprep tune apply on
//     the node: a privileged DaemonSet with hostNetwork, or the node's
//     image with --root).
// Whether a key is namespaced is asked of the kernel where it can be: in a
// network namespace other than the host's (a container), the kernel shows
// a per-namespace net.* key writable and a global one read-only or not at
// all. Other keys follow the list the Kubernetes documentation gives of
// namespaced sysctls (kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*:
// the IPC namespace).

// k8sSafeSysctl is one key of Kubernetes' safe sysctl set and the
// Kubernetes release that added it (kubernetes.io/docs/reference/node/
// kernel-version-requirements, pkg/kubelet/sysctl/safe_sysctls.go).
type k8sSafeSysctl struct{ key, since string }

var k8sSafe = []k8sSafeSysctl{
	{"kernel.shm_rmid_forced", "1.12"},
	{"net.ipv4.ip_local_port_range", "1.12"},
	{"net.ipv4.tcp_syncookies", "1.12"},
	{"net.ipv4.ping_group_range", "1.18"},
	{"net.ipv4.ip_unprivileged_port_start", "1.22"},
	{"net.ipv4.ip_local_reserved_ports", "1.27"},
	{"net.ipv4.tcp_keepalive_time", "1.29"},
	{"net.ipv4.tcp_fin_timeout", "1.29"},
	{"net.ipv4.tcp_keepalive_intvl", "1.29"},
	{"net.ipv4.tcp_keepalive_probes", "1.29"},
	{"net.ipv4.tcp_rmem", "1.32"},
	{"net.ipv4.tcp_wmem", "1.32"},
}

// k8sSafeSince is the Kubernetes release from which key is in the safe
// set, "" when it is not.
func k8sSafeSince(key string) string {
	for _, s := range k8sSafe {
		if s.key == key {
			return s.since
		}
	}
	return ""
}

// ipcNamespaced says whether key lives in the IPC namespace (the
// Kubernetes documentation's list).
func ipcNamespaced(key string) bool {
	return strings.HasPrefix(key, "kernel.shm") || strings.HasPrefix(key, "kernel.msg") || key == "kernel.sem" || strings.HasPrefix(key, "fs.mqueue.")
}

// namespaced says whether key can be set per container, and how that was
// found.
func namespaced(env Env, key string) (bool, string) {
	if ipcNamespaced(key) {
		return true, "IPC namespace (Kubernetes documentation)"
	}
	if !strings.HasPrefix(key, "net.") {
		return false, "not in a namespace the kernel gives containers"
	}
	p := sysctlkey.File(env.procSys(), key)
	if env.foreignNetNS() {
		st, err := os.Stat(p)
		if err != nil {
			return false, "the kernel does not show it in this network namespace: global"
		}
		if st.Mode().Perm()&0o222 == 0 {
			return false, "the kernel shows it read-only in this network namespace: global"
		}
		return true, "the kernel shows it writable in this network namespace"
	}
	// the host's own namespace shows every key writable: no answer here
	return true, "net.* key, assumed per network namespace (not asked: this is the host's own namespace)"
}

// containerAdvice is the per-key advice for steps in a container.
func containerAdvice(env Env, steps []keyStep) string {
	var safe, unsafe, node []string
	var docker []string
	for _, s := range steps {
		kv := s.key + "=" + s.to
		ns, how := namespaced(env, s.key)
		switch {
		case ns && k8sSafeSince(s.key) != "":
			safe = append(safe, fmt.Sprintf("%s (safe since Kubernetes %s)", kv, k8sSafeSince(s.key)))
		case ns:
			unsafe = append(unsafe, fmt.Sprintf("%s (%s)", kv, how))
		default:
			node = append(node, fmt.Sprintf("%s (%s)", s.key, how))
			continue
		}
		if strings.ContainsAny(kv, " \t,") {
			kv = "'" + kv + "'"
		}
		docker = append(docker, "--sysctl "+kv)
	}
	var b strings.Builder
	if len(docker) > 0 {
		fmt.Fprintf(&b, " Docker: set the namespaced keys when starting it: docker run %s ...", strings.Join(docker, " "))
	}
	if len(safe) > 0 {
		fmt.Fprintf(&b, " Kubernetes, safe sysctls (allowed by default): the pod's securityContext.sysctls: %s.", strings.Join(safe, ", "))
	}
	if len(unsafe) > 0 {
		names := make([]string, len(unsafe))
		for i, u := range unsafe {
			names[i] = strings.SplitN(u, "=", 2)[0]
		}
		fmt.Fprintf(&b, " Kubernetes, namespaced but unsafe: %s: allow them on the node's kubelet first (--allowed-unsafe-sysctls=%s, or allowedUnsafeSysctls in the KubeletConfiguration), then set them in the pod's securityContext.sysctls; without that the pod is refused (SysctlForbidden).", strings.Join(unsafe, ", "), strings.Join(names, ","))
	}
	if len(node) > 0 {
		fmt.Fprintf(&b, " Node-level keys, not namespaced: %s: no container or pod can set them; tune the node: hostprep tune apply on the node (a privileged DaemonSet with hostNetwork, or the node's image with --root).", strings.Join(node, ", "))
	}
	return b.String()
}
