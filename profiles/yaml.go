package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/plural"
	"github.com/hostprep/hostprep/internal/rate"
	"gopkg.in/yaml.v3"
)

// posError is an error at a position inside one YAML document; the file
// name is added by the caller that knows it.
type posError struct {
	Line, Col int
	Msg       string
}

func (e *posError) Error() string { return fmt.Sprintf("%d:%d: %s", e.Line, e.Col, e.Msg) }

func errAt(n *yaml.Node, format string, a ...any) *posError {
	return &posError{Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, a...)}
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseDocument reads exactly one YAML document and returns its top-level
// mapping node. Syntax errors come back as "line N: ..." posErrors.
func parseDocument(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &posError{Line: 1, Col: 1, Msg: "empty profile; write at least a description and one of sysctl, limits, systemd, reserve_ports"}
		}
		msg := err.Error()
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			line, _ := strconv.Atoi(m[1])
			if tl, tc, ok := indentTab(data, line); ok && (strings.Contains(m[2], "tab") || strings.Contains(m[2], "cannot start any token")) {
				return nil, &posError{Line: tl, Col: tc, Msg: fmt.Sprintf("line %d: tab character: YAML indents with spaces only; replace the tab with spaces", tl)}
			}
			return nil, syntaxError(data, msg, line, m[2])
		}
		return nil, &posError{Line: 1, Col: 1, Msg: "YAML syntax: " + strings.TrimPrefix(msg, "yaml: ")}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		line := 1
		if err == nil {
			line = extra.Line
		}
		return nil, &posError{Line: line, Col: 1, Msg: "more than one YAML document (---); put one profile per file and compose them with include:"}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, &posError{Line: 1, Col: 1, Msg: "empty profile; write at least a description and one of sysctl, limits, systemd, reserve_ports"}
	}
	root := doc.Content[0]
	if isNull(root) {
		return nil, &posError{Line: 1, Col: 1, Msg: "empty profile; write at least a description and one of sysctl, limits, systemd, reserve_ports"}
	}
	if root.Kind != yaml.MappingNode {
		return nil, errAt(root, "want a mapping of profile fields (%s), got %s", strings.Join(fieldNames(profileType), ", "), kindName(root))
	}
	return root, nil
}

// syntaxScanLines is how many lines syntaxError parses, at most, to find
// the line a YAML syntax error is at (profiles are a few dozen lines).
const syntaxScanLines = 500

// syntaxScanBytes bounds the text syntaxError parses in all, so that a
// large file given by mistake is not parsed hundreds of times.
const syntaxScanBytes = 8 << 20

// syntaxError places a YAML syntax error and says how to fix it. yaml.v3
// reports the line where the enclosing block began (one before it, for a
// block mapping), not the line that broke it: a key indented one space
// too far on line 4 of a mapping that starts on line 2 is "line 1: did
// not find expected key". The line that broke it is the first line whose
// end makes the text before it fail with the same error; when it is not
// found within syntaxScanLines lines (and syntaxScanBytes), the error says "near" yaml.v3's line.
func syntaxError(data []byte, full string, line int, problem string) *posError {
	fix := syntaxFix(problem)
	lines := bytes.SplitAfter(data, []byte("\n"))
	budget := syntaxScanBytes
	for k := max(line, 1); k <= len(lines) && k < line+syntaxScanLines && budget > 0; k++ {
		prefix := bytes.Join(lines[:k], nil)
		budget -= len(prefix)
		var n yaml.Node
		err := yaml.NewDecoder(bytes.NewReader(prefix)).Decode(&n)
		if err != nil && err.Error() == full {
			col := len(lines[k-1]) - len(bytes.TrimLeft(lines[k-1], " ")) + 1
			return &posError{Line: k, Col: col, Msg: fmt.Sprintf("YAML syntax: %s; %s", problem, fix)}
		}
	}
	return &posError{Line: max(line, 1), Col: 1, Msg: fmt.Sprintf("YAML syntax near line %d: %s; %s", max(line, 1), problem, fix)}
}

