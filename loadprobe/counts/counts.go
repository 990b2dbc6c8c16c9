// Package counts sums and prints the counters of a probe's run: a
// step's tallies over its workers (IoTDB), a fleet's over its shards
// (MQTT), and the counts by name (error class, status code, reason)
// they carry. It runs once per step or shard, never per operation.
package counts

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Number is a counter's type.
type Number interface{ ~int | ~int64 | ~float64 }

// Sum adds each pair's second counter into its first: Sum({&total.OK,
// &part.OK}, {&total.Errors, &part.Errors}).
func Sum[T Number](pairs ...[2]*T) {
	for _, p := range pairs {
		*p[0] += *p[1]
	}
}

// Add adds the counts by name of src into dst and returns dst, made when
// nil and src has any; a nil dst stays nil when src is empty (so JSON
// omits an empty map).
func Add(dst, src map[string]int64) map[string]int64 {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]int64, len(src))
	}
	for k, v := range src {
		dst[k] += v
	}
	return dst
}

// Each is the counts by name of m in name order, each written by item
// and joined with ", " ("closed_by_broker 48, reset 61"); "" when m is
// empty.
func Each(m map[string]int64, item func(name string, n int64) string) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, item(k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// List is Each with every item written by format, which takes the name
// and the count ("%s %d": "reset 61"; "%s x%d": "803 x2").
func List(m map[string]int64, format string) string {
	return Each(m, func(k string, n int64) string { return fmt.Sprintf(format, k, n) })
}
