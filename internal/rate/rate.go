// Package rate reads the rates hostprep takes as flags (--conn-rate,
// --rate) and profile values (conn_rate): a number per second, written
// "1000", "1000/s" or "60000/m" (per minute).
package rate

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// PerSecond is a rate in events per second (connections/s,
// operations/s). Its zero value is 0/s. It is a pflag.Value (Set,
// String, Type) and a yaml.v3 Unmarshaler, so flags and profiles accept
// the same spellings; it marshals as a plain number of events/s.
type PerSecond float64

// Want is what a rate looks like, for error messages.
const Want = "a rate >= 0 such as 1000, 1000/s or 60000/m (per minute)"

// Max is the highest rate Parse accepts, events/s: 10,000,000/s, far
// above what one host opens (a few hundred thousand connections/s) or
// sends, and small enough that every count derived from it (a backlog of
// 2 x rate, rate x 60 s of TIME_WAIT) fits an int64 without overflow.
const Max = 10_000_000

// Parse reads "N", "N/s" or "N/m" (N a decimal number >= 0; "/m" is per
// minute and is divided by 60; spaces around the parts are allowed) and
// returns the rate per second, unrounded (1/m is 0.0166.../s, 0.5/s
// stays 0.5). Anything else — a negative, NaN or infinite N, a rate above
// Max, another unit — is an error naming the value and the rule.
func Parse(s string) (PerSecond, error) { return parse(s, Want) }

// WantPositive is what a rate that must be above 0 looks like (see
// Positive).
const WantPositive = "a rate > 0 such as 1000, 1000/s or 60000/m (per minute)"

// Positive is a PerSecond flag that takes only rates above 0 (a number
// of new connections a host must accept, whose default the flag left out
// gives): a text that is not a rate and 0 are refused with the same rule,
// WantPositive.
type Positive struct{ PerSecond }

// Set implements pflag.Value.
func (r *Positive) Set(s string) error {
	v, err := parse(s, WantPositive)
	if err == nil && v <= 0 {
		err = fmt.Errorf("%q is not %s", s, WantPositive)
	}
	if err != nil {
		return err
	}
	r.PerSecond = v
	return nil
}

// parse is Parse, naming want as what a rate looks like.
func parse(s, want string) (PerSecond, error) {
	num, unit, per := strings.Cut(strings.TrimSpace(s), "/")
	div := 1.0
	if per {
		switch strings.TrimSpace(unit) {
		case "s":
		case "m":
			div = 60
		default:
			return 0, fmt.Errorf("%q: unit %q is not s or m; want %s", s, strings.TrimSpace(unit), want)
		}
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%q is not %s", s, want)
	}
	if f/div > Max {
		return 0, fmt.Errorf("%q is above the limit of %d/s (10 million events per second; no host opens or sends that many); want %s", s, Max, want)
	}
	return PerSecond(f / div), nil
}

// Set implements pflag.Value.
func (r *PerSecond) Set(s string) error {
	v, err := Parse(s)
	if err != nil {
		return err
	}
	*r = v
	return nil
}

// String implements pflag.Value: the rate per second as a plain number.
func (r *PerSecond) String() string {
	if r == nil {
		return "0"
	}
	return strconv.FormatFloat(float64(*r), 'f', -1, 64)
}

// Type implements pflag.Value; it names the value in --help.
func (r *PerSecond) Type() string { return "rate" }

// UnmarshalYAML reads a scalar with Parse: 1000, 2.5, "1000/s", 60000/m.
func (r *PerSecond) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("want %s", Want)
	}
	return r.Set(n.Value)
}

// MarshalYAML writes the rate per second as a plain number.
func (r PerSecond) MarshalYAML() (any, error) { return float64(r), nil }

// Ceil is the rate rounded up to whole events per second, for consumers
// that count whole connections/s (preflight's accept-queue sizing: a
// rate rounded down would under-size it). A rate above Max (only built
// in code: Parse refuses it) gives Max, never an overflowed int.
func (r PerSecond) Ceil() int { return int(math.Ceil(math.Min(float64(r), Max))) }

// Text is the rate as a person reads it, with its unit: "1000/s",
// "0.5/s", and a rate below 1/s per minute as well: "1/m (0.017/s)".
func (r PerSecond) Text() string {
	f := float64(r)
	if f > 0 && f < 1 {
		return strconv.FormatFloat(f*60, 'f', -1, 64) + "/m (" + strconv.FormatFloat(f, 'f', 3, 64) + "/s)"
	}
	return strconv.FormatFloat(f, 'f', -1, 64) + "/s"
}

// Whole is the rate as whole events per second, for a consumer that
// counts in whole events/s (preflight sizes queues in connections/s). A
// rate with a fraction (1/m, 0.5/s) is an error showing it with Text and
// the fix, never silently rounded.
func (r PerSecond) Whole() (int, error) {
	f := float64(r)
	if f != math.Trunc(f) {
		lo := max(math.Floor(f), 1)
		return 0, fmt.Errorf("%s is not a whole number of events per second; want a whole rate such as %g/s or %g/s", r.Text(), lo, lo+1)
	}
	return int(math.Min(f, Max)), nil
}
