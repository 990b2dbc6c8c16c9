package iotdb

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hostprep/hostprep/profiles"
)

// fill sets every exported field of the struct v points to (recursively)
// to a non-zero value unlike any default; it returns the dotted names of
// the leaf fields.
func fill(t *testing.T, v reflect.Value, prefix string) []string {
	t.Helper()
	var leaves []string
	typ := v.Type()
	for i := 0; i < typ.NumField(); i++ {
		f, sf := v.Field(i), typ.Field(i)
		if !sf.IsExported() {
			continue
		}
		name := prefix + sf.Name
		switch f.Kind() {
		case reflect.Struct:
			leaves = append(leaves, fill(t, f, name+".")...)
			continue
		case reflect.String:
			f.SetString("sentinel")
		case reflect.Int, reflect.Int64:
			if f.Type() == reflect.TypeOf(time.Duration(0)) {
				f.SetInt(int64(7777 * time.Millisecond))
			} else {
				f.SetInt(7777)
			}
		case reflect.Float64:
			f.SetFloat(0.7777)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Slice:
			s := reflect.MakeSlice(f.Type(), 1, 1)
			if s.Index(0).Kind() == reflect.String {
				s.Index(0).SetString("sentinel")
			} else {
				s.Index(0).SetInt(7777)
			}
			f.Set(s)
		case reflect.Map:
			m := reflect.MakeMap(f.Type())
			m.SetMapIndex(reflect.ValueOf("sentinel"), reflect.ValueOf("sentinel"))
			f.Set(m)
		case reflect.Pointer:
			p := reflect.New(f.Type().Elem())
			p.Elem().SetFloat(0.7777)
			f.Set(p)
		case reflect.Func:
			f.Set(reflect.MakeFunc(f.Type(), func([]reflect.Value) []reflect.Value { return nil }))
		case reflect.Interface:
			if f.Type() != reflect.TypeFor[context.Context]() {
				t.Fatalf("field %s of type %s: teach fill about it", name, f.Type())
			}
			f.Set(reflect.ValueOf(context.WithValue(context.Background(), fillKey{}, name)))
		default:
			t.Fatalf("field %s of kind %s: teach fill about it", name, f.Kind())
		}
		leaves = append(leaves, name)
	}
	return leaves
}

// field is the value at a dotted field name.
func field(v reflect.Value, name string) reflect.Value {
	for _, n := range strings.Split(name, ".") {
		v = v.FieldByName(n)
	}
	return v
}

// Every Config field is a setting Resolve copies: a field added to Config
// without a line in settings fails here (no path may drop it).
func TestResolveCoversEveryField(t *testing.T) {
	var src Config
	leaves := fill(t, reflect.ValueOf(&src).Elem(), "")
	got := Resolve(&Config{}, nil, &src, func(string) bool { return true })
	for _, name := range leaves {
		a, b := field(reflect.ValueOf(got), name), field(reflect.ValueOf(src), name)
		if a.Kind() == reflect.Func {
			if a.IsNil() {
				t.Errorf("Config.%s is dropped by Resolve: add it to settings (resolve.go)", name)
			}
			continue
		}
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			t.Errorf("Config.%s: resolved %v, given %v: add it to settings (resolve.go)", name, a, b)
		}
	}
}

// Every key of the profile's probe.iotdb section reaches the Config: a
// key added to profiles.IoTDBProbe that ConfigFromProfile or the settings
// table drops fails here.
func TestResolveTakesEveryProfileKey(t *testing.T) {
	var p profiles.IoTDBProbe
	fill(t, reflect.ValueOf(&p).Elem(), "")
	keys := yamlKeys(reflect.TypeOf(p), "")
	got := Resolve(&Config{}, &p, &Config{}, nil)
	for _, k := range keys {
		if !slices.Contains(SettingKeys(), k) {
			t.Errorf("profile key probe.iotdb.%s has no setting: add it to settings (resolve.go)", k)
			continue
		}
		pv, _ := profileField(reflect.ValueOf(p), k)
		var want, have Config
		for _, s := range settings {
			if s.key == k {
				s.copy(&have, &got)
			}
		}
		// The resolved value must be the profile's (not a default).
		var def Config = Defaults
		for _, s := range settings {
			if s.key == k {
				s.copy(&want, &def)
			}
		}
		if reflect.DeepEqual(have, want) {
			t.Errorf("profile key probe.iotdb.%s = %v did not reach the Config (still the default)", k, pv)
		}
	}
}

func yamlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if !t.Field(i).IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if t.Field(i).Type.Kind() == reflect.Struct && t.Field(i).Type != reflect.TypeOf(time.Duration(0)) {
			out = append(out, yamlKeys(t.Field(i).Type, prefix+tag+".")...)
			continue
		}
		out = append(out, prefix+tag)
	}
	return out
}

// Built-in defaults, then the profile, then explicitly given settings.
func TestResolveOrder(t *testing.T) {
	base := Config{PoolSize: 16, Steps: []int{1, 2}}
	p := &profiles.IoTDBProbe{PoolSize: 32, Scenario: ScenarioBatch}
	flags := Config{PoolSize: 64, Scenario: ScenarioMixed, Host: "db1"}
	given := func(k string) bool { return k == "pool_size" || k == "host" }

	got := Resolve(&base, p, &flags, given)
	if got.PoolSize != 64 || got.Scenario != ScenarioBatch || got.Host != "db1" || !slices.Equal(got.Steps, []int{1, 2}) || got.Port != Defaults.Port {
		t.Errorf("defaults+profile+flags: %+v", got)
	}
	got = Resolve(&base, p, &flags, nil)
	if got.PoolSize != 32 || got.Host != Defaults.Host {
		t.Errorf("defaults+profile: pool %d host %q, want the profile's 32 and the default host", got.PoolSize, got.Host)
	}
	got = Resolve(&base, nil, &flags, nil)
	if got.PoolSize != 16 || got.Scenario != Defaults.Scenario {
		t.Errorf("defaults: pool %d scenario %q, want the base's 16 and the default scenario", got.PoolSize, got.Scenario)
	}
	// A complete result keeps an explicit zero for Validate to reject.
	zero := Config{}
	got = Resolve(&base, nil, &zero, func(k string) bool { return k == "pool_size" })
	if got.Validate() == nil {
		t.Errorf("an explicit pool size 0 was replaced instead of rejected")
	}
}

// The error-rate threshold left out is DefaultMaxErrorRate on every path:
// probe iotdb with and without a profile (base Defaults) and ready with
// the profile's section (base empty) or its own probe: one profile is
// judged alike by probe iotdb and by ready.
func TestResolveDefaultErrorRateOnEveryPath(t *testing.T) {
	sec := &profiles.IoTDBProbe{Steps: []int{2}}
	for name, base := range map[string]*Config{"probe iotdb": &Defaults, "ready": {}, "ready's own probe": {Steps: []int{2, 4, 8}}} {
		for _, p := range []*profiles.IoTDBProbe{nil, sec} {
			got := Resolve(base, p, &Config{}, nil)
			if got.Thresholds.MaxErrorRate == nil || *got.Thresholds.MaxErrorRate != DefaultMaxErrorRate {
				t.Errorf("%s (profile section %v): max error rate %v, want %v", name, p != nil, got.Thresholds.MaxErrorRate, DefaultMaxErrorRate)
			}
		}
	}
	if Defaults.Thresholds.MaxErrorRate != nil {
		t.Errorf("Defaults holds a pointer its copies would share")
	}
}

// fillKey is the context key fill marks a context field with.
type fillKey struct{}
