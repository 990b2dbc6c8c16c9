package hostconf

import (
	"fmt"
	"strings"
)

// ModulesLoadDirs are modules-load.d(5)'s directories in precedence order.
var ModulesLoadDirs = []string{"/etc/modules-load.d", "/run/modules-load.d", "/usr/local/lib/modules-load.d", "/usr/lib/modules-load.d", "/lib/modules-load.d"}

// moduleKeys maps a sysctl key prefix to the kernel module that registers
// it: the key does not exist before the module is loaded.
var moduleKeys = []struct{ prefix, module string }{
	{"net.netfilter.nf_conntrack", "nf_conntrack"},
	{"net.nf_conntrack_max", "nf_conntrack"},
	{"net.bridge.bridge-nf-", "br_netfilter"},
}

// ModuleFor is the kernel module a sysctl key needs ("nf_conntrack" for
// net.netfilter.nf_conntrack_max), or "" for a key of the kernel proper.
func ModuleFor(key string) string {
	k := DottedKey(NormalizeSysctlKey(key))
	for _, m := range moduleKeys {
		if strings.HasPrefix(k, m.prefix) {
			return m.module
		}
	}
	return ""
}

// ModulesAtBoot lists the modules systemd-modules-load loads at boot on
// the host under root ("" = /), before systemd-sysctl runs: one name a
// line in modules-load.d/*.conf (shadowing and order as for sysctl.d;
// Debian's /etc/modules is read through its
// /etc/modules-load.d/modules.conf link), '#' and ';' lines are comments.
// The value says where each is named ("FILE:LINE"). overlay is as for
// ReadSysctlOverlay. Errors: a file that exists but cannot be read.
func ModulesAtBoot(root string, overlay map[string][]byte) (map[string]string, error) {
	t := tree{root: root, overlay: overlay}
	out := map[string]string{}
	for _, f := range listConfDirs(t, ModulesLoadDirs, listDropIns) {
		lines, err := readLines(t, f)
		if err != nil {
			return nil, fmt.Errorf("boot: reading %s: %w", f.Name(), err)
		}
		for i, l := range lines {
			l = strings.TrimSpace(l)
			if l == "" || l[0] == '#' || l[0] == ';' {
				continue
			}
			if _, ok := out[l]; !ok {
				out[l] = fmt.Sprintf("%s:%d", f.Name(), i+1)
			}
		}
	}
	return out, nil
}
