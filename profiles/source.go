package profiles

import (
	"fmt"
	"strings"
)

// srcPos is where one value of a profile came from: a position in a YAML
// file, or a --set argument.
type srcPos struct {
	File      string
	Line, Col int
	Set       string // the --set argument, when the value came from one
	// Flag is the command-line flag that set the value, as given
	// ("--sockets 100"; see Override).
	Flag string
}

func (s srcPos) valid() bool { return s.File != "" || s.Set != "" || s.Flag != "" }

func (s srcPos) String() string {
	switch {
	case s.Set != "":
		return fmt.Sprintf("--set %q", s.Set)
	case s.Flag != "":
		return s.Flag
	case s.Line > 0:
		return fmt.Sprintf("%s:%d:%d", s.File, s.Line, s.Col)
	default:
		return s.File
	}
}

// sources maps a path in the profile (segments joined by pathSep, e.g.
// "sysctl\x00net.core.somaxconn\x00value") to where its value came from.
type sources struct {
	pos map[string]srcPos
}

// pathSep separates path segments; sysctl keys contain dots and may
// contain slashes, so neither can be the separator.
const pathSep = "\x00"

func pathKey(segs ...string) string { return strings.Join(segs, pathSep) }

func (s *sources) set(p srcPos, segs ...string) {
	if s.pos == nil {
		s.pos = map[string]srcPos{}
	}
	s.pos[pathKey(segs...)] = p
}

// at returns the position recorded for the longest prefix of segs that
// has one, so an error about a field falls back to its parent's position.
func (p *Profile) at(segs ...string) srcPos {
	if p.src == nil {
		return srcPos{}
	}
	for n := len(segs); n > 0; n-- {
		if sp, ok := p.src.pos[pathKey(segs[:n]...)]; ok {
			return sp
		}
	}
	return srcPos{}
}

// where is the prefix of an error message about the value at segs:
// "file:line:col: ", `--set "k=v": ` or "profile NAME: ".
func (p *Profile) where(segs ...string) string {
	if sp := p.at(segs...); sp.valid() {
		return sp.String() + ": "
	}
	if p.Name != "" {
		return "profile " + p.Name + ": "
	}
	return "profile: "
}

// displayPath turns a path into the dotted name a user writes:
// limits.nofile.hard, reserve_ports[2].
func displayPath(segs []string) string {
	var b strings.Builder
	for i, s := range segs {
		if isIndex(s) {
			b.WriteString("[" + s + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
