package tune

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hostprep/hostprep/hostconf"
	"github.com/hostprep/hostprep/internal/shellquote"
	"github.com/hostprep/hostprep/tune/journal"
)

// The verify-at-boot layer (tune apply --verify-at-boot): hostprep's own
// hostprep-verify.service, a oneshot that runs `hostprep tune verify
// --textfile DIR` once the host is up (after multi-user.target and the
// units of the writers of kernel values in hostconf.Writers), its timer (a minute after boot, then every
// period, for writers that act late), and the drop-in of timers.target
// that starts the timer at every boot (a regular file: the file layer
// writes and rolls back regular files, never links). All three are owned
// files (ownedfile.go): journaled, and removed by rollback. The choice
// is persisted (journal.Persisted.VerifyAtBoot), so later applies keep
// the units. Each run's results: verify_textfile.go.

// layerVerifyUnit names the verify-at-boot layer's files at apply time.
const layerVerifyUnit = "verify-at-boot"

// Paths of the verify-at-boot units, relative to the root.
const (
	VerifyService = "/etc/systemd/system/hostprep-verify.service"
	VerifyTimer   = "/etc/systemd/system/hostprep-verify.timer"
	verifyWants   = "/etc/systemd/system/timers.target.d/60-hostprep-verify.conf"
)

// Defaults of tune apply --verify-at-boot.
const (
	// DefaultTextfileDir is node_exporter's textfile directory on Debian
	// (prometheus-node-exporter's --collector.textfile.directory).
	DefaultTextfileDir = "/var/lib/prometheus/node-exporter"
	// DefaultVerifyEvery is the timer's period.
	DefaultVerifyEvery = "1h"
	// DefaultBin is where install.sh puts hostprep, for an image.
	DefaultBin = "/usr/local/bin/hostprep"
)

// verifyAfter are the units hostprep-verify.service runs after:
// multi-user.target, then the unit of every writer of kernel values
// hostconf.Writers knows (systemd-sysctl.service; procps.service, `sysctl
// --system` on Debian without systemd-sysctl; ufw.service, which runs
// `sysctl -p $IPT_SYSCTL`; tuned.service, which applies its profile's
// [sysctl]; rc-local.service), in the entries' order, so a new writer
// entry with a Unit orders the check after itself. After= on a unit that
// is not installed is ignored by systemd.
func verifyAfter() []string {
	after := []string{"multi-user.target"}
	for _, w := range hostconf.Writers {
		if w.Unit != "" && !slices.Contains(after, w.Unit) {
			after = append(after, w.Unit)
		}
	}
	return after
}

// VerifyCommand is the command line the unit runs (and the cron line
// repeats): `BIN tune verify --textfile DIR`, with `--state FILE` when
// the journal is not at journal.DefaultPath (state, as the booted host
// names it: apply was given --state), so the check reads the journal
// apply wrote.
func VerifyCommand(v journal.VerifyUnit, state string) string {
	cmd := shellquote.Quote(v.Bin) + " tune verify --textfile " + shellquote.Quote(v.TextfileDir)
	if state != "" && state != journal.DefaultPath {
		cmd += " --state " + shellquote.Quote(state)
	}
	return cmd
}

