// Package hostconf computes what a Linux host will have after its next boot,
// by reading its configuration files exactly as the programs that run at
// boot or login read them. It reads files only (under a root directory,
// "" or "/" for the live host) and never runs those programs or touches
// /proc.
//
// Three simulations, each with one entry point and a Read* form that
// keeps the parsed configuration for many lookups:
//
//   - sysctl: SysctlAtBoot(root, key) / ReadSysctl(root). systemd-sysctl's
//     rules (sysctl.d(5), systemd 252): *.conf in /etc/sysctl.d,
//     /run/sysctl.d, /usr/local/lib/sysctl.d, /usr/lib/sysctl.d and
//     /lib/sysctl.d (when it is a separate directory); a basename in an
//     earlier directory shadows it in later ones; a symlink to /dev/null masks
//     the name; all files are applied in
//     basename order; the last assignment of a key wins; an explicit key
//     beats any glob; "-key" without a value excludes the key from globs;
//     "a.b/c" and "a/b.c" spellings are normalized. On hosts without
//     systemd (no systemd-sysctl under ROOT/lib/systemd or
//     ROOT/usr/lib/systemd), procps `sysctl --system` (sysctl(8)): the same
//     file list, then /etc/sysctl.conf, each line written in order
//     (procps-ng 4.0 also expands globs and "-key" exclusions).
//   - limits (pam_limits, what a new login session gets): NofileAtBoot(root,
//     user) / NofileOverlay(root, user, files). /etc/security/limits.conf, then
//     /etc/security/limits.d/*.conf in C-locale order; per soft and hard
//     value, a line naming the user or a uid range holding their uid beats
//     @group (or an @gid range) beats "*" whatever the order, later lines
//     of the same kind win, "*" and @group lines do not apply to root, and
//     a two-field "DOMAIN -" line naming the user leaves every limit as
//     inherited. TestLimitsOracle holds the model to the real pam_limits
//     (Debian's 1.5.2). NofileForGroups takes the
//     user's groups from the caller (NSS, a recording), not ROOT/etc/group.
//   - systemd (what a service started after the next boot or
//     `systemctl daemon-reexec` gets): ManagerNofile(root) and
//     UnitNofile(root, unit). /etc/systemd/system.conf then
//     system.conf.d/*.conf drop-ins from /etc, /run, /usr/local/lib,
//     /usr/lib (shadowing and order as for sysctl.d), as
//     `systemd-analyze cat-config systemd/system.conf` merges them; a
//     unit's own file and its UNIT.d/*.conf drop-ins the same way, under
//     every name of the unit (alias links in the unit directories,
//     sshd.service -> ssh.service, read as systemd's unit name map reads
//     them; TestUnitAliasOracle); each
//     file parsed as config_parse does (BOM, backslash continuations,
//     CR and NUL line ends, ASCII white space; a line that is not UTF-8
//     or a bad section header ends the file, and a unit file with one is
//     ConfFile.Broken: the unit does not load) and values as
//     rlimit_parse reads them (TestUnitOracle runs the real
//     `systemd --test` as nobody for units; system.conf's
//     DefaultLimitNOFILE is not shown there and is checked with
//     `systemd-analyze cat-config`).
//     LastSetting reads another key of those files (a unit's User=).
//     An "infinity" there is what a service gets for it with
//     NofileSetting.Resolved: PID 1's hard limit at boot,
//     Pid1NofileHard(kernel command line): fs.nr_open before sysctl.d.
//
// After the sysctl.d loader, other programs write sysctl values: ufw's
// IPT_SYSCTL file, tuned's active profile and reapply_sysctl, /etc/rc.local,
// services whose ExecStart*= lines run sysctl or write /proc/sys. Each is
// one declarative entry of Writers (where its configuration lives and how
// it is parsed, when it runs, whether its effect is known offline, how to
// make it agree). ReadBoot(root, overlay) reads the loader and every
// writer; Boot.Key(key) is a key after boot, its Value() the value in
// force and who sets it. docs/boot.md describes the model and how to add
// a writer.
//
// Every value comes with the file and line that set it, so a caller can
// name the file that wins at boot and tell how to fix it.
//
// The simulations are tested against the real programs (systemd-sysctl,
// sysctl --system, runuser -l with pam_limits, systemd-analyze
// cat-config) in tune's sandbox tests.
package hostconf