// syntaxFix says how to fix a YAML syntax error yaml.v3 describes as
// problem.
func syntaxFix(problem string) string {
	switch {
	case strings.Contains(problem, "did not find expected key"):
		return "check the indentation: the keys of one mapping start in the same column, with spaces only"
	case strings.Contains(problem, "expected '-' indicator"):
		return "check the indentation: the items of a list start with \"- \" in the same column, and a key after them goes one level out"
	case strings.Contains(problem, "expected ',' or"):
		return "close the [ or { opened on this line, and separate its items with commas"
	case strings.Contains(problem, "end of stream"):
		return "close the quote or bracket opened on this line"
	case strings.Contains(problem, "mapping values are not allowed"):
		return "quote a value that holds \": \", or put the key on a line of its own"
	}
	return "check the indentation (spaces only, the keys of one mapping in the same column), quotes and brackets"
}

// indentTab finds the tab behind a YAML syntax error reported at line
// errLine (1-based): a tab in the indentation of that line (white space
// and "- " sequence markers), else of the next line (yaml.v3 reports
// "found a tab character that violates indentation" at the line before).
// yaml.v3 reports most such tabs only as "found character that cannot
// start any token". It returns the line and column (1-based) of the tab.
func indentTab(data []byte, errLine int) (line, col int, ok bool) {
	lines := strings.Split(string(data), "\n")
	at := func(l int) (int, bool) {
		if l < 1 || l > len(lines) {
			return 0, false
		}
		text := lines[l-1]
		lead := text[:len(text)-len(strings.TrimLeft(text, " \t-"))]
		i := strings.IndexByte(lead, '\t')
		return i + 1, i >= 0
	}
	for _, l := range []int{errLine, errLine + 1} {
		if c, ok := at(l); ok {
			return l, c, true
		}
	}
	return 0, 0, false
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// isEmpty reports a value that sets nothing: null, an empty list, or a
// mapping whose every value is empty.
func isEmpty(n *yaml.Node) bool {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			if !isEmpty(n.Content[i]) {
				return false
			}
		}
		return true
	case yaml.SequenceNode:
		return len(n.Content) == 0
	}
	return isNull(n)
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		// The text itself is never echoed: a file given as a profile by
		// mistake (an .env file, /etc/shadow) would print its secrets.
		switch n.ShortTag() {
		case "!!null":
			return "nothing"
		case "!!int", "!!float":
			return "a number"
		case "!!bool":
			return "true or false"
		}
		return "a text value (not shown)"
	}
	return "something else"
}

// maxEcho is the most characters of a key or value an error message
// repeats from the file.
const maxEcho = 40

var echoNameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.\-/]*$`)

// keyName returns a quoted key for an error message when k looks like a
// field or sysctl name (letters, digits, _ . - /), cut to maxEcho
// characters; anything else, which may be a line of a file given by
// mistake, is described by its length only.
func keyName(k string) string {
	if !echoNameRE.MatchString(k) {
		return bareName(k)
	}
	return strconv.Quote(bareName(k))
}

// bareName is keyName without the quotes, for a key (sysctl name, alias
// name) shown as it is written.
func bareName(k string) string {
	if !echoNameRE.MatchString(k) {
		return fmt.Sprintf("(a key that is not a name, %s, not shown)", plural.N(len([]rune(k)), "character"))
	}
	return clip(k)
}

// valueText returns a quoted scalar value of a known key for an error
// message: one line, cut to maxEcho characters.
func valueText(v string) string {
	v = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, v)
	return strconv.Quote(clip(v))
}

func clip(s string) string {
	if r := []rune(s); len(r) > maxEcho {
		return string(r[:maxEcho]) + "…"
	}
	return s
}

var (
	profileType  = reflect.TypeOf(Profile{})
	sysctlType   = reflect.TypeOf(Sysctl{})
	durationType = reflect.TypeOf(time.Duration(0))
)

// fieldNames lists the YAML names of a struct's exported fields.
func fieldNames(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		if name, ok := yamlName(t.Field(i)); ok {
			names = append(names, name)
		}
	}
	return names
}

func yamlName(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get("yaml")
	if tag == "-" {
		return "", false
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, true
}

func fieldByYAML(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if n, ok := yamlName(f); ok && n == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// checkSchema walks n against the Go type t strictly: unknown fields,
// duplicate keys, wrong kinds (a list where a number belongs) and scalars
// that do not convert (an int field given "abc", a duration given 5) are
// posErrors at the offending node. Aliases are refused, which also keeps
// recursive YAML out.
func checkSchema(n *yaml.Node, t reflect.Type, path []string) error {
	if n.Kind == yaml.AliasNode {
		return errAt(n, "%s: YAML alias *%s is not supported in profiles; repeat the value or compose profiles with include:", displayPath(path), bareName(n.Value))
	}
	if t == sysctlType {
		_, err := parseSysctlNode(n)
		if err != nil {
			err.Msg = displaySysctl(path) + ": " + err.Msg
			return err
		}
		return nil
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isNull(n) && (t.Kind() == reflect.Struct || t.Kind() == reflect.Map || t.Kind() == reflect.Slice) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		return checkStruct(n, t, path)
	case reflect.Map:
		return checkMap(n, t, path)
	case reflect.Slice:
		return checkList(n, t, path)
	}
	return checkScalar(n, t, path)
}

// checkStruct checks a mapping against struct t: known field names, none
// twice, each field's value against its type. It goes on past a bad field,
// so every problem of the mapping is in the (joined) error.
func checkStruct(n *yaml.Node, t reflect.Type, path []string) error {
	if n.Kind != yaml.MappingNode {
		return errAt(n, "%s: want a mapping with fields %s, got %s", nameOr(path, "profile"), strings.Join(fieldNames(t), ", "), kindName(n))
	}
	var errs []error
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			errs = append(errs, errAt(k, "%s: want a field name, got %s", nameOr(path, "profile"), kindName(k)))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			errs = append(errs, errAt(k, "field %s given twice (first at line %d); keep one", keyName(displayPath(append(slices.Clone(path), k.Value))), first))
			continue
		}
		seen[k.Value] = k.Line
		f, ok := fieldByYAML(t, k.Value)
		if !ok {
			errs = append(errs, errAt(k, "unknown field %s in %s; known fields: %s", keyName(k.Value), nameOr(path, "profile"), strings.Join(fieldNames(t), ", ")))
			continue
		}
		errs = append(errs, checkSchema(v, f.Type, append(slices.Clone(path), k.Value)))
	}
	return errors.Join(errs...)
}

// checkMap checks a mapping of key: value against map t: at most
// MaxSysctlKeys keys, none twice, each value against t's element; every
// problem is in the (joined) error.
func checkMap(n *yaml.Node, t reflect.Type, path []string) error {
	if n.Kind != yaml.MappingNode {
		return errAt(n, "%s: want a mapping of key: value, got %s", displayPath(path), kindName(n))
	}
	if k := len(n.Content) / 2; k > MaxSysctlKeys {
		return errAt(n, "%s: %s, more than the limit of %d (a whole /proc/sys has about 1500); keep the keys this host needs", displayPath(path), plural.N(k, "key"), MaxSysctlKeys)
	}
	var errs []error
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || isNull(k) {
			errs = append(errs, errAt(k, "%s: want a key such as net.core.somaxconn, got %s", displayPath(path), kindName(k)))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			errs = append(errs, errAt(k, "%s: key %s given twice (first at line %d); keep one", displayPath(path), keyName(k.Value), first))
			continue
		}
		seen[k.Value] = k.Line
		errs = append(errs, checkSchema(v, t.Elem(), append(slices.Clone(path), k.Value)))
	}
	return errors.Join(errs...)
}

// checkList checks a sequence against slice t: at most MaxListItems
// items, each against t's element.
func checkList(n *yaml.Node, t reflect.Type, path []string) error {
	if n.Kind != yaml.SequenceNode {
		return errAt(n, "%s: want a list such as [a, b], got %s", displayPath(path), kindName(n))
	}
	if len(n.Content) > MaxListItems {
		return errAt(n, "%s: %s, more than the limit of %d", displayPath(path), plural.N(len(n.Content), "item"), MaxListItems)
	}
	var errs []error
	for i, item := range n.Content {
		errs = append(errs, checkSchema(item, t.Elem(), append(slices.Clone(path), strconv.Itoa(i))))
	}
	return errors.Join(errs...)
}

// posErrors flattens checkSchema's joined error into its problems, in
// document order; nil for an error that is not (or holds no) posError.
func posErrors(err error) []*posError {
	var pe *posError
	if errors.As(err, &pe) && err == error(pe) {
		return []*posError{pe}
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return nil
	}
	var out []*posError
	for _, e := range j.Unwrap() {
		out = append(out, posErrors(e)...)
	}
	return out
}

// checkScalar checks a scalar field of type t (string, bool, number).
func checkScalar(n *yaml.Node, t reflect.Type, path []string) error {
	// A scalar field.
	if n.Kind != yaml.ScalarNode {
		return errAt(n, "%s: want %s, got %s", displayPath(path), scalarWant(t), kindName(n))
	}
	if isNull(n) {
		return nil
	}
	if t.Kind() == reflect.String {
		// yaml.v3 turns any scalar into a string; only refuse what is
		// surely a mistake.
		return nil
	}
	if t.Kind() == reflect.Bool && n.ShortTag() != "!!bool" {
		return errAt(n, "%s: %s is not true or false", displayPath(path), valueText(n.Value))
	}
	v := reflect.New(t)
	if err := n.Decode(v.Interface()); err != nil {
		return errAt(n, "%s: %s is not %s", displayPath(path), valueText(n.Value), scalarWant(t))
	}
	if isPlainInt(t) && !decimalRE.MatchString(n.Value) {
		// yaml.v3 also reads 0x400, 0o1000, 1_024 and 1024.0 into an
		// integer field: a typo (0o1000 is 512) would pass unseen.
		return errAt(n, "%s: %s: write a whole number in decimal digits (no 0x, 0o, _, leading 0 or fraction)", displayPath(path), valueText(n.Value))
	}
	return nil
}

// decimalRE is an integer as a profile writes it.
var decimalRE = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// isPlainInt says whether t is an integer field yaml.v3 decodes itself
// (not time.Duration, not a type with its own UnmarshalYAML).
func isPlainInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
	default:
		return false
	}
	return t != durationType && !reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]())
}

func nameOr(path []string, def string) string {
	if len(path) == 0 {
		return def
	}
	return displayPath(path)
}

func displaySysctl(path []string) string {
	if len(path) == 2 && path[0] == "sysctl" {
		return path[1]
	}
	return displayPath(path)
}

func scalarWant(t reflect.Type) string {
	if t == durationType {
		return `a duration such as "500ms", "5s" or "1m"`
	}
	if t == reflect.TypeFor[rate.PerSecond]() {
		return rate.Want
	}
	if t == reflect.TypeFor[TasksMax]() {
		return TasksMaxWant
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number >= 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a single value"
}

// sysctlFields are the fields of the mapping form of a sysctl entry.
var sysctlFields = []string{"value", "mode", "optional", "if_refused", "comment"}

// parseSysctlNode reads a sysctl entry: a bare scalar (mode exact) or a
// mapping {value, mode, optional, if_refused, comment}.
func parseSysctlNode(n *yaml.Node) (Sysctl, *posError) {
	switch n.Kind {
	case yaml.ScalarNode:
		v, err := sysctlValue(n)
		if err != nil {
			return Sysctl{}, err
		}
		return Sysctl{Value: v, Mode: Exact}, nil
	case yaml.MappingNode:
		s := Sysctl{Mode: Exact}
		seen := map[string]int{}
		hasValue := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return Sysctl{}, errAt(k, "want a field name (%s), got %s", strings.Join(sysctlFields, ", "), kindName(k))
			}
			if first, dup := seen[k.Value]; dup {
				return Sysctl{}, errAt(k, "field %s given twice (first at line %d); keep one", keyName(k.Value), first)
			}
			seen[k.Value] = k.Line
			if v.Kind == yaml.AliasNode {
				return Sysctl{}, errAt(v, "YAML alias *%s is not supported in profiles; repeat the value", bareName(v.Value))
			}
			switch k.Value {
			case "value":
				val, err := sysctlValue(v)
				if err != nil {
					return Sysctl{}, err
				}
				s.Value, hasValue = val, true
			case "mode":
				if v.Kind != yaml.ScalarNode || isNull(v) {
					return Sysctl{}, errAt(v, "mode: want exact, at-least or at-most, got %s", kindName(v))
				}
				m := Mode(v.Value)
				if !m.valid() {
					return Sysctl{}, errAt(v, "mode %s: want exact, at-least or at-most", valueText(v.Value))
				}
				s.Mode = m
			case "optional":
				if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!bool" {
					return Sysctl{}, errAt(v, "optional: want true or false, got %s", kindName(v))
				}
				s.Optional = v.Value == "true"
				_ = v.Decode(&s.Optional)
			case "if_refused":
				if v.Kind != yaml.ScalarNode || isNull(v) {
					return Sysctl{}, errAt(v, "if_refused: want error or nearest, got %s", kindName(v))
				}
				r := Refusal(v.Value)
				if r != RefusedError && r != RefusedNearest {
					return Sysctl{}, errAt(v, "if_refused %s: want error (stop with exit 2) or nearest (use the nearest value the kernel accepts)", valueText(v.Value))
				}
				s.IfRefused = r
			case "comment":
				if v.Kind != yaml.ScalarNode {
					return Sysctl{}, errAt(v, "comment: want a string, got %s", kindName(v))
				}
				s.Comment = strings.TrimSpace(v.Value)
			default:
				return Sysctl{}, errAt(k, "unknown field %s; known fields: %s", keyName(k.Value), strings.Join(sysctlFields, ", "))
			}
		}
		if !hasValue {
			return Sysctl{}, errAt(n, `no value; write {value: "...", mode: ...} or just the value as the kernel prints it`)
		}
		return s, nil
	case yaml.AliasNode:
		return Sysctl{}, errAt(n, "YAML alias *%s is not supported in profiles; repeat the value", bareName(n.Value))
	}
	return Sysctl{}, errAt(n, `want the value as the kernel prints it ("32768", "1024 65535") or a mapping {value, mode, optional, if_refused, comment}, got %s`, kindName(n))
}

func sysctlValue(n *yaml.Node) (string, *posError) {
	if n.Kind != yaml.ScalarNode {
		return "", errAt(n, `want the value as the kernel prints it ("32768", "1024 65535"), got %s`, kindName(n))
	}
	switch n.ShortTag() {
	case "!!null":
		return "", errAt(n, `no value; write it as the kernel prints it, e.g. "32768" (use "" for an empty value)`)
	case "!!bool", "!!float":
		return "", errAt(n, `%s is not a value the kernel prints; quote the exact text, e.g. "1"`, valueText(n.Value))
	}
	v := strings.TrimSpace(n.Value)
	if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
		return "", errAt(n, "%s: a sysctl value is one line of text; separate the fields of multi-value keys with spaces", valueText(n.Value))
	}
	return v, nil
}

func (m Mode) valid() bool { return m == "" || m == Exact || m == AtLeast || m == AtMost }

// UnmarshalYAML reads a sysctl entry from either form: a bare scalar
// ("32768", mode exact) or a mapping {value, mode, optional, if_refused, comment}.
// Unknown fields, a missing value and an unknown mode are errors.
func (s *Sysctl) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseSysctlNode(n)
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// MarshalYAML writes the short form (a bare string) when the entry is
// just a value with mode exact, the mapping form otherwise.
func (s Sysctl) MarshalYAML() (any, error) {
	if (s.Mode == "" || s.Mode == Exact) && !s.Optional && (s.IfRefused == "" || s.IfRefused == RefusedError) && s.Comment == "" {
		return s.Value, nil
	}
	type plain Sysctl // no MarshalYAML: avoids recursion
	return plain(s), nil
}

// isSysctlEntry reports whether path points at one entry of the sysctl
// map, which merges as a whole.
func isSysctlEntry(path []string) bool { return len(path) == 2 && path[0] == "sysctl" }

// mergeNodes merges over onto base: mappings field by field (recursively),
// except a sysctl entry, which is replaced whole; lists and scalars are
// replaced; an empty (null) value in over does not override base.
func mergeNodes(base, over *yaml.Node, path []string, nodeFile map[*yaml.Node]string) *yaml.Node {
	if base == nil || isNull(over) {
		if base == nil {
			return over
		}
		return base
	}
	if base.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode || isSysctlEntry(path) {
		return over
	}
	out := *over
	out.Content = nil
	nodeFile[&out] = nodeFile[over]
	index := map[string]int{}
	for i := 0; i+1 < len(base.Content); i += 2 {
		index[base.Content[i].Value] = len(out.Content)
		out.Content = append(out.Content, base.Content[i], base.Content[i+1])
	}
	for i := 0; i+1 < len(over.Content); i += 2 {
		k, v := over.Content[i], over.Content[i+1]
		if j, ok := index[k.Value]; ok {
			out.Content[j] = k
			out.Content[j+1] = mergeNodes(out.Content[j+1], v, append(slices.Clone(path), k.Value), nodeFile)
			continue
		}
		index[k.Value] = len(out.Content)
		out.Content = append(out.Content, k, v)
	}
	return &out
}

// dropKeys returns a copy of mapping n without the given top-level keys.
func dropKeys(n *yaml.Node, keys ...string) *yaml.Node {
	out := *n
	out.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		if slices.Contains(keys, n.Content[i].Value) {
			continue
		}
		out.Content = append(out.Content, n.Content[i], n.Content[i+1])
	}
	return &out
}

// lookup returns the value node of key in mapping n, or nil.
func lookup(n *yaml.Node, key string) (k, v *yaml.Node) {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i], n.Content[i+1]
		}
	}
	return nil, nil
}

// recordFiles notes which file every node of a document came from.
func recordFiles(n *yaml.Node, file string, nodeFile map[*yaml.Node]string) {
	nodeFile[n] = file
	for _, c := range n.Content {
		recordFiles(c, file, nodeFile)
	}
}

// recordPositions fills src with the position of every value in the
// merged tree n. An empty value (a section with nothing under it,
// "thresholds:", or with only empty keys under it) is not recorded: it
// means the same as an absent key, as in the merge, so a profile and its
// rendering agree on what was given.
func recordPositions(n *yaml.Node, path []string, nodeFile map[*yaml.Node]string, src *sources) {
	pos := func(x *yaml.Node) srcPos { return srcPos{File: nodeFile[x], Line: x.Line, Col: x.Column} }
	if isEmpty(n) && !isSysctlEntry(path) && (len(path) == 0 || path[0] != "sysctl") {
		return
	}
	if len(path) > 0 {
		src.set(pos(n), path...)
	}
	if isSysctlEntry(path) {
		if n.Kind == yaml.ScalarNode {
			src.set(pos(n), append(slices.Clone(path), "value")...)
		}
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := append(slices.Clone(path), k.Value)
			if len(path) == 1 && path[0] == "sysctl" {
				// The entry itself points at its key; its value at the value.
				src.set(pos(k), p...)
				recordPositions(v, p, nodeFile, src)
				src.set(pos(k), p...)
				continue
			}
			recordPositions(v, p, nodeFile, src)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			recordPositions(c, append(slices.Clone(path), strconv.Itoa(i)), nodeFile, src)
		}
	}
}
