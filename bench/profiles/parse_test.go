// Package profilesbench measures how profile parsing scales with the
// number of sysctl keys.
//
//	go test -run '^$' -bench . ./bench/profiles
//
// It prints ns/key for 1000 and 10000 keys: about the same figure for
// both means linear. yaml.v3's duplicate-key check compares every pair of
// keys of a mapping decoded into a Go map; before profiles decoded sysctl
// entries itself, 1000 -> 10000 keys took ~22x as long (5k keys 0.17 s,
// 20k keys 1.44 s, 200k keys 60 s), i.e. ns/key grew with the key count.
package profilesbench

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hostprep/hostprep/profiles"
)

func sysctlDoc(n int) []byte {
	var b strings.Builder
	b.WriteString("sysctl:\n")
	for i := range n {
		fmt.Fprintf(&b, "  net.core.key_%d: \"%d\"\n", i, i)
	}
	return []byte(b.String())
}

func BenchmarkParseSysctlKeys(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			data := sysctlDoc(n)
			for b.Loop() {
				if _, err := profiles.Parse("keys.yaml", data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/key")
		})
	}
}
