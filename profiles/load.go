// Package profiles defines hostprep's tuning profiles: the YAML format,
// the built-in profiles, includes, --set overrides and the validation that
// needs no host.
package profiles

import "errors"

// Load resolves ref — a built-in name (see BuiltinNames) or a path to a
// YAML file — follows its includes, applies sets ("key=value" overrides,
// e.g. "net.core.somaxconn=65535" or "limits.nofile.soft=1048576") and
// validates the result without looking at the host.
//
// Errors are exitcode.BadInput and name the file, line and column.
func Load(ref string, sets []string) (*Profile, error) {
	return nil, errors.New("profiles.Load: not implemented yet")
}

// BuiltinNames lists the embedded profiles, sorted.
func BuiltinNames() []string { return nil }
