// Package sysctlkey spells a sysctl key as its file under /proc/sys, the
// way procps's sysctl and systemd-sysctl do, so that every reader and
// writer in hostprep finds the same file for the same key.
//
// A key's components are separated by dots (net.core.somaxconn) or by
// slashes (net/core/somaxconn). A component may itself hold a dot: the
// VLAN interface eth0.100 is net.ipv4.conf.eth0/100.rp_filter in the
// dotted spelling, whose file is /proc/sys/net/ipv4/conf/eth0.100/rp_filter.
// Taking every dot for a separator loses such keys.
package sysctlkey

import (
	"path/filepath"
	"slices"
	"strings"
)

// Path is key in path form, as systemd's sysctl_normalize makes it: when
// the key's first separator is a dot, dots and slashes swap
// (net.ipv4.conf.eth0/100.rp_filter -> net/ipv4/conf/eth0.100/rp_filter);
// when it is a slash the key is already in path form. Leading and
// repeated slashes and "." components are dropped, as path_simplify does
// (net/core/./somaxconn is net/core/somaxconn).
func Path(key string) string {
	if i := strings.IndexAny(key, "./"); i >= 0 && key[i] == '.' {
		key = Swap(key)
	}
	parts := strings.FieldsFunc(key, func(r rune) bool { return r == '/' })
	parts = slices.DeleteFunc(parts, func(p string) bool { return p == "." })
	return strings.Join(parts, "/")
}

// File is key's file under root (/proc/sys, or a tree laid out like it).
func File(root, key string) string { return filepath.Join(root, Path(key)) }

// Dotted is the kernel's dotted spelling of a path-form key
// (net/ipv4/conf/eth0.100/rp_filter -> net.ipv4.conf.eth0/100.rp_filter),
// the spelling `sysctl -a` prints.
func Dotted(pathKey string) string { return Swap(pathKey) }

// Swap swaps every '.' and '/' in k: procps's slashdot(k, '.', '/'), whose
// swap starts at the first separator (nothing before it is either).
func Swap(k string) string {
	b := []byte(k)
	for j, c := range b {
		switch c {
		case '.':
			b[j] = '/'
		case '/':
			b[j] = '.'
		}
	}
	return string(b)
}

// InterfaceTrees are the directories of /proc/sys with an entry per
// network interface of the namespace, besides their "all" and "default"
// entries (neigh has "default" in the initial namespace only).
var InterfaceTrees = []string{"net/ipv4/conf/", "net/ipv6/conf/", "net/ipv4/neigh/", "net/ipv6/neigh/"}

// InInterfaceTree reports whether key lies in one of InterfaceTrees (any
// entry: an interface's, all, default), which every network namespace
// has its own of.
func InInterfaceTree(key string) bool {
	p := Path(key)
	for _, t := range InterfaceTrees {
		if strings.HasPrefix(p, t) {
			return true
		}
	}
	return false
}

// Interface splits the key of one interface's entry into its tree
// (net/ipv4/conf/), the interface (eth0.100) and the rest of the path
// (rp_filter). ok is false for every other key, the all and default
// entries among them. Such a key lives in each network namespace that has
// the interface: where it is absent, the interface is, not the key.
func Interface(key string) (tree, dev, rest string, ok bool) {
	p := Path(key)
	for _, t := range InterfaceTrees {
		r, found := strings.CutPrefix(p, t)
		if !found {
			continue
		}
		dev, rest, ok = strings.Cut(r, "/")
		if !ok || dev == "all" || dev == "default" || rest == "" {
			return "", "", "", false
		}
		return t, dev, rest, true
	}
	return "", "", "", false
}
