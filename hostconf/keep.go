package hostconf

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// KeepSettings is a systemd configuration file's bytes b (a unit, drop-in,
// slice or system.conf) with only its section headers and its
// assignments of keys left as written, read as systemd 252's config_parse
// reads b (configLines: continuations, comment lines inside them, bare CR
// and NUL line ends): every other logical line is emptied and every line
// ends in "\n", so a kept line keeps its number (a FILE:LINE read from
// the result is the one in b). A line at which config_parse stops
// (parseStops) stops it at the same line of the result, for the same
// reason, without its text when it is an assignment that is not UTF-8
// (then the reason quotes "\xff"); nothing after it is kept, as nothing
// after it is read; a line of LONG_LINE_MAX bytes or more likewise
// (as a comment of that length). preflight --record keeps a unit's files this way: a unit's
// Environment= or ExecStart= may hold a secret.
func KeepSettings(b []byte, keys []string) []byte {
	lines, long := systemdLinesLong(b, longLineMax)
	out := make([]string, len(lines))
	if long {
		// a line too long stops config_parse as it did: one of
		// comment bytes, holding nothing of the line
		out = append(out, strings.Repeat("#", longLineMax))
	}
	for _, l := range configLines(lines, long) {
		p := strings.Trim(l.text, systemdSpace)
		if p == "" {
			continue
		}
		if parseStops(p) != "" {
			out[l.n-1] = p
			if p[0] != '[' && !utf8.ValidString(p) {
				out[l.n-1] = "\xff" // fails as the line did, and holds nothing of it
			}
			break
		}
		if k, _, ok := strings.Cut(p, "="); p[0] != '[' && (!ok || !slices.Contains(keys, strings.Trim(k, systemdSpace))) {
			continue
		}
		for i := l.n - 1; i < l.last; i++ {
			out[i] = lines[i]
			if c := strings.TrimLeft(lines[i], systemdSpace); c != "" && strings.ContainsRune("#;", rune(c[0])) {
				out[i] = "#" // a comment inside the continuation, without its text
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return []byte(strings.Join(out, "\n") + "\n")
}
