// Package profiles defines hostprep's tuning profiles: the YAML format,
// the built-in profiles, includes, --set overrides and the validation that
// needs no host.
package profiles

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/hostprep/hostprep/internal/atomicfile"
	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
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
	return LoadWith(ref, sets, nil)
}

// LoadWith is Load with command-line flags that set profile fields
// (--sockets, --role, --conn-rate of preflight and ready), applied after
// the sets: a flag given explicitly overrides the profile and its --set.
// A value that breaks a rule is reported naming the flag.
func LoadWith(ref string, sets []string, flags []Override) (*Profile, error) {
	p, err := load(ref, true)
	if err != nil {
		return nil, err
	}
	if err := ApplySets(p, sets); err != nil {
		return nil, err
	}
	p.Sets = slices.Clone(sets)
	for _, o := range flags {
		if err := p.applyOverride(o); err != nil {
			return nil, err
		}
	}
	p.defaults()
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}

// defaults fills what a profile may leave out and has a default: a
// preflight section without role is a broker's, as `hostprep preflight`
// without --role is. A role written empty (`role: ""`) is still refused.
func (p *Profile) defaults() {
	if p.Preflight == nil || p.Preflight.Role != "" {
		return
	}
	if p.src != nil {
		if _, given := p.src.pos[pathKey("preflight", "role")]; given {
			return
		}
	}
	p.Preflight.Role = DefaultRole
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
	if len(data) > MaxFileBytes {
		return nil, exitcode.BadInputf("profile %s: %s, larger than the %d MiB limit for a profile file (profiles are a few KiB)", name, plural.N(len(data), "byte"), MaxFileBytes>>20)
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
	p.defaults()
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
	p, err := l.finish(root, name)
	if err == nil && allowFiles {
		p.Source = ref
		if !IsBuiltin(ref) {
			if abs, aerr := filepath.Abs(ref); aerr == nil {
				p.Source = abs
			}
		}
	}
	return p, err
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

// Limits on what a profile may make hostprep read. A real profile is a
// few KiB with tens of keys; the limits stop a wrong path (/dev/zero, a
// log file) or a generated file from eating memory and time.
const (
	// MaxFileBytes is the largest profile file read, in bytes (1 MiB).
	MaxFileBytes = 1 << 20
	// MaxTotalBytes bounds the bytes read for one Load, the file and all
	// its includes together (4 MiB).
	MaxTotalBytes = 4 << 20
	// MaxSysctlKeys bounds the sysctl entries of a profile; a whole
	// /proc/sys has about 1500 keys.
	MaxSysctlKeys = 10000
	// MaxListItems bounds any list (reserve_ports, services, ...); 65536
	// holds every port.
	MaxListItems = 65536
)

// readProfileFile reads a profile file: it must be a regular file (not a
// device such as /dev/zero, a FIFO or a directory) of at most
// MaxFileBytes. It opens with O_NONBLOCK so a FIFO cannot block the open
// before the check.
func readProfileFile(file string) ([]byte, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s); a profile is a YAML file", atomicfile.Kind(st.Mode()))
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s, larger than the %d MiB limit for a profile file (profiles are a few KiB)", plural.N(st.Size(), "byte"), MaxFileBytes>>20)
	}
	// The size can change between Stat and Read (a file still being
	// written); read at most one byte past the limit to notice.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("larger than the %d MiB limit for a profile file (profiles are a few KiB)", MaxFileBytes>>20)
	}
	return data, nil
}

type loader struct {
	total      int // bytes read so far, bounded by MaxTotalBytes
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
	data, err := readProfileFile(file)
	if err == nil && l.total+len(data) > MaxTotalBytes {
		err = fmt.Errorf("the profile and its includes exceed %d MiB together (the limit for one Load); include fewer or smaller profiles", MaxTotalBytes>>20)
	}
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
	l.total += len(data)
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
		pes := posErrors(err)
		if len(pes) == 0 {
			return nil, exitcode.BadInputf("%s: %v", file, err)
		}
		ve := &ValidationError{}
		for _, pe := range pes {
			ve.Problems = append(ve.Problems, fmt.Sprintf("%s:%d:%d: %s", file, pe.Line, pe.Col, pe.Msg))
		}
		return nil, exitcode.New(exitcode.BadInput, ve)
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
	// checkSchema; both should agree. The sysctl map is decoded here
	// entry by entry: yaml.v3 checks a mapping for duplicate keys by
	// comparing every pair, quadratic in the number of keys (20000 keys
	// took 1 s), while checkSchema and mergeNodes already guarantee each
	// key appears once.
	_, sysctlNode := lookup(root, "sysctl")
	data, err := yaml.Marshal(dropKeys(root, "sysctl"))
	if err != nil {
		return nil, exitcode.BadInputf("profile %s: %v", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, exitcode.BadInputf("profile %s: %s", name, strings.ReplaceAll(err.Error(), "\n", " "))
	}
	if sysctlNode != nil && sysctlNode.Kind == yaml.MappingNode {
		if n := len(sysctlNode.Content) / 2; n > MaxSysctlKeys {
			return nil, exitcode.BadInputf("%s:%d:%d: sysctl: %s with its includes, more than the limit of %d (a whole /proc/sys has about 1500); keep the keys this host needs",
				l.nodeFile[sysctlNode], sysctlNode.Line, sysctlNode.Column, plural.N(n, "key"), MaxSysctlKeys)
		}
		p.Sysctl = make(map[string]Sysctl, len(sysctlNode.Content)/2)
		for i := 0; i+1 < len(sysctlNode.Content); i += 2 {
			k, v := sysctlNode.Content[i], sysctlNode.Content[i+1]
			if isNull(v) {
				continue
			}
			s, perr := parseSysctlNode(v)
			if perr != nil {
				return nil, exitcode.BadInputf("%s:%d:%d: %s: %s", l.nodeFile[v], perr.Line, perr.Col, bareName(k.Value), perr.Msg)
			}
			p.Sysctl[k.Value] = s
		}
	}
	p.src = src
	if p.Probe.MQTT != nil {
		p.Probe.MQTT.given = src.givenUnder("probe", "mqtt")
	}
	if p.Probe.IoTDB != nil {
		p.Probe.IoTDB.given = src.givenUnder("probe", "iotdb")
	}
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
