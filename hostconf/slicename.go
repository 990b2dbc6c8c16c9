package hostconf

import "strings"

// hostSpecifiers are the specifiers systemd 252's unit_name_printf
// (which Slice= goes through) takes from the host or the manager rather
// than the unit's name (COMMON_SYSTEM_SPECIFIERS, COMMON_CREDS_SPECIFIERS:
// architecture, OS release fields, boot and machine ID, host names,
// kernel release, the manager's user and group): hostprep does not read
// them. Any specifier neither here nor in unitSpecifier makes systemd
// ignore the value ("Failed to resolve unit specifiers ...: Invalid
// slot"), %I, %P and %J among them.
const hostSpecifiers = "aAbBHlmMoqvwWgGuU"

// unitSpecifier is what specifier c of unit_name_printf gives for unit
// (a full name, "brk-tpl@a.service"): %i the instance ("" for a unit that
// is no instance), %p the prefix before "@" (or the type), %j the part of
// the prefix after its last dash, %n the name, %N the name without its
// type; ok is false for another specifier.
func unitSpecifier(unit string, c byte) (string, bool) {
	dot := strings.LastIndex(unit, ".")
	if dot < 0 {
		dot = len(unit)
	}
	prefix, instance := unit[:dot], ""
	if at := strings.Index(unit, "@"); at >= 0 && at < dot {
		prefix, instance = unit[:at], unit[at+1:dot]
	}
	switch c {
	case 'i':
		return instance, true
	case 'p':
		return prefix, true
	case 'j':
		return prefix[strings.LastIndex(prefix, "-")+1:], true
	case 'n':
		return unit, true
	case 'N':
		return unit[:dot], true
	}
	return "", false
}

// expandSlice expands the specifiers of a Slice= value for unit as
// systemd 252's specifier_printf does ("%%" is "%", a "%" at the end
// stays). ok is false when systemd ignores the value for a specifier it
// does not know; host is the first specifier it takes from the host
// (hostSpecifiers, "%H"), the name then not known.
func expandSlice(unit, v string) (name string, ok bool, host string) {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '%' {
			b.WriteByte(v[i])
			continue
		}
		if i++; i == len(v) {
			b.WriteByte('%')
			break
		}
		c := v[i]
		s, known := unitSpecifier(unit, c)
		switch {
		case c == '%':
			b.WriteByte('%')
		case known:
			b.WriteString(s)
		case strings.IndexByte(hostSpecifiers, c) >= 0:
			if host == "" {
				host = "%" + string(c)
			}
		default:
			return "", false, ""
		}
	}
	return b.String(), true, host
}

// sliceUnitName says whether name is a name systemd 252 assigns as
// a unit's Slice= (unit_name_is_valid with UNIT_NAME_PLAIN, then
// unit_set_slice's type check): shorter than 256 bytes, ending in
// ".slice" after at least one byte, each byte before it an ASCII letter
// or digit or one of ":-_.\" (no "@": an instance or template slice is
// refused).
func sliceUnitName(name string) bool {
	stem, ok := strings.CutSuffix(name, ".slice")
	if !ok || stem == "" || len(name) >= 256 {
		return false
	}
	for i := 0; i < len(stem); i++ {
		c := stem[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(`:-_.\`, c) >= 0) {
			return false
		}
	}
	return true
}
