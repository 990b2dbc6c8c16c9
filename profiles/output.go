package profiles

import (
	"bytes"
	"encoding/json"

	"gopkg.in/yaml.v3"
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

// JSONBytes renders the profile as indented JSON with the same field names
// as the YAML and durations as Go duration strings ("500ms", not
// nanoseconds); sysctl entries are always objects {value, mode, ...}.
func (p *Profile) JSONBytes() ([]byte, error) {
	type jsonSysctl struct {
		Value    string `json:"value"`
		Mode     Mode   `json:"mode"`
		Optional bool   `json:"optional,omitempty"`
		Comment  string `json:"comment,omitempty"`
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
			m[k] = jsonSysctl{s.Value, mode, s.Optional, s.Comment}
		}
		generic["sysctl"] = m
	}
	generic["name"] = p.Name
	return json.MarshalIndent(generic, "", "  ")
}
