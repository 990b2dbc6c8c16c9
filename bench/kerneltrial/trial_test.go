// Package kerneltrialbench measures what the kernel trial of a built-in
// profile costs tune plan: every per-namespace value of the profile
// written in a scratch network namespace, nearest values searched where
// refused. Run as root:
//
//	go test -run '^$' -bench . ./bench/kerneltrial
//
// It prints ms/trial for each built-in; the target is under 50 ms.
package kerneltrialbench

import (
	"errors"
	"os"
	"testing"

	"github.com/hostprep/hostprep/internal/kerneltrial"
	"github.com/hostprep/hostprep/profiles"
)

func BenchmarkTrialBuiltin(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the trial needs root (CAP_SYS_ADMIN)")
	}
	for _, name := range profiles.BuiltinNames() {
		p, err := profiles.Load(name, nil)
		if err != nil {
			b.Fatal(err)
		}
		var writes []kerneltrial.Write
		for k, s := range p.Sysctl {
			writes = append(writes, kerneltrial.Write{Key: k, Value: s.Value})
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := kerneltrial.Try(writes); errors.Is(err, kerneltrial.ErrUnavailable) {
					b.Skip(err)
				} else if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/trial")
		})
	}
}
