// Package profiles defines hostprep's tuning profiles: the YAML format,
// the built-in profiles, includes, --set overrides and the validation that
// needs no host.
package profiles

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"gopkg.in/yaml.v3"
)

//go:embed builtin/*.yaml
var builtinFS embed.FS

// BuiltinNames lists the embedded profiles, sorted.
func BuiltinNames() []string {
	entries, _ := fs.ReadDir(builtinFS, "builtin")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// IsBuiltin reports whether name is an embedded profile.
func IsBuiltin(name string) bool { return slices.Contains(BuiltinNames(), name) }

// Builtin returns the raw YAML of the embedded profile name, comments
// included, as `hostprep profiles show --raw` prints it. An unknown name is
// an exitcode.BadInput error listing the built-ins.
func Builtin(name string) ([]byte, error) {
	if !IsBuiltin(name) {
		return nil, exitcode.BadInputf("profile %q is not a built-in; built-ins: %s (or give a path to a YAML file)", name, strings.Join(BuiltinNames(), ", "))
	}
	return builtinFS.ReadFile("builtin/" + name + ".yaml")
}

// builtinFile is how a built-in is named in error messages.
func builtinFile(name string) string { return "builtin/" + name + ".yaml" }

// maxIncludeDepth bounds include chains (cycles are caught separately).
const maxIncludeDepth = 16

// Load resolves ref — a built-in name (see BuiltinNames) or a path to a
// YAML file — follows its includes, applies sets ("key=value" overrides,
// see ApplySets) and validates the result without looking at the host.
//
// A ref is a built-in when it names one; otherwise it is a file path.
// Includes in a file are built-in names or paths relative to that file.
// The resolved profile has Include cleared, Name set (the built-in name, the
// file's `name:`, or its base name without extension) and every sysctl
// Mode set (exact when the file left it out).
//
// Every error is an exitcode.BadInput error of one line naming the file,
// line and column (or the --set argument), the value, the rule and the fix.
func Load(ref string, sets []string) (*Profile, error) {
	p, err := load(ref, true)
	if err != nil {
		return nil, err
	}
	if err := ApplySets(p, sets); err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// Parse reads one profile from data; name labels it in errors (use the
// file name, e.g. "profile.yaml") and gives the profile its Name. Includes
// may only name built-ins (Load also resolves files). The result is
// validated like Load's; no sets are applied (call ApplySets and Validate
// for those).
func Parse(name string, data []byte) (*Profile, error) {
	if name == "" {
		name = "profile.yaml"
	}
	l := &loader{nodeFile: map[*yaml.Node]string{}}
	root, err := l.resolveData(name, "", data, false, nil)
	if err != nil {
		return nil, err
	}
	p, err := l.finish(root, profileNameOf(name))
	if err != nil {
		return nil, err
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

func load(ref string, allowFiles bool) (*Profile, error) {
	if ref == "" {
		return nil, exitcode.BadInputf("no profile given; use a built-in (%s) or a path to a YAML file", strings.Join(BuiltinNames(), ", "))
	}
	l := &loader{nodeFile: map[*yaml.Node]string{}, allowFiles: allowFiles}
	var root *yaml.Node
	var err error
	name := profileNameOf(ref)
	if IsBuiltin(ref) {
		root, err = l.resolveBuiltin(ref, nil)
		name = ref
	} else {
		if !looksLikePath(ref) {
			if _, statErr := os.Stat(ref); statErr != nil {
				return nil, exitcode.BadInputf("profile %q: not a built-in (%s) and no such file; run `hostprep profiles list` or give a path to a YAML file", ref, strings.Join(BuiltinNames(), ", "))
			}
		}
		root, err = l.resolveFile(ref, nil)
	}
	if err != nil {
		return nil, err
	}
	return l.finish(root, name)
}

func looksLikePath(ref string) bool {
	return strings.ContainsRune(ref, '/') || strings.HasSuffix(ref, ".yaml") || strings.HasSuffix(ref, ".yml")
}

// profileNameOf is a file's base name without extension, made a valid
// profile name by SafeName ("my broker.yaml" -> "my-broker").
func profileNameOf(file string) string {
	base := filepath.Base(file)
	for _, ext := range []string{".yaml", ".yml"} {
		if n, ok := strings.CutSuffix(base, ext); ok {
			return SafeName(n)
		}
	}
	return SafeName(base)
}

type loader struct {
	nodeFile   map[*yaml.Node]string
	allowFiles bool
	stack      []string // canonical ids of the profiles being resolved
	shown      []string // their display names, for cycle messages
}

// include is one include: reference with the node it was written at.
type include struct {
	ref  string
	node *yaml.Node
	file string
}

func (l *loader) resolveBuiltin(name string, from *include) (*yaml.Node, error) {
	data, err := builtinFS.ReadFile("builtin/" + name + ".yaml")
	if err != nil {
		return nil, l.errInclude(from, "%q is not a built-in profile; built-ins: %s", name, strings.Join(BuiltinNames(), ", "))
	}
	return l.resolveData(builtinFile(name), "builtin:"+name, data, true, from)
}

func (l *loader) resolveFile(file string, from *include) (*yaml.Node, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		reason := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		if from == nil {
			return nil, exitcode.BadInputf("profile %s: %s; give a built-in name (%s) or the path of a YAML file", file, reason, strings.Join(BuiltinNames(), ", "))
		}
		return nil, l.errInclude(from, "include %q: %s (%s); paths are relative to the including file", from.ref, file, reason)
	}
	id, err := filepath.Abs(file)
	if err != nil {
		id = file
	}
	return l.resolveData(file, filepath.Clean(id), data, false, from)
}

func (l *loader) errInclude(from *include, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if from == nil {
		return exitcode.BadInputf("%s", msg)
	}
	return exitcode.BadInputf("%s:%d:%d: %s", from.file, from.node.Line, from.node.Column, msg)
}

// resolveData parses one document, resolves its includes and returns the
// merged mapping (includes first, in order, then the document itself).
// id is the canonical identity used for cycle detection ("" for Parse's
// data, which nothing can include).
func (l *loader) resolveData(file, id string, data []byte, isBuiltin bool, from *include) (*yaml.Node, error) {
	if id != "" {
		if i := slices.Index(l.stack, id); i >= 0 {
			chain := append(slices.Clone(l.shown[i:]), file)
			return nil, l.errInclude(from, "include cycle: %s; remove one of these includes", strings.Join(chain, " -> "))
		}
	}
	if len(l.stack) >= maxIncludeDepth {
		return nil, l.errInclude(from, "includes nested deeper than %d; flatten the chain", maxIncludeDepth)
	}
	root, err := parseDocument(data)
	if err == nil {
		err = checkSchema(root, profileType, nil)
	}
	if err != nil {
		var pe *posError
		if errors.As(err, &pe) {
			return nil, exitcode.BadInputf("%s:%d:%d: %s", file, pe.Line, pe.Col, pe.Msg)
		}
		return nil, exitcode.BadInputf("%s: %v", file, err)
	}
	recordFiles(root, file, l.nodeFile)

	l.stack = append(l.stack, id)
	l.shown = append(l.shown, file)
	defer func() {
		l.stack = l.stack[:len(l.stack)-1]
		l.shown = l.shown[:len(l.shown)-1]
	}()

	var base *yaml.Node
	if _, incs := lookup(root, "include"); incs != nil && incs.Kind == yaml.SequenceNode {
		for _, n := range incs.Content {
			inc := &include{ref: n.Value, node: n, file: file}
			if strings.TrimSpace(inc.ref) == "" {
				return nil, l.errInclude(inc, "include: empty entry; give a built-in name or a path")
			}
			var child *yaml.Node
			switch {
			case IsBuiltin(inc.ref) && !looksLikePath(inc.ref):
				child, err = l.resolveBuiltin(inc.ref, inc)
			case isBuiltin:
				return nil, l.errInclude(inc, "include %q: a built-in profile can only include built-ins (%s)", inc.ref, strings.Join(BuiltinNames(), ", "))
			case !l.allowFiles:
				return nil, l.errInclude(inc, "include %q: not a built-in (%s); file includes are resolved by Load, not Parse", inc.ref, strings.Join(BuiltinNames(), ", "))
			default:
				p := inc.ref
				if !filepath.IsAbs(p) {
					p = filepath.Join(filepath.Dir(file), p)
				}
				child, err = l.resolveFile(p, inc)
			}
			if err != nil {
				return nil, err
			}
			// An included profile's name and includes are its own.
			base = mergeNodes(base, dropKeys(child, "name", "include"), nil, l.nodeFile)
		}
	}
	return mergeNodes(base, dropKeys(root, "include"), nil, l.nodeFile), nil
}

// finish decodes the merged tree into a Profile and records positions.
func (l *loader) finish(root *yaml.Node, name string) (*Profile, error) {
	src := &sources{}
	recordPositions(root, nil, l.nodeFile, src)
	// Decode through a strict Decoder as a second line of defence behind
	// checkSchema; both should agree.
	data, err := yaml.Marshal(root)
	if err != nil {
		return nil, exitcode.BadInputf("profile %s: %v", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, exitcode.BadInputf("profile %s: %s", name, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	p.src = src
	p.Include = nil
	normalizeEmpty(&p)
	p.Name = strings.TrimSpace(p.Name)
	p.Description = strings.TrimSpace(p.Description)
	if p.Name == "" {
		p.Name = name
	}
	for k, s := range p.Sysctl {
		if s.Mode == "" {
			s.Mode = Exact
			p.Sysctl[k] = s
		}
	}
	return &p, nil
}

// normalizeEmpty turns explicitly empty lists (reserve_ports: []) into nil,
// which means the same, so resolved profiles compare equal.
func normalizeEmpty(p *Profile) {
	if len(p.ReservePorts) == 0 {
		p.ReservePorts = nil
	}
	if len(p.Limits.Users) == 0 {
		p.Limits.Users = nil
	}
	if len(p.Systemd.Services) == 0 {
		p.Systemd.Services = nil
	}
	if len(p.Sysctl) == 0 {
		p.Sysctl = nil
	}
	if p.Preflight != nil && len(p.Preflight.Destinations) == 0 {
		p.Preflight.Destinations = nil
	}
	if p.Probe.IoTDB != nil && len(p.Probe.IoTDB.Steps) == 0 {
		p.Probe.IoTDB.Steps = nil
	}
}
