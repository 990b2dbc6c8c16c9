// Package redact hides secrets in text hostprep prints: a password
// written into a URL's user information.
package redact

import (
	"net/url"
	"strings"
)

// URL returns s with the user information of a URL (user:password@)
// replaced by "xxxxx@", so an error message can echo a --broker or
// profile value without printing a password. A string that does not
// parse as a URL loses everything up to its last "@" after the scheme;
// one without "@" is returned as it is, so URL(s) != s says that s
// carried user information.
func URL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	if u, err := url.Parse(s); err == nil && u.User != nil {
		u.User = url.User("xxxxx")
		return u.String()
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		scheme, rest = "", s
	} else {
		scheme += "://"
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = "xxxxx" + rest[i:]
	}
	return scheme + rest
}
