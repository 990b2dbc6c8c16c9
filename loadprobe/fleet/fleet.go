// Package fleet is what a probe needs to be one shard of a load spread
// over many load generators: which share of the clients is this host's
// (--shard K/N), when the common schedule starts (--start-at) and whether
// this host's clock can be trusted to start it (adjtimex).
//
// Shards interleave: client g of the fleet belongs to shard g mod N + 1,
// so N shards that each follow the fleet's schedule (client g connects at
// g/rate) together produce exactly the load one host would, and each
// shard connects at rate/N.
package fleet

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/internal/plural"
)

// Shard is shard K of N (1 <= K <= N). The zero Shard means "not
// sharded": the whole load on this host.
type Shard struct {
	K int `json:"k"`
	N int `json:"n"`
}

// On reports whether s is a real shard (N > 0).
func (s Shard) On() bool { return s.N > 0 }

// String is "K/N", or "" when not sharded.
func (s Shard) String() string {
	if !s.On() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}

// ParseShard reads "K/N" (1 <= K <= N <= 10000); "" is the zero Shard.
// Errors are exitcode.BadInput naming --shard.
func ParseShard(v string) (Shard, error) {
	if v == "" {
		return Shard{}, nil
	}
	a, b, ok := strings.Cut(v, "/")
	k, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || n > 10000 || k < 1 || k > n {
		return Shard{}, exitcode.BadInputf("--shard %q: want K/N with 1 <= K <= N <= 10000, e.g. 2/5 for the second of five load generators", v)
	}
	return Shard{K: k, N: n}, nil
}

// Count is how many of total fleet clients are this shard's: those g
// with g mod N = K-1. Not sharded: total.
func (s Shard) Count(total int) int {
	if !s.On() {
		return total
	}
	if total < s.K {
		return 0
	}
	return (total-s.K)/s.N + 1
}

// Global is the fleet-wide number of this shard's j-th client
// (0-based): K-1 + j*N. Not sharded: j.
func (s Shard) Global(j int) int {
	if !s.On() {
		return j
	}
	return s.K - 1 + j*s.N
}

// ParseStart reads --start-at: an RFC 3339 time ("2026-11-30T12:00:00Z"),
// a duration after one ("2026-11-30T12:00:00Z+30s": the control node
// hands out one reference time and every shard adds the same offset), or
// a duration after now ("+30s", for one host). "" is the zero time (start
// at once). Errors are exitcode.BadInput naming --start-at.
func ParseStart(v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	bad := func(why string) error {
		return exitcode.BadInputf("--start-at %q: %s; want an RFC 3339 time (2026-11-30T12:00:00Z), a time plus an offset (2026-11-30T12:00:00Z+30s) or +30s from now", v, why)
	}
	base, off := v, ""
	if i := strings.LastIndex(v, "+"); i >= 0 && !tzSuffix.MatchString(v[i:]) {
		base, off = v[:i], v[i+1:]
	}
	t := now
	if base != "" {
		var err error
		if t, err = time.Parse(time.RFC3339Nano, base); err != nil {
			return time.Time{}, bad("not an RFC 3339 time")
		}
	}
	if off != "" {
		d, err := time.ParseDuration(off)
		if err != nil || d < 0 {
			return time.Time{}, bad(fmt.Sprintf("offset %q is not a duration such as 30s", off))
		}
		t = t.Add(d)
	} else if base == "" {
		return time.Time{}, bad("empty")
	}
	return t, nil
}

// tzSuffix matches a numeric time zone ("+02:00") so it is not read as
// an offset.
var tzSuffix = regexp.MustCompile(`^\+\d\d:\d\d$`)

// MinLead is how far ahead of now a start time must be when the probe
// starts: time to connect its subscribers and calibrate (about 0.5 s)
// before the schedule begins.
const MinLead = time.Second

// roughAge is d as a person reads an age: to the millisecond under a
// minute, then whole minutes, hours (under 2 days), days (under a year),
// and whole years (rounded down: 6.9 years is "6 years").
func roughAge(d time.Duration) string {
	const day, year = 24 * time.Hour, 8766 * time.Hour // 365.25 days
	switch {
	case d < time.Minute:
		return d.Round(time.Millisecond).String()
	case d < time.Hour:
		return plural.N(int64(d.Round(time.Minute)/time.Minute), "minute")
	case d < 2*day:
		return plural.N(int64(d.Round(time.Hour)/time.Hour), "hour")
	case d < year:
		return plural.N(int64(d.Round(day)/day), "day")
	}
	return plural.N(int64(d/year), "year")
}

// CheckStart refuses a start time already past or nearer than MinLead,
// before any connection (exitcode.BadInput naming --start-at, the time
// and how far off it is). The zero time passes.
func CheckStart(start, now time.Time) error {
	if start.IsZero() {
		return nil
	}
	if d := start.Sub(now); d < MinLead {
		what := "is " + roughAge(-d) + " in the past"
		if d >= 0 {
			what = fmt.Sprintf("is only %v ahead", d.Round(time.Millisecond))
		}
		return exitcode.BadInputf("--start-at %s %s: the probe needs %v to connect its subscribers and calibrate before the schedule starts; hand out a start time at least a few seconds ahead (e.g. +30s)",
			start.UTC().Format(time.RFC3339Nano), what, MinLead)
	}
	return nil
}