// verifyUnitWants plans the unit, its timer and the timers.target
// drop-in when per asks for them. Where systemd drop-ins are not written
// (systemdOK false: why says so), nothing is written and a note gives the
// cron lines that do the same; where systemd is not PID 1 now (a
// container, a chroot) the units are written, for a boot under systemd,
// and the note gives the cron lines as well.
func (pl *Plan) verifyUnitWants(per journal.Persisted, systemdOK bool, why string) []fileWant {
	v := per.VerifyAtBoot
	if v == nil {
		return nil
	}
	state, inImage := pl.env.journalOnHost()
	if !inImage {
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("--state %s is outside the image %s: the booted image has no journal, so hostprep-verify.service (ConditionPathExists=%s) never runs there; leave --state out, or name a file under %s", pl.env.StateFile, pl.env.Root, state, pl.env.Root))
	}
	if dir := pl.env.path(v.TextfileDir); !isDir(dir) {
		pl.Warnings = append(pl.Warnings, fmt.Sprintf("the textfile directory %s does not exist: every run of the drift check fails (exit 2) until it does; install node_exporter (Debian: prometheus-node-exporter) or give --verify-textfile-dir an existing directory", dir))
	}
	command := VerifyCommand(*v, state)
	cron := fmt.Sprintf("@reboot sleep 60 && %s\n    %s %s", command, cronEvery(v.Every), command)
	if !systemdOK {
		pl.Skipped = append(pl.Skipped, Skip{File: pl.env.path(VerifyService), Layer: Persistent, Reason: "hostprep-verify.service not written: " + why})
		pl.Notes = append(pl.Notes, "PID 1 is not systemd, so hostprep-verify.service cannot run here; the same check from root's crontab (crontab -e):\n    "+cron)
		return nil
	}
	if !pl.env.ImageMode() && !pl.env.systemdRunning() {
		pl.Notes = append(pl.Notes, fmt.Sprintf("PID 1 is not systemd now (no %s): hostprep-verify.service runs when this host boots under systemd; until then, the same check from root's crontab:\n    %s", pl.env.systemdRunDir(), cron))
	}
	after := strings.Join(verifyAfter(), " ")
	const rollbackCmd = "`hostprep tune rollback`" // as the booted host runs it
	service := fmt.Sprintf(`# Written by hostprep (tune apply --verify-at-boot); %s removes it.
# After every boot (and every %s, through hostprep-verify.timer) it compares
# what hostprep applied with the live host, writes %s
# for node_exporter and logs one line per drifted key, naming the writer
# where hostprep knows it. It re-applies nothing. Drift fails the unit.
[Unit]
Description=hostprep: report drift of the applied tuning
After=%s
ConditionPathExists=%s

[Service]
Type=oneshot
SyslogIdentifier=hostprep-verify
ExecStart=%s
`, rollbackCmd, v.Every, path.Join(v.TextfileDir, TextfileName), after, state, command)
	timer := fmt.Sprintf(`# Written by hostprep (tune apply --verify-at-boot); %s removes it.
[Unit]
Description=hostprep: report drift of the applied tuning, after boot and every %s

[Timer]
OnBootSec=1min
OnUnitActiveSec=%s
RandomizedDelaySec=1min
`, rollbackCmd, v.Every, v.Every)
	wants := `# Written by hostprep (tune apply --verify-at-boot): starts hostprep-verify.timer at every boot.
[Unit]
Wants=hostprep-verify.timer
`
	note := "systemctl daemon-reload && systemctl start hostprep-verify.timer: starts the drift check now; it starts at every boot by itself"
	return []fileWant{
		{layer: layerVerifyUnit, path: VerifyService, data: []byte(service), systemd: true, why: "hostprep-verify.service (--verify-at-boot)"},
		{layer: layerVerifyUnit, path: VerifyTimer, data: []byte(timer), systemd: true, why: "its timer, every " + v.Every},
		{layer: layerVerifyUnit, path: verifyWants, data: []byte(wants), systemd: true, note: note, why: "starts the timer at every boot"},
	}
}

// journalOnHost is the journal's path as the booted host names it (the
// unit's condition: nothing applied, nothing to verify): in image mode a
// --state inside the image is named from the image's root. ok is false
// for a --state outside the image: the booted image has no journal, and
// the default path stands in.
func (e Env) journalOnHost() (p string, ok bool) {
	switch {
	case e.StateFile == "":
		return journal.DefaultPath, true
	case !e.ImageMode():
		return e.StateFile, true
	}
	abs, err := filepath.Abs(e.StateFile)
	if err != nil {
		return journal.DefaultPath, false
	}
	rel, err := filepath.Rel(e.Root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return journal.DefaultPath, false
	}
	return "/" + filepath.ToSlash(rel), true
}

// cronEvery is the crontab schedule closest to a systemd period: hourly
// for "1h" and anything it cannot read, daily for "1d" or "24h".
func cronEvery(every string) string {
	switch every {
	case "1d", "24h", "daily":
		return "@daily"
	case "30min", "30m":
		return "*/30 * * * *"
	case "15min", "15m":
		return "*/15 * * * *"
	}
	return "@hourly"
}
