package tune

import (
	"strconv"
	"strings"

	"github.com/hostprep/hostprep/internal/exitcode"
	"github.com/hostprep/hostprep/profiles"
)

// keyFileNr is the kernel's count of file handles: allocated, free (0
// since 2.6), fs.file-max.
const keyFileNr = "fs.file-nr"

// checkFileMaxInvariant refuses (exitcode.BadInput, exit 2) a profile
// whose fs.file-max is below the file handles allocated on this host now
// (the first field of fs.file-nr): the kernel would refuse every new file
// of a process without CAP_SYS_ADMIN at once (ENFILE, "VFS: file-max
// limit reached"), so logins, services and cron fail. Image mode has no
// live count, and a host whose count cannot be read is not judged.
func (pl *Plan) checkFileMaxInvariant(p *profiles.Profile, targets map[string]target) error {
	t, ok := targets[keyFileMax]
	if !ok || pl.env.ImageMode() {
		return nil
	}
	fileMax, _, err := pl.effective(keyFileMax, targets, 0)
	if err != nil {
		return err
	}
	nr, ok, err := pl.current(keyFileNr)
	if err != nil || !ok {
		return nil
	}
	f := strings.Fields(nr)
	if len(f) == 0 {
		return nil
	}
	allocated, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil || fileMax >= allocated {
		return nil
	}
	return exitcode.BadInputf("%ssysctl fs.file-max %s: below the %d file handles allocated on this host now (%s); the kernel would refuse every new file of a process without CAP_SYS_ADMIN (ENFILE, \"VFS: file-max limit reached\"), so logins, services and cron fail: set fs.file-max well above %d, or use `mode: at-least`, which keeps the host's %s",
		p.Where("sysctl", keyFileMax), t.value, allocated, keyFileNr, allocated, currentOr(pl, keyFileMax))
}

// currentOr is key's live value, or "value" when it cannot be read.
func currentOr(pl *Plan, key string) string {
	if v, ok, err := pl.current(key); err == nil && ok {
		return strings.TrimSpace(v)
	}
	return "value"
}
