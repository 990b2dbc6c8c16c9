package mqtt

import (
	"reflect"

	"github.com/hostprep/hostprep/profiles"
)

// Given reports whether the setting named flag (a Config field's `flag`
// tag: "clients", "max-loss", ...) was given explicitly, e.g. a cobra
// FlagSet's Changed.
type Given func(flag string) bool

// Resolve is the one place a run's settings are decided, for `hostprep
// probe mqtt` and `hostprep ready` alike: built-in defaults (Defaults),
// then the profile's probe.mqtt section (p; nil for none, see
// ConfigFromProfile), then each setting given explicitly (given) taken
// from explicit. A Config field tagged `flag:"name"` is a setting; one
// without the tag (Password, Progress, Workers, Procs, NoFileLimit...) is
// not layered and is always taken from explicit, which therefore starts
// from Defaults(). The thresholds are layered one by one: max-loss,
// max-connect-fail-rate, connect-p95, ack-p95, e2e-p99. Nothing is
// validated here (Validate).
func Resolve(p *profiles.MQTTProbe, explicit Config, given Given) Config {
	base := ConfigFromProfile(p)
	c := explicit // fields that are not settings (and test hooks) as given
	cv, bv := reflect.ValueOf(&c).Elem(), reflect.ValueOf(base)
	t := cv.Type()
	for i := 0; i < t.NumField(); i++ {
		name, tagged := t.Field(i).Tag.Lookup("flag")
		switch {
		case !tagged:
		case name == "thresholds":
			c.Thresholds = base.Thresholds
			resolveThresholds(&c.Thresholds, explicit.Thresholds, given)
		case !given(name):
			cv.Field(i).Set(bv.Field(i))
		}
	}
	return c
}

// resolveThresholds takes each threshold given explicitly from th.
func resolveThresholds(dst *profiles.MQTTThresholds, th profiles.MQTTThresholds, given Given) {
	if given("max-loss") {
		dst.Loss = th.Loss
	}
	if given("max-connect-fail-rate") {
		dst.ConnectFailRate = th.ConnectFailRate
	}
	if given("connect-p95") {
		dst.ConnectP95 = th.ConnectP95
	}
	if given("ack-p95") {
		dst.AckP95 = th.AckP95
	}
	if given("e2e-p99") {
		dst.E2EP99 = th.E2EP99
	}
}

// Settings are the names of every layered setting (the `flag` tags of
// Config and the threshold flags), for a command to check it offers each
// one as a flag.
func Settings() []string {
	var out []string
	t := reflect.TypeOf(Config{})
	for i := 0; i < t.NumField(); i++ {
		if name, ok := t.Field(i).Tag.Lookup("flag"); ok && name != "thresholds" {
			out = append(out, name)
		}
	}
	return append(out, "max-loss", "max-connect-fail-rate", "connect-p95", "ack-p95", "e2e-p99")
}
