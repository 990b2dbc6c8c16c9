package tune

import (
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/hostprep/hostprep/internal/exitcode"
)

// Capability bits (linux/capability.h).
const (
	capDACOverride = 1
	capSysAdmin    = 21
	capSysResource = 24
)

// effectiveCaps returns CapEff of this process (the bit mask of
// /proc/self/status, read with procfs).
func effectiveCaps() (uint64, error) {
	p, err := procfs.Self()
	if err != nil {
		return 0, err
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0, err
	}
	return st.CapEff, nil
}

func hasCap(caps uint64, bit uint) bool { return caps&(1<<bit) != 0 }

// checkPrivileges refuses (exit 3) unless the process is root or has
// CAP_SYS_ADMIN and CAP_DAC_OVERRIDE, which writing /proc/sys and /etc needs.
func checkPrivileges(env Env, verb string) error {
	if env.SkipPrivilegeCheck || env.ImageMode() {
		return nil
	}
	if os.Geteuid() == 0 {
		return nil
	}
	caps, err := effectiveCaps()
	if err == nil && hasCap(caps, capSysAdmin) && hasCap(caps, capDACOverride) {
		return nil
	}
	return exitcode.Environmentf("tune %s needs root (or CAP_SYS_ADMIN and CAP_DAC_OVERRIDE) to write /proc/sys and /etc; run it with sudo (`tune plan` shows the changes without root); nothing was changed", verb)
}

// readOnly reports whether dir is on a read-only mount (as /proc/sys is in
// a container).
func readOnly(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	return st.Flags&unix.ST_RDONLY != 0
}

// containerError explains a read-only /proc/sys: each key's route
// (containerAdvice: docker, Kubernetes safe or unsafe, the node).
func containerError(pl *Plan) error {
	env, steps := pl.env, pl.runtime
	for _, s := range pl.Skipped { // global keys a namespace hides or shows read-only: never dropped
		if s.Key != "" && s.Layer == Runtime && strings.Contains(s.Reason, "network namespace") {
			steps = append(steps, keyStep{key: s.Key})
		}
	}
	msg := fmt.Sprintf("tune apply: %s is read-only, so this looks like a container; nothing was changed.", env.procSys())
	msg += containerAdvice(env, steps)
	msg += " Use --root DIR to write only the persistent files."
	return exitcode.Environmentf("%s", msg)
}
