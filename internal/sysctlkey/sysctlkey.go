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
