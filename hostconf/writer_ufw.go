package hostconf

import (
	"fmt"
	"strings"
)

// ufwDefaults and ufwConf are the files ufw's init script (ufw-init,
// ufw-init-functions) sources before it starts the firewall.
const (
	ufwDefaults = "/etc/default/ufw"
	ufwConf     = "/etc/ufw/ufw.conf"
)

// ufwWriter is ufw (Debian, Ubuntu): ufw-init-functions sources
// /etc/default/ufw and /etc/ufw/ufw.conf and, when ENABLED=yes, runs
// `sysctl -e -q -p $IPT_SYSCTL` (Debian's default IPT_SYSCTL is
// /etc/ufw/sysctl.conf) after loading the rules, when the file is not
// empty. ufw.service runs it at boot (DefaultDependencies=no,
// Before=network.target; ufw 0.36.2 adds After=systemd-sysctl.service,
// older units have no order against it) and at every `ufw reload`,
// `ufw enable` and restart, so its values are the ones in force after
// any of those.
var ufwWriter = Writer{
	Name:    "ufw",
	Config:  "IPT_SYSCTL= in /etc/default/ufw names a sysctl file (Debian: /etc/ufw/sysctl.conf), applied with `sysctl -e -q -p` (procps lines, in order) when ENABLED=yes in /etc/ufw/ufw.conf",
	When:    "ufw.service runs it at boot, not ordered after systemd-sysctl unless its unit says After=systemd-sysctl.service, and again at every `ufw reload`, `ufw enable` and restart",
	Order:   Unordered,
	Offline: true,
	Unit:    "ufw.service",
	Writes:  ufwWrites,
}

func ufwWrites(h *Host) ([]Write, error) {
	if h.enabled("ufw.service") == "" {
		return nil, nil
	}
	conf, _, err := shellVars(h, ufwConf)
	if err != nil {
		return nil, err
	}
	if e := conf["ENABLED"]; e != "yes" && e != "YES" {
		return nil, nil // ufw-init skips the firewall, and the sysctl file with it
	}
	defs, lines, err := shellVars(h, ufwDefaults)
	if err != nil {
		return nil, err
	}
	file := defs["IPT_SYSCTL"]
	if file == "" {
		return nil, nil
	}
	if strings.Contains(file, "$") {
		return []Write{{Key: "*", File: ufwDefaults, Line: lines["IPT_SYSCTL"], Sure: true,
			Why: fmt.Sprintf("IPT_SYSCTL=%s names its file through a shell expansion, which is not known offline", file),
			Fix: fmt.Sprintf("name the file plainly in %s, or set IPT_SYSCTL= (empty) there so ufw applies no sysctl file", ufwDefaults)}}, nil
	}
	set := fmt.Sprintf("%s:%d", ufwDefaults, lines["IPT_SYSCTL"])
	return sysctlFileWrites(h, file, true, func(line int, text string) string {
		return fmt.Sprintf("hostprep never edits a file it does not own: change or comment out %s line %d (%q), or stop ufw applying that file with IPT_SYSCTL= in %s (set at %s); then `ufw reload`", file, line, text, ufwDefaults, set)
	})
}
