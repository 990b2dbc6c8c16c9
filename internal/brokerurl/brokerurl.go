// Package brokerurl is the one definition of the MQTT broker URLs
// hostprep accepts: `probe mqtt --broker`, `ready --mqtt` and a profile's
// probe.mqtt.broker all parse through Parse, and the schemes, what they
// mean and their default ports are listed once, here.
//
// A broker URL is SCHEME://HOST[:PORT] and nothing else. Every report,
// HTML page and log line that names the broker prints the URL as given,
// so a part the probe would not use — user information, a path, a query,
// a fragment — is refused instead of ignored: it has no meaning for the
// probe, and a password written into it would be printed everywhere.
package brokerurl

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/redact"
)

// scheme is one accepted URL scheme: whether it means TLS and its
// default port.
type scheme struct {
	name, port string
	tls        bool
}

// schemes is the one list of broker URL schemes, plain ones first.
var schemes = []scheme{
	{"tcp", "1883", false}, {"mqtt", "1883", false},
	{"mqtts", "8883", true}, {"ssl", "8883", true}, {"tls", "8883", true},
}

// Schemes lists the accepted schemes: the plain ones first, then TLS.
func Schemes() []string {
	out := make([]string, len(schemes))
	for i, s := range schemes {
		out[i] = s.name
	}
	return out
}

// Help says which schemes mean what and their default ports, for errors
// and flag help: "tcp:// or mqtt:// (plain, port 1883 by default),
// mqtts://, ssl:// or tls:// (TLS, port 8883)".
var Help = func() string {
	var plain, tls []string
	for _, s := range schemes {
		if s.tls {
			tls = append(tls, s.name+"://")
		} else {
			plain = append(plain, s.name+"://")
		}
	}
	or := func(l []string) string {
		return strings.Join(l[:len(l)-1], ", ") + " or " + l[len(l)-1]
	}
	return fmt.Sprintf("%s (plain, port %s by default), %s (TLS, port %s)", or(plain), schemes[0].port, or(tls), schemes[len(schemes)-1].port)
}()

// TLSHelp lists the TLS schemes: "mqtts://, ssl:// or tls://".
var TLSHelp = func() string {
	var l []string
	for _, s := range schemes {
		if s.tls {
			l = append(l, s.name+"://")
		}
	}
	return strings.Join(l[:len(l)-1], ", ") + " or " + l[len(l)-1]
}()

// Endpoint is a parsed broker URL.
type Endpoint struct {
	// Scheme is the URL's scheme, one of Schemes.
	Scheme string
	// Host is the host as written (an IPv6 address without brackets).
	Host string
	// Port is the port, the scheme's default when the URL has none.
	Port string
	// TLS is true for the TLS schemes.
	TLS bool
}

// HostPort is the address to dial, host:port.
func (e Endpoint) HostPort() string { return net.JoinHostPort(e.Host, e.Port) }

// Login names, for the error that refuses user information in a URL, the
// settings that carry the user and the password instead: for
// `probe mqtt`, "--username" and "--password-file or
// $HOSTPREP_MQTT_PASSWORD".
type Login struct{ User, Password string }

// Parse checks a broker URL and returns its endpoint. The error is
// exitcode.BadInput-worthy text of one line, "SETTING "URL": rule; fix",
// that names setting (the flag or profile key that gave the URL), shows
// the URL as Shown does (never a password, a path, a query or a fragment
// it may carry) and says what to give instead.
func Parse(raw, setting string, login Login) (Endpoint, error) {
	var e Endpoint
	shown := Shown(raw)
	u, err := url.Parse(raw)
	if strings.Contains(raw, "@") { // user information, or a password that holds "@"
		return e, fmt.Errorf("%s %q: a user or password in the URL is refused (reports and logs print the broker URL); give the user with %s and the password with %s",
			setting, shown, login.User, login.Password)
	}
	if err != nil || u.Hostname() == "" || u.Opaque != "" {
		return e, fmt.Errorf("%s %q: want a URL such as tcp://127.0.0.1:1883 or mqtts://HOST:8883; schemes: %s", setting, shown, Help)
	}
	known := false
	for _, s := range schemes {
		if s.name == u.Scheme {
			known, e.Scheme, e.TLS, e.Port = true, s.name, s.tls, s.port
		}
	}
	if !known {
		return e, fmt.Errorf("%s %q: scheme %q not supported; want %s", setting, shown, u.Scheme, Help)
	}
	if part := extraPart(raw, u); part != "" {
		return e, fmt.Errorf("%s %q: %s has no meaning for the probe and is refused (reports and logs print the broker URL, so a password in it would be printed); give only %s://HOST:PORT, e.g. %s://%s",
			setting, shown, part, u.Scheme, u.Scheme, u.Host)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return e, fmt.Errorf("%s %q: port %s is not 1..65535; leave it out for the scheme's default (%s)", setting, shown, p, e.Port)
		}
		e.Port = p
	}
	e.Host = u.Hostname()
	return e, nil
}

// extraPart names the part of raw, parsed as u, beyond
// SCHEME://HOST[:PORT], "" when it has none: a path (even "/"), a query
// (even an empty "?") or a fragment (even an empty "#"). A URL without
// user information has "?" and "#" nowhere else.
func extraPart(raw string, u *url.URL) string {
	switch {
	case u.RawQuery != "" || u.ForceQuery:
		return "a query (?...)"
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return "a fragment (#...)"
	case u.Path != "" || u.RawPath != "":
		return "a path (/...)"
	}
	return ""
}

// Shown is raw as an error may echo it, with every part that may hold a
// secret hidden: user information becomes "xxxxx@", and a path, a query
// or a fragment "/xxxxx", "?xxxxx" or "#xxxxx" ("tcp://h:1883?password=pw"
// is shown "tcp://h:1883?xxxxx"). Where an "@" outside the user
// information leaves unsure what the host is (a password with an
// unescaped "#", "/" or "?"), the host is hidden too; a URL that does not
// parse keeps only its scheme and what follows its last "@" up to a
// path, query or fragment.
func Shown(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Opaque != "" {
		s := redact.URL(raw)
		prefix, rest := "", s
		if i := strings.Index(s, "://"); i >= 0 {
			prefix, rest = s[:i+3], s[i+3:]
		}
		if i := strings.LastIndex(rest, "@"); i >= 0 {
			prefix, rest = prefix+rest[:i+1], rest[i+1:]
		}
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			rest = rest[:i+1] + "xxxxx"
		}
		return prefix + rest
	}
	shown := u.Scheme + "://"
	switch {
	case u.User != nil:
		shown += "xxxxx@" + u.Host
	case strings.Contains(raw, "@"):
		shown += "xxxxx"
	default:
		shown += u.Host
	}
	for _, p := range []struct {
		mark string
		set  bool
	}{{"/", u.Path != ""}, {"?", u.RawQuery != "" || u.ForceQuery}, {"#", u.Fragment != "" || strings.HasSuffix(raw, "#")}} {
		if p.set {
			shown += p.mark + "xxxxx"
		}
	}
	return shown
}
