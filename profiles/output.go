package profiles

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// YAMLBytes renders the profile as YAML in the format Load reads: sysctl
// entries that are a bare exact value in the short form, durations as Go
// durations ("500ms"). Loading the output gives back an equal profile.
func (p *Profile) YAMLBytes() ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MarshalYAML writes the MQTT section with every key the profile wrote,
// also at its zero value: thresholds.connect_p95: 0s means "not judged",
// and leaving it out (omitempty) would bring the default back when the
// output of `profiles show` is loaded again.
func (m MQTTProbe) MarshalYAML() (any, error) {
	type plain MQTTProbe // no MarshalYAML: avoids recursion
	return withGiven(plain(m), reflect.ValueOf(m), m.given)
}

// MarshalYAML is MQTTProbe.MarshalYAML for the IoTDB section.
func (d IoTDBProbe) MarshalYAML() (any, error) {
	type plain IoTDBProbe
	return withGiven(plain(d), reflect.ValueOf(d), d.given)
}

// withGiven encodes a probe section (plain: its type without
// MarshalYAML) and adds each key of given (dotted YAML names) whose value
// in v is zero and so was left out by omitempty.
func withGiven(plain any, v reflect.Value, given map[string]bool) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(plain); err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(given))
	for k := range given {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fv := fieldAt(v, k) // "steps.0", an item of a list written whole, has none
		if !fv.IsValid() || !fv.IsZero() || fv.Kind() == reflect.Struct || fv.Kind() == reflect.Pointer {
			continue
		}
		var val yaml.Node
		if err := val.Encode(fv.Interface()); err != nil {
			return nil, err
		}
		addMissing(&n, strings.Split(k, "."), &val)
	}
	return &n, nil
}

// addMissing puts val at path in the mapping m, making the mappings on
// the way; a key already there is kept.
func addMissing(m *yaml.Node, path []string, val *yaml.Node) {
	for i, seg := range path {
		var next *yaml.Node
		for j := 0; j+1 < len(m.Content); j += 2 {
			if m.Content[j].Value == seg {
				next = m.Content[j+1]
			}
		}
		if next == nil {
			next = val
			if i < len(path)-1 {
				next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: seg}, next)
		} else if i == len(path)-1 {
			return
		}
		m = next
	}
}

// JSONBytes renders the profile as indented JSON with the same field names
// as the YAML and durations as Go duration strings ("500ms", not
// nanoseconds); sysctl entries are always objects {value, mode, ...}.
func (p *Profile) JSONBytes() ([]byte, error) {
	type jsonSysctl struct {
		Value     string  `json:"value"`
		Mode      Mode    `json:"mode"`
		Optional  bool    `json:"optional,omitempty"`
		IfRefused Refusal `json:"if_refused,omitempty"`
		Comment   string  `json:"comment,omitempty"`
	}
	y, err := yaml.Marshal(p)
	if err != nil {
		return nil, err
	}
	var generic map[string]any
	if err := yaml.Unmarshal(y, &generic); err != nil {
		return nil, err
	}
	if len(p.Sysctl) > 0 {
		m := map[string]jsonSysctl{}
		for k, s := range p.Sysctl {
			mode := s.Mode
			if mode == "" {
				mode = Exact
			}
			m[k] = jsonSysctl{s.Value, mode, s.Optional, s.IfRefused, s.Comment}
		}
		generic["sysctl"] = m
	}
	generic["name"] = p.Name
	return json.MarshalIndent(generic, "", "  ")
}

// Summary is the first clause of the description: the text before the
// first ": " or ". ", for one-line listings.
func (p *Profile) Summary() string { return summary(p.Description) }

func summary(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	cut := len(d)
	for _, sep := range []string{": ", ". "} {
		if i := strings.Index(d, sep); i >= 0 && i < cut {
			cut = i
		}
	}
	return strings.TrimSuffix(d[:cut], ".")
}

// BuiltinInfo describes one embedded profile for `hostprep profiles list`.
type BuiltinInfo struct {
	Name        string `json:"name"`
	Summary     string `json:"summary"`
	Description string `json:"description"`
}

// Builtins loads every embedded profile and returns their names and
// descriptions, sorted by name. An error means a built-in is broken (a
// bug caught by the tests).
func Builtins() ([]BuiltinInfo, error) {
	var out []BuiltinInfo
	for _, n := range BuiltinNames() {
		p, err := Load(n, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, BuiltinInfo{Name: n, Summary: p.Summary(), Description: p.Description})
	}
	return out, nil
}

// Source returns the profile text as written: the embedded YAML of a
// built-in, or the bytes of the file ref names. Errors are
// exitcode.BadInput.
func Source(ref string) ([]byte, error) {
	if IsBuiltin(ref) {
		return Builtin(ref)
	}
	data, err := readProfileFile(ref)
	if err != nil {
		return nil, exitcode.BadInputf("profile %s: %v; give a built-in name (%s) or the path of a YAML file", ref, err, strings.Join(BuiltinNames(), ", "))
	}
	return data, nil
}
