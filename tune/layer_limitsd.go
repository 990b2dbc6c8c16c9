package tune

import (
	"fmt"

	"github.com/hostprep/hostprep/tune/files"
	"github.com/hostprep/hostprep/tune/journal"
)

// The limits.d layer: /etc/security/limits.d/60-hostprep.conf with soft and
// hard nofile for each user (root listed, since "*" does not cover it),
// never below what new sessions get now (neverlower.go). Written and
// rolled back as an owned file (layer_files.go); verified at boot by
// bootLimitItems (bootcheck.go).

// limitsDWants plans the limits.d file.
func (pl *Plan) limitsDWants(per journal.Persisted) []fileWant {
	if per.Nofile == nil {
		return nil
	}
	return []fileWant{{path: files.LimitsConf,
		data: files.RenderLimits(pl.profiles, per.NofileUsers, per.Nofile.Soft, per.Nofile.Hard),
		note: fmt.Sprintf("new login sessions get nofile %d:%d (pam_limits); running shells and services keep their limit", per.Nofile.Soft, per.Nofile.Hard)}}
}
